"""If you commit for N months: the cheapest commitment (pricing `reserved`) for the GPU model of
a workload's best offer, priced at the workload's size. Shown beside the ranking, never in it: a
commitment is paid for its whole term whether the GPUs run or not, so it is no on-demand offer
and is never compared as one.

At the workload's size: as many of the commitment's nodes as hold the best offer's GPUs (times
its serving replicas), for a month (730 hours) and for the whole term; a training run is paid
for at least the term, or for its own hours when it runs longer. "Cheapest" is the lowest bill
at that size: per month when serving, per run when training (a 36-month term is rarely the
cheapest way to pay for a 16-hour run, however low its hourly price).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import duckdb

from priceadvisor.config import WorkloadProfile
from priceadvisor.records import utcnow
from priceadvisor.store import freshness

HOURS_PER_MONTH = 730  # 8,760 / 12, as every monthly figure in the store

# The workload's constraints on offers apply as `advise` applies them to its ranking (places,
# at most `max_gpus` per offer, `require_available`: only what the source says can be rented
# now), and so does freshness (a stale price only with --include-stale, one older than a week
# never: store.freshness); its pricing list (on_demand, spot) does not. Equal prices: the
# offer's whole key decides. Bounded: a GPU model has a few commitments per provider and term.
_WITHIN = f"""
FROM (
    SELECT o.*, {freshness.freshness_sql("o.last_seen", "f.interval_s", "$now")} AS freshness
    FROM offers AS o LEFT JOIN _fetch_intervals AS f ON f.provider = o.provider
    WHERE o.pricing = 'reserved' AND o.gpu_model = $model
)
WHERE gpu_count >= 1
  AND price_gpu_hour_usd IS NOT NULL AND flag IS NULL AND price_origin = 'published'
  AND (len($providers) = 0 OR list_contains($providers, provider))
  AND (len($countries) = 0 OR list_contains($countries, country))
  AND (len($continents) = 0 OR list_contains($continents, continent))
  AND (NOT $eu_only OR is_eu)
  AND ($max_gpus IS NULL OR gpu_count <= $max_gpus)
  AND (NOT $require_available OR coalesce(available, false))
"""
_CANDIDATES_SQL = f"""
SELECT provider, region, instance_type, gpu_model, gpu_count, term_months, price_hour_usd,
    price_gpu_hour_usd, upfront_usd, monthly_usd AS provider_monthly_usd, source_url
{_WITHIN}
  AND (freshness = 'fresh' OR (freshness = 'stale' AND $include_stale))
ORDER BY price_gpu_hour_usd, term_months, provider, region, zone, instance_type
LIMIT 500
"""
# Where none is: the newest commitment within the constraints, of any age.
_NEWEST_SQL = f"""
SELECT provider, CAST(epoch($now - last_seen) / 3600 AS DOUBLE) AS age_hours, freshness
{_WITHIN}
ORDER BY last_seen DESC, provider, region, zone, instance_type
LIMIT 1
"""

# Why no price of a kind is compared (JSON: `missing`), by the newest stored's freshness.
MISSING = {"stale": "stale", "excluded": "older_than_a_week"}


def candidates(
    con: duckdb.DuckDBPyConnection,
    profile: WorkloadProfile,
    model: str,
    include_stale: bool = False,
    intervals: Mapping[str, float] | None = None,
) -> list[dict[str, Any]]:
    """The commitments for `model` within the workload's constraints, cheapest per GPU-hour
    first; `intervals`: the providers' fetch intervals as configured (else their manifests')."""
    freshness.load_intervals(con, intervals)
    params = _constraints(profile, model) | {"include_stale": include_stale}
    cursor = con.execute(_CANDIDATES_SQL, params)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _constraints(profile: WorkloadProfile, model: str) -> dict[str, Any]:
    return {
        "now": utcnow(),
        "model": model,
        "providers": list(profile.providers),
        "countries": [c.upper() for c in profile.countries],
        "continents": list(profile.continents),
        "eu_only": profile.eu_only,
        "max_gpus": profile.max_gpus,
        "require_available": profile.require_available,
    }


def gap(
    con: duckdb.DuckDBPyConnection,
    profile: WorkloadProfile,
    model: str,
    intervals: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """Why `candidates` found no commitment for `model` (gap_of): the newest within the
    workload's constraints, of any age."""
    freshness.load_intervals(con, intervals)
    return gap_of(con.execute(_NEWEST_SQL, _constraints(profile, model)).fetchone())


