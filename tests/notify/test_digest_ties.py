"""Ties in the digest are broken by the whole offer key, so the same data gives the same digest:
an Oracle on-demand price and the spot price derived from it move by the same share."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from priceadvisor.config import Settings
from priceadvisor.notify import digest
from priceadvisor.records import RawQuote, utcnow
from priceadvisor.store import connections
from tests.conftest import ingest_quotes
from tests.notify.test_zone_keys import backdate

DERIVED = "OCI preemptible = 50 % of on-demand"


def oracle(on_demand: float) -> list[RawQuote]:
    shapes = [(f"BM.GPU.H100.{n}", float(n)) for n in (1, 2, 4, 8)]
    return [
        RawQuote(
            region="global",
            instance_type=shape,
            pricing=pricing,
            price=on_demand * count * share,
            gpu_name_raw="H100 80GB",
            gpu_count=count,
            price_rule=rule,
        )
        for shape, count in shapes
        for pricing, share, rule in (("on_demand", 1.0, None), ("spot", 0.5, DERIVED))
    ]


def test_equal_moves_are_ordered_by_the_whole_offer_key(db_path: Path) -> None:
    ingest_quotes(db_path, "oracle", oracle(10.0))
    backdate(db_path, 10)
    ingest_quotes(db_path, "oracle", oracle(9.0))  # every price -10 %
    with connections.reader(db_path) as con:
        built = digest.build(con, Settings(), utcnow())
    shown = [(r["instance_type"], r["pricing"]) for r in built.movers]
    assert len({r["change"] for r in built.movers}) == 1  # a tie all through
    assert shown == sorted(shown)
    assert built.movers[0]["price_origin"] == "published"
    # the subject names a mover when no GPU's cheapest price moved; a derived one says so
    derived = [r for r in built.movers if r["price_origin"] == "derived"]
    only_derived = dataclasses.replace(built, gpu_prices=[], movers=derived)
    assert digest.headline(only_derived) == (
        "H100-SXM-80GB at oracle global -10.0% to $4.50/h (derived)"
    )
