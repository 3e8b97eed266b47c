"""Per-provider integrity expectations, checked on every snapshot before it is merged.

A provider's manifest may state what a healthy snapshot of it contains (`[expect]`: at least
N offers, these GPU models, these regions, these pricing kinds; docs/offers-guard.md). A
snapshot that parses but breaks one is not trusted to be complete: the run ends `partial` with
the reason, offers seen are updated and none is closed (as store.drift does for a snapshot far
smaller than the last good one). Only the snapshot's valid offers count.
"""

from __future__ import annotations

import duckdb

from priceadvisor.manifest import Expectations

_PRESENT_SQL = """
SELECT count(*), list(DISTINCT gpu_model), list(DISTINCT region), list(DISTINCT pricing)
FROM _snap WHERE reject_reason IS NULL
"""


def broken_expectations(con: duckdb.DuckDBPyConnection, expect: Expectations) -> str | None:
    """Why the snapshot in `_snap` breaks `expect`, or None when it meets every expectation."""
    if expect == Expectations():
        return None
    row = con.execute(_PRESENT_SQL).fetchone()
    assert row is not None
    offers, gpus, regions, pricings = row
    broken = [f"only {offers} offers (expected at least {expect.min_offers})"]
    broken = broken if offers < expect.min_offers else []
    for what, wanted, present in (
        ("GPU", expect.gpus, gpus),
        ("region", expect.regions, regions),
        ("pricing", expect.pricing, pricings),
    ):
        missing = sorted(set(wanted) - set(present or []))
        if missing:
            broken.append(f"no {what} {', '.join(missing)}")
    if not broken:
        return None
    return (
        "snapshot breaks the manifest's expectations: " + "; ".join(broken) + ", no offers closed"
    )
