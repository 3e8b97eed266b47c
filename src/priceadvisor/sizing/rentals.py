"""The rentals `tco` compares owning one GPU with: the cheapest current on-demand offer of the
GPU model, its cheapest commitment over the years compared, and its cheapest spot offer with the
restart overhead.

Offers are taken as `advise` takes them: published (a derived price is never recommended), not
flagged by the offer guard unless asked, and fresh (store.freshness: a stale price only when
asked for, one older than a week never). A spot offer's interruption rate is the advisor's: AWS's
published one, else one measured from the history (store.interruption), else the assumed
default; each offer says which. Equal prices are ordered by the offer's whole key, so the offer
named is the same on every run.

For a workload (`tco --workload`) only the offers its constraints allow are rented, by the rules
`advise` ranks with (sizing.eligibility): where it may run (providers, countries, continents,
eu_only), at most `max_gpus` per offer, only what can be rented now with `require_available`, no
marketplace host with `sla` unless `sla_allow` lets them in. Its constraints on the kind of
pricing (spot_ok, pricing, sla's spot) do not apply: each kind is compared by name, and a
commitment is never one `advise` ranks.

Where no offer of a kind is compared, `gap` says why: none is stored at all, the newest stored
is stale (compared with --include-stale), or the newest is older than a week (never compared).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np

from priceadvisor.config import WorkloadProfile
from priceadvisor.sizing import commitment as committed
from priceadvisor.sizing import eligibility, tco
from priceadvisor.sizing.advisor import DEFAULT_INTERRUPTION_RATE
from priceadvisor.sizing.topk import Bools
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

# What a workload's constraints read of an offer beyond its provider, pricing and GPU count.
_CLASS_COLUMNS = "country, continent, is_eu, no_sla, rentable"
# Every candidate of the GPU model, of the three kinds, numbered cheapest first within its kind
# (with the offer's class columns, which a workload's constraints read: sizing.eligibility).
_CANDIDATES_SQL = f"""
CREATE OR REPLACE TEMP TABLE _rental_offers AS
SELECT *, row_number() OVER (ORDER BY pricing, list_usd_per_gpu_hour * overhead, term_months,
        {reads.OFFER_KEY}) - 1 AS rental_id
FROM (
    SELECT {COLUMNS}, zone, {_CLASS_COLUMNS},
        CAST(CASE WHEN pricing = 'spot' THEN {tco.spot_overhead_sql("interruption_rate")}
            ELSE 1.0 END AS DOUBLE) AS overhead
    FROM (
        SELECT o.* REPLACE ({interruption.rate_sql("o", "m", DEFAULT_INTERRUPTION_RATE)}
                AS interruption_rate),
            {interruption.source_sql("o", "m")} AS interruption_source,
            {freshness.freshness_sql("o.last_seen", "f.interval_s", "$now")} AS freshness,
            {eligibility.offer_class_sql("o")}
        FROM offers AS o
        LEFT JOIN _measured_interruption AS m
            ON m.provider = o.provider AND m.gpu_model = o.gpu_model AND {interruption.USABLE}
        LEFT JOIN _fetch_intervals AS f ON f.provider = o.provider
        WHERE o.gpu_model = $model AND o.pricing IN ('on_demand', 'reserved', 'spot')
    )
    WHERE price_gpu_hour_usd IS NOT NULL AND gpu_count > 0 AND price_origin = 'published'
      AND (flag IS NULL OR $include_flagged)
      AND (freshness = 'fresh' OR (freshness = 'stale' AND $include_stale))
)
"""
# Of one kind, the first `$limit` of the candidates allowed (`$allowed`: a flag per number).
_CHOSEN_SQL = f"""
SELECT * EXCLUDE (zone, {_CLASS_COLUMNS}, rental_id)
FROM _rental_offers
WHERE pricing = $pricing AND $allowed[rental_id + 1]
ORDER BY rental_id
LIMIT $limit
"""


@dataclass(frozen=True, slots=True)
class Rentals:
    """Each rental compared (tco.AGAINST): its cheapest offer, or None; `excluded`: the kinds
    with offers of the GPU model of which the workload's constraints allow none."""

    offers: dict[str, dict[str, Any] | None]
    excluded: frozenset[str] = frozenset()


def cheapest(
    con: duckdb.DuckDBPyConnection,
    model: str,
    years: float,
    *,
    include_stale: bool = False,
    include_flagged: bool = False,
    intervals: Mapping[str, float] | None = None,
    now: dt.datetime,
    profile: WorkloadProfile | None = None,
) -> Rentals:
    """Each rental compared (tco.AGAINST): its cheapest offer of `model`, or None. On-demand and
    spot: the lowest price per GPU-hour (spot's with its overhead); a commitment: the lowest
    cost over `years` (tco.Commitment). `intervals`: fetch intervals as configured. With a
    workload's `profile`, only offers its constraints allow (eligibility.offers_allowed, as
    `advise` applies them, every kind of pricing allowed)."""
    interruption.measure(con, now)
    freshness.load_intervals(con, intervals)
    values: dict[str, Value] = {
        "model": model,
        "now": now,
        "include_stale": include_stale,
        "include_flagged": include_flagged,
    }
    try:
        con.execute(inline(_CANDIDATES_SQL, values))
        candidates = eligibility.read_classes(con, "_rental_offers", "rental_id")
        allowed = _allowed(candidates, profile).tolist()
        found = {kind: _offers(con, allowed, kind) for kind in tco.AGAINST}
    finally:
        con.execute("DROP TABLE IF EXISTS _rental_offers")
    offers = {
        "on_demand": next(iter(found["on_demand"]), None),
        "commitment": _cheapest_held(found["commitment"], years),
        "spot": next(iter(found["spot"]), None),
    }
    return Rentals(offers, _excluded(candidates, offers))


def _allowed(candidates: eligibility.Classes, profile: WorkloadProfile | None) -> Bools:
    """Which candidates the workload may rent (every one without a workload)."""
    if profile is None:
        return np.ones(len(candidates.provider), dtype=np.bool_)
    return eligibility.offers_allowed(candidates, profile)


def _excluded(
    candidates: eligibility.Classes, offers: Mapping[str, dict[str, Any] | None]
) -> frozenset[str]:
    """The kinds with no offer chosen though the GPU model has some: constraints removed them."""
    stored = set(candidates.pricing.tolist())
    return frozenset(k for k, offer in offers.items() if offer is None and _PRICING[k] in stored)


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


def _offers(con: duckdb.DuckDBPyConnection, allowed: list[bool], kind: str) -> list[dict[str, Any]]:
    """The first candidates of a kind among those allowed (a flag per number), cheapest first."""
    limit = MAX_COMMITMENTS if kind == "commitment" else 1
    values = {"pricing": _PRICING[kind], "limit": limit, "allowed": allowed}
    cursor = con.execute(_CHOSEN_SQL, values)  # a parameter: `inline` takes no list of flags
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
