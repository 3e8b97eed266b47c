"""Rank every current offer for every workload, set-based in DuckDB.

Sizing runs once per (workload, GPU model, GPU count) that exists among the offers — a few
hundred estimates — and the join with the offers, the constraints, the cost arithmetic and the
ranking happen in one SQL statement, never in a Python loop over offers.

Spot offers are eligible only for workloads with `spot_ok`, and cost more than their price:
checkpointing (+5 %) plus the work lost to interruptions (half the interval between checkpoints
on average, i.e. +50 % of the interruption rate; 15 % where the rate is unknown).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import duckdb

from priceadvisor.config import WorkloadProfile
from priceadvisor.models import TRAINING_TASKS, utcnow
from priceadvisor.sizing.estimate import Estimate, estimate, replicas_for
from priceadvisor.sizing.workloads import to_workload
from priceadvisor.store import columns
from priceadvisor.store import db as store

CHECKPOINT_OVERHEAD = 0.05
LOST_WORK_SHARE = 0.5
DEFAULT_INTERRUPTION_RATE = 0.15
KEEP_PER_WORKLOAD = 100

_ESTIMATE_SCHEMA: columns.Schema = {
    "workload": "string",
    "task": "string",
    "gpu_model": "string",
    "gpu_count": "float",
    "tokens_per_s": "float",
    "hours": "float",
    "ttft_ms": "float",
    "tpot_ms": "float",
    "binding": "string",
    "uncertainty": "float",
    "replicas": "int",
    "cost_factor": "float",
}
# List-valued constraints travel as JSON text (nanoarrow builds no lists); SQL parses them.
_WORKLOAD_SCHEMA: columns.Schema = {
    "name": "string",
    "providers": "string",
    "countries": "string",
    "continents": "string",
    "eu_only": "bool",
    "max_gpus": "int",
    "spot_ok": "bool",
    "pricing": "string",
}


# Offers eligible for sizing, numbered, with their effective price (spot overhead included)
# and a "class" of the attributes constraints look at: constraints are then evaluated once per
# (workload, class) — a few thousand pairs — instead of once per (workload, offer).
PREPARE_SQL = f"""
CREATE OR REPLACE TEMP TABLE _advice_offers AS
WITH o AS (
    SELECT *,
        CASE WHEN pricing = 'spot'
             THEN 1 + {CHECKPOINT_OVERHEAD}
                  + coalesce(interruption_rate, {DEFAULT_INTERRUPTION_RATE}) * {LOST_WORK_SHARE}
             ELSE 1.0 END AS spot_overhead
    FROM offers
    WHERE gpu_model IS NOT NULL AND gpu_count > 0
        AND (gpu_count < 1 OR gpu_count = floor(gpu_count))
      AND pricing IN ('on_demand', 'spot')  -- market averages are not rentable offers
      AND price_origin = 'published'  -- a derived price is never what advice recommends
)
SELECT row_number() OVER () AS oid, *, price_hour_usd * spot_overhead AS effective_price,
    dense_rank() OVER (ORDER BY provider, country, continent, is_eu, pricing, gpu_count)
        AS class_id
FROM o;
CREATE OR REPLACE TEMP TABLE _advice_classes AS
SELECT DISTINCT class_id, provider, country, continent, coalesce(is_eu, false) AS is_eu,
    pricing, gpu_count
FROM _advice_offers;
"""

WORKLOADS_SQL = """
CREATE OR REPLACE TEMP TABLE _workloads AS
SELECT name, eu_only, max_gpus, spot_ok,
    from_json(providers, '["VARCHAR"]') AS providers,
    from_json(countries, '["VARCHAR"]') AS countries,
    from_json(continents, '["VARCHAR"]') AS continents,
    from_json(pricing, '["VARCHAR"]') AS pricing
FROM _workloads_json
"""

RANK_SQL = """
WITH eligible AS (
    SELECT w.name AS workload, c.class_id
    FROM _workloads AS w, _advice_classes AS c
    WHERE (len(w.providers) = 0 OR list_contains(w.providers, c.provider))
      AND (len(w.countries) = 0 OR list_contains(w.countries, c.country))
      AND (len(w.continents) = 0 OR list_contains(w.continents, c.continent))
      AND (NOT w.eu_only OR c.is_eu)
      AND (w.max_gpus IS NULL OR c.gpu_count <= w.max_gpus)
      AND (c.pricing = 'on_demand' OR w.spot_ok)
      AND (len(w.pricing) = 0 OR list_contains(w.pricing, c.pricing))
),
candidates AS (
    SELECT g.workload, o.oid, o.effective_price * e.cost_factor AS cost, o.price_hour_usd
    FROM eligible AS g
    JOIN _advice_offers AS o ON o.class_id = g.class_id
    JOIN _estimates AS e
        ON e.workload = g.workload AND e.gpu_model = o.gpu_model AND e.gpu_count = o.gpu_count
),
ranked AS (
    SELECT workload, oid, cost,
        row_number() OVER (PARTITION BY workload ORDER BY cost, price_hour_usd, oid) AS rank
    FROM candidates
    QUALIFY rank <= $keep
)
SELECT r.workload, e.task, r.rank, o.provider, o.region, o.zone, o.country, o.instance_type,
    o.gpu_model, o.gpu_count, o.pricing, o.price_hour_usd,
    CASE WHEN e.hours IS NOT NULL THEN r.cost END AS cost_usd,
    CASE WHEN e.hours IS NULL THEN r.cost END AS usd_per_mtok,
    CASE WHEN e.hours IS NULL THEN e.replicas * 730 * o.effective_price END AS monthly_usd,
    CASE WHEN e.hours IS NULL THEN e.replicas END AS replicas,
    e.tokens_per_s, e.hours, e.ttft_ms, e.tpot_ms, e.binding,
    r.cost / (1 + e.uncertainty) AS low, r.cost * (1 + e.uncertainty) AS high,
    o.spot_overhead, $now AS computed_at
