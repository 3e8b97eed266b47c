"""What the daemon's /metrics says about prices: the cheapest current $/GPU-hour per GPU model
and pricing (optionally per provider), and each workload's best cost from the `advice` view.

Two grouped scans of the public views, small enough to run at scrape time (the daemon caches
the answer for a few seconds). The label sets are bounded by the catalog and the config, never
by what providers send: GPU model ids come from the catalog (unmapped offers are left out),
pricing is one of the rentable kinds (`market` averages are not prices one can rent at).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import duckdb

from priceadvisor.records import RENTABLE
from priceadvisor.store.handle import Store


def unflagged(alias: str) -> str:
    """SQL true for an offer the suspicious-offer guard did not flag (docs/offers-guard.md):
    the metrics and the OpenCost export never quote a flagged price."""
    return f"{alias}.flag IS NULL"


def comparable_offers(alias: str) -> str:
    """SQL true for an offer fit to quote as "the cheapest": a catalog GPU, a published (not
    derived) rentable price, not flagged as suspicious."""
    kinds = ", ".join(f"'{p}'" for p in RENTABLE)
    return (
        f"({alias}.gpu_model IS NOT NULL AND {alias}.price_gpu_hour_usd IS NOT NULL"
        f" AND {alias}.price_origin = 'published' AND {alias}.pricing IN ({kinds})"
        f" AND {unflagged(alias)})"
    )


@dataclass(frozen=True, slots=True)
class GpuHourPrice:
    gpu_model: str
    pricing: str
    provider: str | None  # None: the cheapest over every provider
    usd: float


@dataclass(frozen=True, slots=True)
class WorkloadBest:
    """The rank-1 offer's cost for one workload; each figure NULL where its task has none."""

    workload: str
    task: str
    cost_usd: float | None  # training: the whole run
    usd_per_mtok: float | None  # serving
    monthly_usd: float | None  # serving


@dataclass(frozen=True, slots=True)
class PriceGauges:
    cheapest: list[GpuHourPrice] = field(default_factory=list)
    by_provider: list[GpuHourPrice] = field(default_factory=list)
    workloads: list[WorkloadBest] = field(default_factory=list)


def cheapest_gpu_hour(con: duckdb.DuckDBPyConnection, per_provider: bool) -> list[GpuHourPrice]:
    group = "gpu_model, pricing, provider" if per_provider else "gpu_model, pricing, NULL"
    rows = con.execute(
        f"SELECT {group}, min(o.price_gpu_hour_usd) FROM offers o "
        f"WHERE {comparable_offers('o')} GROUP BY ALL ORDER BY ALL"
    ).fetchall()
    return [GpuHourPrice(r[0], r[1], r[2], float(r[3])) for r in rows]


def best_per_workload(con: duckdb.DuckDBPyConnection) -> list[WorkloadBest]:
    rows = con.execute(
        "SELECT workload, task, cost_usd, usd_per_mtok, monthly_usd FROM advice "
        "WHERE rank = 1 ORDER BY workload"
    ).fetchall()
    return [WorkloadBest(*row) for row in rows]


def read_gauges(where: Store, per_provider: bool) -> PriceGauges:
    """Everything /metrics shows about prices, read on a sealed read-only connection."""
    with where.reader() as con:
        return PriceGauges(
            cheapest=cheapest_gpu_hour(con, False),
            by_provider=cheapest_gpu_hour(con, True) if per_provider else [],
            workloads=best_per_workload(con),
        )
