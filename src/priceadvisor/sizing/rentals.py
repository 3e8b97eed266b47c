"""The rentals `tco` compares owning one GPU with: the cheapest current on-demand offer of the
GPU model, its cheapest commitment over the years compared, and its cheapest spot offer with the
restart overhead.

Offers are taken as `advise` takes them: published (a derived price is never recommended), not
flagged by the offer guard unless asked, and fresh (store.freshness: a stale price only when
asked for, one older than a week never). A spot offer's interruption rate is the advisor's: AWS's
published one, else one measured from the history (store.interruption), else the assumed
default; each offer says which. Equal prices are ordered by the offer's whole key, so the offer
named is the same on every run.

Where no offer of a kind is compared, `gap` says why: none is stored at all, the newest stored
is stale (compared with --include-stale), or the newest is older than a week (never compared).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

import duckdb

from priceadvisor.sizing import commitment as committed
from priceadvisor.sizing import tco
from priceadvisor.sizing.advisor import DEFAULT_INTERRUPTION_RATE
from priceadvisor.store import freshness, interruption, reads
from priceadvisor.store.literals import Value, inline

COLUMNS = (
    "provider, region, instance_type, gpu_model, gpu_count, pricing, term_months, "
    "price_gpu_hour_usd AS list_usd_per_gpu_hour, upfront_usd, monthly_usd, freshness, "
    "interruption_rate, interruption_source"
)
_PRICING = {"on_demand": "on_demand", "commitment": "reserved", "spot": "spot"}
# A GPU model has a few commitments per provider and term: all of them are priced over the years.
MAX_COMMITMENTS = 500

_OFFERS_SQL = f"""
SELECT {COLUMNS}, CAST(CASE WHEN pricing = 'spot' THEN {tco.spot_overhead_sql("interruption_rate")}
        ELSE 1.0 END AS DOUBLE) AS overhead
FROM (
    SELECT o.* REPLACE ({interruption.rate_sql("o", "m", DEFAULT_INTERRUPTION_RATE)}
            AS interruption_rate),
        {interruption.source_sql("o", "m")} AS interruption_source,
        {freshness.freshness_sql("o.last_seen", "f.interval_s", "$now")} AS freshness
    FROM offers AS o
    LEFT JOIN _measured_interruption AS m
        ON m.provider = o.provider AND m.gpu_model = o.gpu_model AND {interruption.USABLE}
    LEFT JOIN _fetch_intervals AS f ON f.provider = o.provider
    WHERE o.gpu_model = $model AND o.pricing = $pricing
)
WHERE price_gpu_hour_usd IS NOT NULL AND gpu_count > 0 AND price_origin = 'published'
  AND (flag IS NULL OR $include_flagged)
  AND (freshness = 'fresh' OR (freshness = 'stale' AND $include_stale))
ORDER BY price_gpu_hour_usd * overhead, term_months, {reads.OFFER_KEY}
LIMIT $limit
"""


def cheapest(
    con: duckdb.DuckDBPyConnection,
    model: str,
    years: float,
    *,
    include_stale: bool = False,
    include_flagged: bool = False,
    intervals: Mapping[str, float] | None = None,
    now: dt.datetime,
) -> dict[str, dict[str, Any] | None]:
    """Each rental compared (tco.AGAINST): its cheapest offer of `model`, or None. On-demand and
    spot: the lowest price per GPU-hour (spot's with its overhead); a commitment: the lowest
    cost over `years` (tco.Commitment). `intervals`: fetch intervals as configured."""
    interruption.measure(con, now)
    freshness.load_intervals(con, intervals)
    values: dict[str, Value] = {
        "model": model,
        "now": now,
        "include_stale": include_stale,
        "include_flagged": include_flagged,
    }
    found = {kind: _offers(con, values, kind) for kind in tco.AGAINST}
    return {
        "on_demand": next(iter(found["on_demand"]), None),
        "commitment": _cheapest_held(found["commitment"], years),
        "spot": next(iter(found["spot"]), None),
    }


# The newest offer of a kind that `cheapest` would compare but for its age (same filters, any
# freshness): what a missing rental is missing for.
_NEWEST_SQL = f"""
SELECT provider, CAST(epoch($now - last_seen) / 3600 AS DOUBLE) AS age_hours, freshness
FROM (
    SELECT o.*, {freshness.freshness_sql("o.last_seen", "f.interval_s", "$now")} AS freshness
    FROM offers AS o
    LEFT JOIN _fetch_intervals AS f ON f.provider = o.provider
    WHERE o.gpu_model = $model AND o.pricing = $pricing
)
WHERE price_gpu_hour_usd IS NOT NULL AND gpu_count > 0 AND price_origin = 'published'
  AND (flag IS NULL OR $include_flagged)
ORDER BY last_seen DESC, {reads.OFFER_KEY}
LIMIT 1
"""


def gap(
    con: duckdb.DuckDBPyConnection,
    model: str,
    kind: str,
    *,
    include_flagged: bool = False,
    intervals: Mapping[str, float] | None = None,
    now: dt.datetime,
) -> dict[str, Any]:
    """Why `cheapest` found no `kind` offer of `model` (sizing.commitment.gap_of: nothing
    stored, or the newest stored is stale or older than a week)."""
    freshness.load_intervals(con, intervals)
    values: dict[str, Value] = {
        "model": model,
        "now": now,
        "pricing": _PRICING[kind],
        "include_flagged": include_flagged,
    }
    return committed.gap_of(con.execute(inline(_NEWEST_SQL, values)).fetchone())


def _offers(
    con: duckdb.DuckDBPyConnection, values: dict[str, Value], kind: str
) -> list[dict[str, Any]]:
    limit = MAX_COMMITMENTS if kind == "commitment" else 1
    cursor = con.execute(inline(_OFFERS_SQL, values | {"pricing": _PRICING[kind], "limit": limit}))
    names = [d[0] for d in cursor.description]
    return [_priced(dict(zip(names, row, strict=True))) for row in cursor.fetchall()]


def _priced(offer: dict[str, Any]) -> dict[str, Any]:
    offer["usd_per_gpu_hour"] = offer["list_usd_per_gpu_hour"] * offer["overhead"]
    return offer


def held(offer: Mapping[str, Any]) -> tco.Commitment:
    """One GPU's share of a commitment offer: its node's term (sizing.commitment.term_usd, as
    `advise`'s "if you commit" prices it) over its GPUs."""
    months, gpus = int(offer["term_months"]), float(offer["gpu_count"])
    hourly = float(offer["list_usd_per_gpu_hour"])
    upfront, monthly = offer.get("upfront_usd"), offer.get("monthly_usd")
    return tco.Commitment(
        hourly, months, committed.term_usd(hourly * gpus, months, upfront, monthly) / gpus
    )


def _cheapest_held(offers: list[dict[str, Any]], years: float) -> dict[str, Any] | None:
    """The commitment that costs least held over `years` (ties: the cheaper per GPU-hour,
    listed first), with its term's cost per GPU."""
    terms = [(held(offer), offer) for offer in offers]
    cheapest = min(terms, key=lambda pair: pair[0].cost_usd(years), default=None)
    return None if cheapest is None else cheapest[1] | {"term_usd": cheapest[0].term_usd}
