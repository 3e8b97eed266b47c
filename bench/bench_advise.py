"""Advisor benchmark: `advise` for 50 workloads over ≥ 50,000 current offers in
≤ 0.5 s median, and ≥ 20× faster than a per-row Python loop.

    ./uvw run python bench/bench_advise.py [--offers 60000] [--repeat 5]

Offers: a synthetic snapshot (bench/gen_snapshot.py) ingested into a real DuckDB file.
Workloads: 50 profiles cycling through the bundled models, serving and training tasks, and
constraints (continents, EU only, spot allowed, max GPUs). Timed: `advisor.rank()` — sizing of
every (workload, GPU model, GPU count) plus the set-based ranking in DuckDB. The baseline does
the same work row by row in Python (constraints, sizing, cost, sort per workload); it is run
twice: sizing every row (the plain per-row loop the target is stated against) and with sizing
memoised per (workload, GPU, count), the best a loop can do.
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import sys
import tempfile
import time
from functools import cache
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from bench_ingest import MANIFEST
from gen_snapshot import base_quotes

from priceadvisor import llm
from priceadvisor.config import WorkloadProfile
from priceadvisor.models import FetchResult, RunStatus
from priceadvisor.sizing.advisor import (
    CHECKPOINT_OVERHEAD,
    DEFAULT_INTERRUPTION_RATE,
    LOST_WORK_SHARE,
    rank,
)
from priceadvisor.sizing.estimate import estimate, replicas_for
from priceadvisor.sizing.workloads import to_workload
from priceadvisor.store import db as store
from priceadvisor.store.ingest import ingest

TASKS = ["serve", "batch", "lora", "finetune", "serve"]


def workloads(n: int) -> list[WorkloadProfile]:
    models = sorted(llm.catalog())
    out = []
    for i in range(n):
        task = TASKS[i % len(TASKS)]
        out.append(
            WorkloadProfile(
                name=f"w{i:02d}",
                task=task,
                model=models[i % len(models)],
                precision="fp8" if i % 3 == 0 else "bf16",
                train_tokens=1e9 if task in ("lora", "finetune") else None,
                tpot_ms_max=80 if i % 4 == 0 else None,
                spot_ok=i % 2 == 0,
                continents=["EU"] if i % 5 == 0 else [],
                eu_only=i % 7 == 0,
                max_gpus=4 if i % 6 == 0 else None,
                monthly_output_tokens=1e9,
            )
        )
    return out


def python_baseline(con: Any, profiles: list[WorkloadProfile], memoise: bool) -> int:
    """The per-row loop: every (workload, offer) checked, sized and costed in Python."""
    offers = con.execute(
        "SELECT provider, region, instance_type, pricing, gpu_model, gpu_count, price_hour_usd, "
        "continent, is_eu, interruption_rate FROM offers WHERE gpu_model IS NOT NULL"
    ).fetchall()
    kept = 0
    for profile in profiles:
        work = to_workload(profile)
        size = (
            cache(lambda g, c, w=work: estimate(w, g, c))
            if memoise
            else (lambda g, c, w=work: estimate(w, g, c))
        )
        ranked = [c for offer in offers if (c := _row_cost(profile, work, size, offer))]
        ranked.sort()
        kept += len(ranked[:100])
    return kept


def _eligible(profile: WorkloadProfile, offer: tuple[Any, ...]) -> bool:
    _, _, _, pricing, _, count, _, continent, eu, _ = offer
    return (
        count >= 1
        and count == int(count)
        and (not profile.continents or continent in profile.continents)
        and (not profile.eu_only or bool(eu))
        and (not profile.max_gpus or count <= profile.max_gpus)
        and (pricing != "spot" or profile.spot_ok)
    )


def _row_cost(profile: WorkloadProfile, work: Any, size: Any, offer: tuple[Any, ...]) -> Any:
    if not _eligible(profile, offer):
        return None
    provider, region, itype, pricing, gpu, count, price, _, _, rate = offer
    result = size(gpu, int(count))
    if not result.fits or result.tokens_per_s <= 0:
        return None
    overhead = 1.0
    if pricing == "spot":
        overhead += CHECKPOINT_OVERHEAD + (rate or DEFAULT_INTERRUPTION_RATE) * LOST_WORK_SHARE
    if profile.task in ("lora", "finetune", "pretrain"):
        cost = price * result.hours * overhead
    else:
        cost = price * overhead / (3600 * result.tokens_per_s) * 1e6
        replicas_for(work, result.tokens_per_s)
    return (cost, price, provider, region, itype, pricing)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--offers", type=int, default=60_000)
    parser.add_argument("--workloads", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "advise.duckdb"
        with store.writer(db) as con:
            run_id = store.start_run(con, "bench")
            result = FetchResult(
                "bench",
                RunStatus.OK,
                base_quotes(args.offers, 7),
                finished_at=dt.datetime(2026, 11, 1),
            )
            ingest(con, run_id, result, MANIFEST)
            profiles = workloads(args.workloads)
            [(n_offers,)] = con.execute("SELECT count(*) FROM offers").fetchall()
            timings, rows = [], 0
            for _ in range(args.repeat):
                started = time.perf_counter()
                _, ranked = rank(con, profiles, keep=100)
                timings.append(time.perf_counter() - started)
                rows = len(ranked)
            started = time.perf_counter()
            memo_rows = python_baseline(con, profiles, memoise=True)
            memoised = time.perf_counter() - started
            started = time.perf_counter()
            naive_rows = python_baseline(con, profiles, memoise=False)
            naive = time.perf_counter() - started
    median = statistics.median(timings)
    print(
        f"{args.workloads} workloads x {n_offers} offers: advise median {median:.3f} s "
        f"(min {min(timings):.3f}, max {max(timings):.3f}, {rows} ranked rows kept)"
    )
    print(
        f"per-row Python loop, sizing every row: {naive:.2f} s ({naive_rows} rows kept); "
        f"speed-up {naive / median:.1f}x (target >= 20x)"
    )
    print(
        f"per-row Python loop, sizing memoised per (GPU, count): {memoised:.2f} s "
        f"({memo_rows} rows kept); speed-up {memoised / median:.1f}x"
    )


if __name__ == "__main__":
    main()
