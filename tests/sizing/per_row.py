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
    size_offer,
)
from priceadvisor.sizing.estimate import Estimate
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
        costed = [(cost, offer) for offer in offers if (cost := _cost(profile, size, offer))]
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
    profile: WorkloadProfile, size: Callable[[str, float], Estimate | None], offer: Offer
) -> float | None:
    if not _eligible(profile, offer):
        return None
    assert offer.gpu_model is not None and offer.gpu_count is not None
    result = size(offer.gpu_model, offer.gpu_count)
    if result is None:
        return None
    overhead = 1.0
    if offer.pricing == "spot":
        rate = offer.interruption_rate
        rate = DEFAULT_INTERRUPTION_RATE if rate is None else rate
        overhead = 1 + CHECKPOINT_OVERHEAD + rate * LOST_WORK_SHARE
    if profile.task in TRAINING_TASKS:
        assert result.hours is not None
        return offer.price_hour_usd * overhead * result.hours
    return offer.price_hour_usd * overhead * (1e6 / (3600 * result.tokens_per_s))


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
    )