def gap_of(newest: tuple[Any, ...] | None) -> dict[str, Any]:
    """`missing`: "none" (nothing stored), "stale" or "older_than_a_week" (the newest stored
    is), with that newest's provider and age in hours (`newest_stored`, None if none is).
    `newest`: its (provider, age in hours, freshness) row."""
    if newest is None:
        return {"missing": "none", "newest_stored": None}
    provider, age_hours, tier = newest
    stored = {"provider": provider, "age_hours": round(float(age_hours), 1)}
    return {"missing": MISSING.get(tier, "none"), "newest_stored": stored}


def term_usd(hourly: float, months: int, upfront: Any, monthly: Any) -> float:
    """What one term of a commitment costs (for what `hourly` prices): what the source says is
    paid for it (upfront plus monthly payments), never less than the effective hourly price
    over the term's hours. That price is the term's total over its hours, so the two agree
    within the source's rounding where both are stated (packet.ai's 2 x L40S: $1,142 a month
    against $1.56 x 730 = $1,138.80), and the hourly price covers a source that states only
    part of what is paid. The upfront payment is part of the hourly price, not added to it
    (Azure's upfront is the whole term's price, its hourly price that over 8,760 hours)."""
    stated = float(upfront or 0.0) + float(monthly or 0.0) * months
    return max(stated, hourly * HOURS_PER_MONTH * months)


def at_size(offer: Mapping[str, Any], best: Mapping[str, Any]) -> dict[str, Any]:
    """The commitment priced for the best offer's GPUs (and replicas) and the run's hours."""
    gpus = float(best["gpu_count"]) * float(best.get("replicas") or 1)
    nodes = math.ceil(gpus / float(offer["gpu_count"]) - 1e-9)
    hourly = nodes * float(offer["price_hour_usd"])
    months = int(offer["term_months"])
    upfront, per_month = offer.get("upfront_usd"), offer.get("provider_monthly_usd")
    term = nodes * term_usd(float(offer["price_hour_usd"]), months, upfront, per_month)
    monthly = term / months
    hours = best.get("hours")
    run = None if hours is None else max(term, hourly * float(hours))
    return dict(offer) | {
        "nodes": nodes,
        "usd_per_month": monthly,
        "term_usd": term,
        "run_usd": run,
    }


def cheapest_at_size(
    offers: list[dict[str, Any]], best: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The offer whose bill at the workload's size is lowest (ties: the one cheaper per
    GPU-hour, listed first): per run when training, per month when serving."""
    key = "usd_per_month" if best.get("hours") is None else "run_usd"
    priced = [at_size(offer, best) for offer in offers]
    return min(priced, key=lambda found: float(found[key]), default=None)


def for_workloads(
    con: duckdb.DuckDBPyConnection,
    profiles: list[WorkloadProfile],
    best_rows: Mapping[str, Mapping[str, Any]],
    include_stale: bool = False,
    intervals: Mapping[str, float] | None = None,
) -> dict[str, dict[str, Any] | None]:
    """Per workload (by name) with a best row: its commitment at its size, or None."""
    found: dict[str, dict[str, Any] | None] = {}
    for profile in profiles:
        best = best_rows.get(profile.name)
        if best is not None:
            model = str(best["gpu_model"])
            offers = candidates(con, profile, model, include_stale, intervals)
            found[profile.name] = cheapest_at_size(offers, best)
    return found


def gaps(
    con: duckdb.DuckDBPyConnection,
    profiles: list[WorkloadProfile],
    best_rows: Mapping[str, Mapping[str, Any]],
    found: Mapping[str, Mapping[str, Any] | None],
    intervals: Mapping[str, float] | None = None,
) -> dict[str, dict[str, Any]]:
    """Per workload with a best row and no commitment found: why (gap)."""
    return {
        p.name: gap(con, p, str(best_rows[p.name]["gpu_model"]), intervals)
        for p in profiles
        if p.name in best_rows and found.get(p.name) is None
    }