FROM ranked AS r
JOIN _advice_offers AS o USING (oid)
JOIN _estimates AS e ON e.workload = r.workload AND e.gpu_model = o.gpu_model
    AND e.gpu_count = o.gpu_count
ORDER BY r.workload, r.rank
"""


def gpu_shapes(con: duckdb.DuckDBPyConnection) -> list[tuple[str, float]]:
    """Every (GPU model, GPU count) among current offers: whole GPUs, or a share of one GPU
    (MIG slices, fractional vGPUs) below one."""
    rows = con.execute(
        "SELECT DISTINCT gpu_model, gpu_count FROM _advice_offers ORDER BY ALL"
    ).fetchall()
    return [(str(model), float(count)) for model, count in rows]


def estimates_table(profiles: Sequence[WorkloadProfile], shapes: list[tuple[str, float]]) -> Any:
    rows: dict[str, list[Any]] = {name: [] for name in _ESTIMATE_SCHEMA}
    for profile in profiles:
        work = to_workload(profile)
        for gpu_model, count in shapes:
            result = estimate(work, gpu_model, count)
            if result.fits and result.tokens_per_s > 0:
                _append(rows, profile, result, replicas_for(work, result.tokens_per_s))
    return columns.table(rows, _ESTIMATE_SCHEMA)


def _append(
    rows: dict[str, list[Any]], profile: WorkloadProfile, result: Estimate, replicas: int
) -> None:
    values = {
        "workload": profile.name,
        "task": profile.task,
        "gpu_model": result.gpu_model,
        "gpu_count": float(result.gpu_count),
        "tokens_per_s": result.tokens_per_s,
        "hours": result.hours if profile.task in TRAINING_TASKS else None,
        "ttft_ms": result.ttft_ms,
        "tpot_ms": result.tpot_ms,
        "binding": result.binding,
        "uncertainty": result.uncertainty,
        "replicas": replicas,
        # cost = effective $/h x this: run hours for training, 1e6 / (3600 x tokens/s) serving
        "cost_factor": result.hours
        if profile.task in TRAINING_TASKS
        else 1e6 / (3600 * result.tokens_per_s),
    }
    for name, value in values.items():
        rows[name].append(value)


def workloads_table(profiles: Sequence[WorkloadProfile]) -> Any:
    rows = [
        {
            "name": p.name,
            "providers": json.dumps(p.providers),
            "countries": json.dumps([c.upper() for c in p.countries]),
            "continents": json.dumps(list(p.continents)),
            "eu_only": p.eu_only,
            "max_gpus": p.max_gpus,
            "spot_ok": p.spot_ok,
            "pricing": json.dumps(list(p.pricing)),
        }
        for p in profiles
    ]
    return columns.from_rows(rows, _WORKLOAD_SCHEMA)


@contextmanager
def _prepared(
    con: duckdb.DuckDBPyConnection, profiles: Sequence[WorkloadProfile]
) -> Iterator[None]:
    con.execute(PREPARE_SQL)
    con.register("_estimates", estimates_table(profiles, gpu_shapes(con)))
    con.register("_workloads_json", workloads_table(profiles))
    con.execute(WORKLOADS_SQL)
    try:
        yield
    finally:
        con.unregister("_estimates")
        con.unregister("_workloads_json")
        con.execute(
            "DROP TABLE IF EXISTS _advice_offers; DROP TABLE IF EXISTS _advice_classes; "
            "DROP TABLE IF EXISTS _workloads"
        )


def rank(
    con: duckdb.DuckDBPyConnection,
    profiles: Sequence[WorkloadProfile],
    keep: int = KEEP_PER_WORKLOAD,
) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Rank offers for the workloads without storing: (columns, rows)."""
    with _prepared(con, profiles):
        cursor = con.execute(RANK_SQL, {"now": utcnow(), "keep": keep})
        columns = [d[0] for d in cursor.description]
        return columns, cursor.fetchall()


def store_advice(
    con: duckdb.DuckDBPyConnection,
    profiles: Sequence[WorkloadProfile],
    keep: int = KEEP_PER_WORKLOAD,
) -> int:
    """Replace core.advice with the latest ranking, in one transaction; returns rows stored."""
    with _prepared(con, profiles):
        con.execute("BEGIN TRANSACTION")
        try:
            con.execute("DELETE FROM core.advice")
            con.execute(
                f"INSERT INTO core.advice BY NAME {RANK_SQL}", {"now": utcnow(), "keep": keep}
            )
            row = con.execute("SELECT count(*) FROM core.advice").fetchone()
            con.execute("COMMIT")
        except BaseException:
            store.rollback(con)
            raise
    return int(row[0]) if row else 0
