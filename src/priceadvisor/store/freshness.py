"""How fresh a current offer's price is, by its provider's fetch interval.

A price is as old as the last fetch that saw it (`offers.last_seen`). Per provider:
  fresh    — seen within STALE_AFTER_INTERVALS x its fetch interval;
  stale    — older than that (fetches failing or not running): shown, marked, and left out of
             advice and alerts unless asked for;
  excluded — older than EXCLUDED_AFTER_HOURS (a week): left out of every recommendation even
             when stale offers are asked for; still in the `offers` view and `prices`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import duckdb

from priceadvisor.config import Settings
from priceadvisor.manifest import manifest, manifest_ids
from priceadvisor.store.literals import inline

STALE_AFTER_INTERVALS = 2
EXCLUDED_AFTER_HOURS = 7 * 24

Freshness = Literal["fresh", "stale", "excluded"]


def default_intervals() -> dict[str, float]:
    """Each provider's default fetch interval in seconds, from its manifest."""
    return {p: manifest(p).interval for p in manifest_ids()}


def configured_intervals(settings: Settings) -> dict[str, float]:
    """Each provider's fetch interval in seconds as configured (else its manifest's)."""
    return {p: settings.provider(p).interval or manifest(p).interval for p in manifest_ids()}


def tier(age_s: float, interval_s: float) -> Freshness:
    if age_s > EXCLUDED_AFTER_HOURS * 3600:
        return "excluded"
    return "stale" if age_s > STALE_AFTER_INTERVALS * interval_s else "fresh"


def load_intervals(
    con: duckdb.DuckDBPyConnection, intervals: Mapping[str, float] | None = None
) -> None:
    """The temp table _fetch_intervals(provider, interval_s) that FRESHNESS_SQL reads;
    `intervals` overrides the manifests' defaults (a provider's configured interval)."""
    merged = default_intervals() | dict(intervals or {})
    # Two text literals, not one parameter per row: DuckDB probes for pandas on every Python
    # value it converts (store.literals), which cost ~20 ms for forty rows (executemany) where
    # pandas is not installed. Provider ids are [a-z0-9_-] and never hold a newline.
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _fetch_intervals (provider VARCHAR, interval_s DOUBLE)"
    )
    if merged:
        columns = {
            "providers": "\n".join(merged),
            "intervals": "\n".join(repr(float(v)) for v in merged.values()),
        }
        statement = (
            "INSERT INTO _fetch_intervals SELECT unnest(string_split($providers, chr(10))),"
            " unnest(string_split($intervals, chr(10)))::DOUBLE"
        )
        con.execute(inline(statement, columns))


def freshness_sql(last_seen: str, interval_s: str, now: str) -> str:
    """The tier as a SQL expression (the same rule as `tier`); an unknown interval is read as
    an hour."""
    age = f"epoch({now} - {last_seen})"
    return (
        f"CASE WHEN {age} > {EXCLUDED_AFTER_HOURS * 3600} THEN 'excluded' "
        f"WHEN {age} > {STALE_AFTER_INTERVALS} * coalesce({interval_s}, 3600) THEN 'stale' "
        "ELSE 'fresh' END"
    )
