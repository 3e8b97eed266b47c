"""Advisor benchmark: `advise` for N workloads over M current offers of the real providers and
regions, against the row-by-row definition of advise (memoised sizing) run in the same go.

    ./uvw run python bench/bench_advise.py [--offers 50000] [--workloads 50] [--repeat 5]
        [--daemon-settings] [--code DIR] [--quick] [--skip-loop] [--cold-estimates]

Offers: every (provider, region) of the region catalog in turn, each offer a random GPU (raw
provider spellings, one that stays unmapped), count (1/2/4/8) and pricing (30 % spot, some
with an interruption rate), prices rounded to the cent so that ties occur; ingested per
provider into a real DuckDB file. Workloads cycle through the bundled models, the tasks and
constraints on real providers, countries, continents, EU membership, GPU count and pricing;
the benchmark fails unless every workload gets candidates.

Timed: `advisor.store_advice()`, what `advise` and the daemon run (sizing, ranking, top 100 per
workload replacing the `advice` table), in a child process so that its peak RSS is its own
(--daemon-settings: the daemon's DuckDB memory limit, one thread, two malloc arenas); wall and
CPU time are both reported, the machine being shared. `--code DIR` times another checkout's
`src` instead (the "before" figures). The child's first call reads the estimates an earlier run
kept in the user cache folder (sizing.estimatecache) unless `--cold-estimates` empties it
first. The parent checks the stored rankings against the per-row loop (tests/sizing/per_row.py)
and times that loop.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.sizing.per_row
sys.path.insert(0, str(Path(__file__).resolve().parent))

import platformdirs
from gen_snapshot import RAW_NAMES

from priceadvisor import llm
from priceadvisor.config import WorkloadProfile
from priceadvisor.gpu_specs import region_catalog
from priceadvisor.manifest import manifest, manifest_ids
from priceadvisor.records import FetchResult, RawQuote, RunStatus, utcnow
from priceadvisor.sizing.advisor import store_advice
from priceadvisor.store import connections
from priceadvisor.store.ingest import ingest
from priceadvisor.store.runs import start_run

COUNTS = [1.0, 2.0, 4.0, 8.0]
TASKS = ["serve", "batch", "lora", "finetune", "serve"]
# (providers, countries, continents, eu_only, max_gpus, pricing), cycled over the workloads.
CONSTRAINTS: list[dict[str, Any]] = [
    {},
    {"continents": ["EU"]},
    {"providers": ["aws", "gcp", "azure"]},
    {"eu_only": True},
    {"countries": ["US", "CA"]},
    {"providers": ["runpod", "vast", "lambda", "tensordock"], "spot_ok": True},
    {"pricing": ["spot"], "spot_ok": True},
    {"max_gpus": 4},
    {"continents": ["AS", "OC"]},
    {"countries": ["DE", "FR", "NL"], "spot_ok": True},
]
KEEP = 100


def build(db: Path, n_offers: int, seed: int) -> int:
    rng = random.Random(seed)
    places = sorted(p for p in region_catalog() if p[0] in manifest_ids())
    quotes: dict[str, list[RawQuote]] = {}
    for i in range(n_offers):
        provider, region = places[i % len(places)]
        name, count = rng.choice(RAW_NAMES), rng.choice(COUNTS)
        spot = rng.random() < 0.3
        quotes.setdefault(provider, []).append(
            RawQuote(
                region=region,
                zone="ab"[i % 2],
                instance_type=f"{name.lower().replace(' ', '-')}.{count:g}x.f{i // len(places)}",
                pricing="spot" if spot else "on_demand",
                price=round(rng.uniform(0.3, 6.0) * (0.4 if spot else 1), 2),
                price_basis="gpu",
                gpu_name_raw=name,
                gpu_count=count,
                interruption_rate=rng.choice((None, 0.05, 0.2)) if spot else None,
            )
        )
    with connections.writer(db) as con:
        for provider, found in quotes.items():
            run_id = start_run(con, provider)
            result = FetchResult(provider, RunStatus.OK, found, finished_at=utcnow())
            ingest(con, run_id, result, manifest(provider))
        [(stored,)] = con.execute("SELECT count(*) FROM offers").fetchall()
        # This process keeps the database open: without a checkpoint the timed child would
        # replay the whole ingest from the WAL when it opens the file (~40 MB more RSS).
        con.execute("CHECKPOINT")
    return int(stored)


def workloads(n: int) -> list[WorkloadProfile]:
    catalog = llm.catalog()
    models = sorted(catalog)
    # Training: models one 8-GPU offer can hold (LoRA up to ~70B, full fine-tuning ~35B).
    lora = [m for m in models if catalog[m].total_params <= 75e9]
    full = [m for m in models if catalog[m].total_params <= 35e9]
    out = []
    for i in range(n):
        task = TASKS[i % len(TASKS)]
        training = task in ("lora", "finetune")
        pool = {"lora": lora, "finetune": full}.get(task, models)
        out.append(
            WorkloadProfile(
                name=f"w{i:03d}",
                task=task,
                model=pool[i % len(pool)],
                precision="fp8" if i % 3 == 0 else "bf16",
                train_tokens=1e9 if training else None,
                tpot_ms_max=80 if i % 4 == 0 and not training else None,
                monthly_output_tokens=1e9,
                **CONSTRAINTS[i % len(CONSTRAINTS)],
            )
        )
    return out


def measure(db: Path, n_workloads: int, repeat: int, daemon: bool, rows_file: Path) -> None:
    """The child: time store_advice() and report timings, peak RSS and the rankings."""
    if daemon:
        from priceadvisor.service import daemon as daemon_module  # noqa: PLC0415 - only here

        daemon_module._bound_memory()  # exactly what the daemon sets
    profiles = workloads(n_workloads)
    timings, cpu = [], []
    with connections.writer(db) as con:
        for _ in range(repeat):
            started, cpu_started = time.perf_counter(), time.process_time()
            store_advice(con, profiles, keep=KEEP)
            timings.append(time.perf_counter() - started)
            cpu.append(time.process_time() - cpu_started)
        peak = peak_rss_mb()  # before reading back
        ranked = con.execute(
            "SELECT workload, rank, provider, region, zone, instance_type, pricing, "
            "coalesce(cost_usd, usd_per_mtok) FROM advice ORDER BY workload, rank"
        ).fetchall()
    rows_file.write_text(json.dumps(ranked))
    print(json.dumps({"timings": timings, "cpu": cpu, "peak_rss_mb": peak}))


def empty_estimate_cache() -> None:
    """Remove every kept estimate of the user cache folder (sizing.estimatecache), whichever
    code version wrote it: the timed child then sizes as a process before any other did."""
    cache = Path(platformdirs.user_cache_dir("priceadvisor"))
    for folder in cache.glob("estimates-*"):
        shutil.rmtree(folder)


def peak_rss_mb() -> float:
    """This process's peak RSS. Linux: VmHWM, which starts afresh at exec; ru_maxrss would keep
    the high-water mark of the parent that spawned the child (the benchmark, after building
    the offers), whatever the child itself used."""
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # elsewhere: the parent's too


def timed_child(args: argparse.Namespace, db: Path, rows_file: Path) -> dict[str, Any]:
    command = [sys.executable, __file__, "--measure", str(db), "--rows-file", str(rows_file)]
    command += ["--workloads", str(args.workloads), "--repeat", str(args.repeat)]
    command += ["--daemon-settings"] if args.daemon_settings else []
    env = dict(os.environ)
    if args.code:
        env["PYTHONPATH"] = str(Path(args.code).resolve())
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        sys.exit(f"timed advise failed:\n{done.stderr}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def per_row(db: Path, n_workloads: int) -> tuple[float, float, list[list[Any]]]:
    # Not at the top: the timed child may import another checkout's priceadvisor (--code).
    from tests.sizing.per_row import ranking  # noqa: PLC0415

    with connections.writer(db) as con:
        started, cpu_started = time.perf_counter(), time.process_time()
        expected = ranking(con, workloads(n_workloads), KEEP)
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        return wall, cpu, [list(row) for row in expected]


def report(
    args: argparse.Namespace,
    n_offers: int,
    child: dict[str, Any],
    loop: tuple[float, float] | None,
) -> None:
    timings = child["timings"]
    median = statistics.median(timings)
    code = f"code from {args.code}" if args.code else "this checkout"
    settings = "daemon settings" if args.daemon_settings else "default settings"
    print(
        f"{args.workloads} workloads x {n_offers} offers ({code}, {settings}): advise median "
        f"{median:.3f} s (min {min(timings):.3f}, max {max(timings):.3f}; first "
        f"{timings[0]:.3f}), CPU median {statistics.median(child['cpu']):.3f} s "
        f"(first {child['cpu'][0]:.3f}{_later(child['cpu'])}), "
        f"peak RSS {child['peak_rss_mb']:.0f} MB"
    )
    cpu = statistics.median(child["cpu"])
    if loop is None:
        return
    print(
        f"per-row loop, sizing memoised: {loop[0]:.2f} s (CPU {loop[1]:.2f} s); speed-up "
        f"{loop[0] / median:.1f}x wall, {loop[1] / cpu:.1f}x CPU"
    )


def _later(cpu: list[float]) -> str:
    """The calls after the first (which may size and imports on first use): their median."""
    return f", later {statistics.median(cpu[1:]):.3f}" if len(cpu) > 1 else ""


def compare(got: list[list[Any]], expected: list[list[Any]], must_match: bool) -> None:
    per_workload = Counter(row[0] for row in got)
    print(
        f"ranked rows: {len(got)}; fewest per workload: {min(per_workload.values(), default=0)} "
        f"of {KEEP}; workloads with candidates: {len(per_workload)}"
    )
    same = got == expected
    print(f"same rankings as the per-row loop: {'yes' if same else 'NO'}")
    if not same:
        differ = sum(a != b for a, b in zip(got, expected, strict=False))
        # Same workload, rank and cost: another offer of exactly the same cost (a tie).
        ties = sum(
            a != b and (a[0], a[1], a[-1]) == (b[0], b[1], b[-1])
            for a, b in zip(got, expected, strict=False)
        )
        print(
            f"  {differ} rows differ (of {len(expected)} expected, {len(got)} got), "
            f"{ties} of them another offer of the same cost at that rank (ties ordered otherwise)"
        )
    if must_match and not same:
        sys.exit("rankings differ from the per-row definition")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--offers", type=int, default=50_000)
    parser.add_argument("--workloads", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--daemon-settings", action="store_true")
    parser.add_argument("--code", help="a checkout's src folder to time instead of this one")
    parser.add_argument("--quick", action="store_true", help="5,000 offers, 10 workloads")
    parser.add_argument(
        "--skip-loop", action="store_true", help="time advise only: no per-row loop, no check"
    )
    parser.add_argument(
        "--cold-estimates",
        action="store_true",
        help="empty the estimate cache before the timed child (its first call sizes everything)",
    )
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--rows-file", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        measure(args.measure, args.workloads, args.repeat, args.daemon_settings, args.rows_file)
        return
    if args.quick:
        args.offers, args.workloads, args.repeat = 5_000, 10, 2
    with tempfile.TemporaryDirectory() as tmp:
        db, rows_file = Path(tmp) / "advise.duckdb", Path(tmp) / "rows.json"
        n_offers = build(db, args.offers, seed=7)
        if args.cold_estimates:
            empty_estimate_cache()
        child = timed_child(args, db, rows_file)
        got = json.loads(rows_file.read_text())
        if args.skip_loop:
            report(args, n_offers, child, None)
        else:
            loop_wall, loop_cpu, expected = per_row(db, args.workloads)
            report(args, n_offers, child, (loop_wall, loop_cpu))
            compare(got, expected, must_match=not args.code)
    starved = {f"w{i:03d}" for i in range(args.workloads)} - {row[0] for row in got}
    if starved:
        sys.exit(f"workloads without candidates: {sorted(starved)}")


if __name__ == "__main__":
    main()
