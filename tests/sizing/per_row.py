"""`advise` defined row by row: every (workload, offer) checked, sized (memoised per workload,
GPU model and GPU count) and costed in Python, then sorted whole. The set-based advisor must
give the same rankings; bench/bench_advise.py times this loop as its baseline."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache, partial
from typing import Any, NamedTuple

import duckdb

from priceadvisor.config import WorkloadProfile
from priceadvisor.records import TRAINING_TASKS
from priceadvisor.sizing.advisor import (
    CHECKPOINT_OVERHEAD,
    DEFAULT_INTERRUPTION_RATE,
    LOST_WORK_SHARE,
    instances,
    size_offer,
)
from priceadvisor.sizing.effective import (
    HOURS_PER_MONTH,
    billed_hours,
    billing_row,
    hourly_rate,
    restart_overhead,
)
from priceadvisor.sizing.estimate import Estimate, Workload
from priceadvisor.sizing.workloads import to_workload


class Offer(NamedTuple):
    provider: str
    region: str
    zone: str | None
    instance_type: str
    pricing: str
    country: str | None
    continent: str | None
    is_eu: bool | None
    gpu_model: str | None
    gpu_count: float | None
    price_hour_usd: float
    interruption_rate: float | None
    price_origin: str
    flag: str | None
    disk_usd_gb_month: float | None  # the offer's own (a marketplace host's), else None
    egress_usd_gb: float | None


# What a ranked row is compared on: the workload, its rank, the offer's key and the cost.
Ranked = tuple[str, int, str, str, str | None, str, str, float]


def ranking(
    con: duckdb.DuckDBPyConnection, profiles: Sequence[WorkloadProfile], keep: int
) -> list[Ranked]:
    found = con.execute(f"SELECT {', '.join(Offer._fields)} FROM offers").fetchall()
    offers = [Offer(*row) for row in found]
    ranked: list[Ranked] = []
    for profile in profiles:
        work = to_workload(profile)
        size = cache(partial(size_offer, work, profile.tensor_parallel))
        costed = [(cost, offer) for offer in offers if (cost := _cost(profile, work, size, offer))]
        costed.sort(key=_order)
        ranked += [
            (profile.name, i, o.provider, o.region, o.zone, o.instance_type, o.pricing, cost)
            for i, (cost, o) in enumerate(costed[:keep], 1)
        ]
    return sorted(ranked, key=lambda row: row[:2])  # by workload name, then rank


def _order(costed: tuple[float, Offer]) -> tuple[Any, ...]:
    """Cost, hourly price, then the offer key (an absent zone after every zone)."""
    cost, o = costed
    zone = (o.zone is None, o.zone or "")
    return (cost, o.price_hour_usd, o.provider, o.region, zone, o.instance_type, o.pricing)


def _cost(
    profile: WorkloadProfile,
    work: Workload,
    size: Callable[[str, float], Estimate | None],
    offer: Offer,
) -> float | None:
    if not _eligible(profile, offer):
        return None
    assert offer.gpu_model is not None and offer.gpu_count is not None
    result = size(offer.gpu_model, offer.gpu_count)
    if result is None:
        return None
    if profile.task in TRAINING_TASKS:
        assert result.hours is not None
        return _training_cost(profile, offer, result.hours)
    factor = 1e6 / (3600 * result.tokens_per_s)
    listed = offer.price_hour_usd * factor
    replicas = max(instances(profile, work, result) or 1, 1)
    return listed * _spot_overhead(offer) + _extras_per_hour(profile, offer, replicas) * factor


def _rate(offer: Offer) -> tuple[float, str]:
    if offer.interruption_rate is not None:
        return offer.interruption_rate, "aws-advisor"
    return DEFAULT_INTERRUPTION_RATE, "assumed"  # no history here: nothing measured


def _spot_overhead(offer: Offer) -> float:
    """Serving's flat factor: checkpoints plus half the interruption rate of lost work."""
    if offer.pricing != "spot":
        return 1.0
    return 1 + CHECKPOINT_OVERHEAD + _rate(offer)[0] * LOST_WORK_SHARE


def _training_cost(profile: WorkloadProfile, offer: Offer, hours: float) -> float:
    overhead = 1.0
    if offer.pricing == "spot":
        rate_h = hourly_rate(*_rate(offer))
        overhead = restart_overhead(
            profile.checkpoint_minutes / 60, profile.restart_minutes / 60, rate_h
        )
    terms = _terms(offer)
    billed = billed_hours(hours * overhead, terms["granularity_h"], terms["minimum_h"])
    extras = _storage_month(profile, terms) + _egress_month(profile, terms)
    return offer.price_hour_usd * billed + extras * billed / HOURS_PER_MONTH


def _terms(offer: Offer) -> dict[str, Any]:
    """The provider's terms, with the offer's own disk and egress prices where it has them."""
    terms = billing_row(offer.provider)
    if offer.disk_usd_gb_month is not None:
        terms["disk_usd_gb_month"] = offer.disk_usd_gb_month
    if offer.egress_usd_gb is not None:
        terms["egress_usd_gb"] = offer.egress_usd_gb
    return terms


def _storage_month(profile: WorkloadProfile, terms: dict[str, Any]) -> float:
    if profile.storage_gb is None or terms["disk_usd_gb_month"] is None:
        return 0.0  # unknown: not counted (the row says so)
    disk = max(profile.storage_gb, terms["minimum_disk_gb"] or 0)
    return float(disk * terms["disk_usd_gb_month"])


def _egress_month(profile: WorkloadProfile, terms: dict[str, Any]) -> float:
    if profile.egress_gb_per_month is None or terms["egress_usd_gb"] is None:
        return 0.0
    paid = max(profile.egress_gb_per_month - (terms["egress_free_gb"] or 0), 0)
    return float(paid * terms["egress_usd_gb"])


def _extras_per_hour(profile: WorkloadProfile, offer: Offer, replicas: int) -> float:
    terms = _terms(offer)
    month = HOURS_PER_MONTH
    return _storage_month(profile, terms) / month + _egress_month(profile, terms) / (
        month * replicas
    )


def _eligible(p: WorkloadProfile, o: Offer) -> bool:
    count = o.gpu_count or 0
    return (
        o.gpu_model is not None
        and count > 0
        and (count < 1 or count == int(count))
        and o.pricing in ("on_demand", "spot")
        and o.price_origin == "published"
        and o.flag is None  # the offer guard's flagged offers are never advice
        and (not p.providers or o.provider in p.providers)
        and (not p.countries or o.country in [c.upper() for c in p.countries])
        and (not p.continents or o.continent in p.continents)
        and (not p.eu_only or bool(o.is_eu))
        and (p.max_gpus is None or count <= p.max_gpus)
        and (o.pricing == "on_demand" or p.spot_ok)
        and (not p.pricing or o.pricing in p.pricing)
        and _sla_allows(p, o)
    )


def _sla_allows(p: WorkloadProfile, o: Offer) -> bool:
    """With `sla`: no spot and no marketplace/community host, unless `sla_allow` lets in."""
    if not p.sla:
        return True
    no_sla = o.provider == "vast" or o.region == "community"
    spot_ok = o.pricing != "spot" or "spot" in p.sla_allow
    return spot_ok and (not no_sla or "marketplace" in p.sla_allow)
