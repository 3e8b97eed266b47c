"""DuckLake vs the DuckDB file: ingest, two read queries at scale, and reader latency while two
writers ingest into the lake.

    uv run python bench/bench_lake.py [--quick] [--offers 100000] [--history-offers 1000000]
        [--days 30]

1. Ingest: a synthetic snapshot of `--offers` offers (bench/gen_snapshot.py) merged into an empty
   store (all new), then steady-state snapshots with 5 % of the prices changed; timed from the
   parsed quotes to COMMIT, like bench_ingest.py.
2. Queries on a history of `--history-offers` offers over `--days` days of hourly observations:
   the history is built in SQL directly (not by ingesting every hour): each offer gets 1-15
   price intervals spread over the period, the last one open. Timed: the cheapest current
   $/GPU-hour per GPU model (the `offers` view) and one GPU model's daily minimum over the
   period (the `price_history` view), each the median of 5 runs on a warm connection.
3. Reader latency on the lake: the cheapest-price query in a loop on a held connection (each
   query sees the newest snapshot), idle and while two writer processes ingest snapshots of
   their own providers at once.
4. (`--parts maintain`) `lake maintain` on a lake of its own after `--maintain-snapshots`
   ingests of `--maintain-offers` offers: data and delete files, dead and inlined rows, files
   and bytes on disk before and after.

The lake has its catalog in a throwaway PostgreSQL server (Debian's binaries, as the tests use)
and its data files in a local directory. Figures and the machine: docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import multiprocessing
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1]))

from gen_snapshot import snapshots
from tests.pg import create_database, start_postgres

from priceadvisor.manifest import Manifest
from priceadvisor.records import FetchResult, RunStatus
from priceadvisor.store import connections, lake, maintenance, transactions
from priceadvisor.store.ingest import ingest
from priceadvisor.store.runs import start_run

START = dt.datetime(2026, 11, 1)
GPUS = ["H100-SXM-80GB", "H200-141GB", "B200-180GB", "A100-SXM-80GB", "L40S-48GB", "L4-24GB"]
CHEAPEST_SQL = """SELECT gpu_model, min(price_gpu_hour_usd) AS cheapest FROM offers
WHERE gpu_model IS NOT NULL GROUP BY gpu_model ORDER BY cheapest"""
HISTORY_SQL = """SELECT date_trunc('day', valid_from) AS day, min(price_gpu_hour_usd)
FROM price_history WHERE gpu_model = 'H100-SXM-80GB' GROUP BY day ORDER BY day"""
# 1-15 intervals per offer over the period, evenly split; prices drift 2 % per interval.
HISTORY_BUILD_SQL = """
INSERT INTO core.price_intervals BY NAME
WITH offers AS (
    SELECT i, 1 + (hash(i) % 15)::INTEGER AS k FROM range($offers) t(i)
), intervals AS (
    SELECT i, k, unnest(range(k)) AS j FROM offers
)
SELECT 'p' || (i % 20) AS provider, 'r' || (i // 20 % 50) AS region, '' AS zone,
    'type-' || i AS instance_type,
    CASE WHEN i % 3 = 0 THEN 'spot' ELSE 'on_demand' END AS pricing,
    $gpus[1 + i % len($gpus)] AS gpu_model, 'bench' AS gpu_name_raw,
    1 + i % 8 AS gpu_count,
    (1 + i % 8) * (1 + (i % 97) / 20) * (1 + 0.02 * j) AS price_hour_usd,
    (1 + (i % 97) / 20) * (1 + 0.02 * j) AS price_gpu_hour_usd,
    'USD' AS currency, (1 + i % 8) * (1 + (i % 97) / 20) * (1 + 0.02 * j) AS price_hour_original,
    'instance' AS price_basis,
    $start AS first_seen,
    $start + to_hours((j * $hours // k)::BIGINT) AS valid_from,
    CASE WHEN j < k - 1 THEN $start + to_hours(((j + 1) * $hours // k)::BIGINT) END AS valid_to,
    $start + to_hours($hours) AS last_seen,
    1 AS opened_run, 1 AS last_run
FROM intervals
"""


def manifest(provider: str) -> Manifest:
    return Manifest(
        id=provider,
        name="Synthetic",
        homepage="https://example.invalid",
        interval=900,
        price_basis="gpu",
        endpoints={"prices": "https://example.invalid/prices"},
    )


@contextmanager
def backends(tmp: Path) -> Iterator[dict[str, connections.Target]]:
    """A fresh DuckDB file and a fresh lake (PostgreSQL catalog, local data directory)."""
    with start_postgres() as dsn:
        catalog = create_database(dsn, "bench")
        yield {
            "duckdb file": tmp / "bench.duckdb",
            "ducklake": lake.Lake(f"postgres:{catalog}", str(tmp / "lake-data") + "/"),
        }


def ingest_snapshots(
    target: connections.Target, provider: str, offers: int, count: int, seed: int = 1
) -> list[float]:
    """Seconds per snapshot: the first all new, the rest with 5 % of prices changed."""
    timings, stream = [], snapshots(offers, 0.05, seed)
    for i in range(count):
        quotes, _ = next(stream)
        with connections.writer(target) as con:
            run_id = transactions.retry_conflicts(start_run)(con, provider)
            observed = START + dt.timedelta(minutes=15 * (i + 1))
            result = FetchResult(provider, RunStatus.OK, quotes, finished_at=observed)
            started = time.perf_counter()
            # as the fetch path does: a commit lost to the other writer is redone whole
            transactions.retry_conflicts(ingest)(con, run_id, result, manifest(provider))
            timings.append(time.perf_counter() - started)
    return timings


def bench_ingest(targets: dict[str, connections.Target], offers: int, count: int) -> None:
    print(f"\n## Ingest of a {offers:,}-offer snapshot")
    for name, target in targets.items():
        timings = ingest_snapshots(target, "bench", offers, count)
        steady = statistics.median(timings[1:]) if len(timings) > 1 else float("nan")
        print(f"{name:12} first (all new) {timings[0]:.2f} s, steady (5 % changed) {steady:.2f} s")


def timed(run: Callable[[], object], repeat: int = 5) -> float:
    run()  # warm: the first run reads the files (or fetches the catalog) once
    laps = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        laps.append(time.perf_counter() - started)
    return statistics.median(laps)


def build_history(target: connections.Target, offers: int, days: int) -> int:
    with connections.writer(target) as con:
        con.execute("DELETE FROM core.price_intervals")
        con.execute(
            HISTORY_BUILD_SQL,
            {"offers": offers, "gpus": GPUS, "start": START, "hours": days * 24},
        )
        [(rows,)] = con.execute("SELECT count(*) FROM core.price_intervals").fetchall()
    return int(rows)


def bench_queries(targets: dict[str, connections.Target], offers: int, days: int) -> None:
    print(f"\n## Queries at {offers:,} offers, {days} days of hourly history")
    for name, target in targets.items():
        started = time.perf_counter()
        rows = build_history(target, offers, days)
        built = time.perf_counter() - started
        with connections.reader(target) as con:
            cheapest = timed(lambda con=con: con.execute(CHEAPEST_SQL).fetchall())
            history = timed(lambda con=con: con.execute(HISTORY_SQL).fetchall())
        print(
            f"{name:12} {rows:,} intervals (built in {built:.0f} s): "
            f"cheapest per GPU {cheapest * 1000:.0f} ms, one-GPU history {history * 1000:.0f} ms"
        )


def _writer(target: lake.Lake, provider: str, offers: int, count: int, seed: int) -> None:
    ingest_snapshots(target, provider, offers, count, seed)


def latencies(target: lake.Lake, until: Callable[[], bool], minimum: int) -> list[float]:
    laps: list[float] = []
    with connections.reader(target) as con:
        while len(laps) < minimum or not until():
            started = time.perf_counter()
            con.execute(CHEAPEST_SQL).fetchall()
            laps.append(time.perf_counter() - started)
    return laps


def summary(laps: list[float]) -> str:
    ordered = sorted(laps)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return (
        f"{len(laps)} queries: median {statistics.median(laps) * 1000:.0f} ms, "
        f"p95 {p95 * 1000:.0f} ms, max {ordered[-1] * 1000:.0f} ms"
    )


def bench_readers(target: lake.Lake, offers: int, count: int) -> None:
    print(f"\n## Reader latency on the lake, two writers ingesting {offers:,}-offer snapshots")
    with connections.writer(target):
        pass  # migrated (when only this part runs)
    idle = latencies(target, lambda: True, 20)
    print(f"idle         {summary(idle)}")
    context = multiprocessing.get_context("spawn")
    writers = [
        context.Process(target=_writer, args=(target, f"writer-{n}", offers, count, n + 2))
        for n in range(2)
    ]
    for writer in writers:
        writer.start()
    busy = latencies(target, lambda: not any(w.is_alive() for w in writers), 20)
    for writer in writers:
        writer.join()
    failed = [w.exitcode for w in writers if w.exitcode]
    print(f"two writers  {summary(busy)}" + (f" (writer exit codes {failed})" if failed else ""))


def lake_storage(target: lake.Lake) -> str:
    """Data and delete files the current snapshot reads, dead rows of current_offers, rows
    inlined in the catalog, and the Parquet files on disk with their size."""
    with connections.writer(target) as con:
        data, deletes = maintenance.data_files(con), maintenance.delete_files(con)
        dead = maintenance.dead_rows(con, "core", "current_offers")
        inlined = maintenance.inlined_rows(con)
    files = list(Path(target.data_path).rglob("*.parquet"))
    size = sum(f.stat().st_size for f in files)
    return (
        f"data files {data}, delete files {deletes}, dead rows (current_offers) {dead}, "
        f"inlined rows {inlined}; on disk {len(files)} files, {size / 1024:.0f} KiB"
    )


def bench_maintain(tmp: Path, offers: int, count: int) -> None:
    """`lake maintain` after `count` ingests of `offers` offers (5 % changed each): keeping
    every snapshot (the default 90 days), then expiring all but the last and cleaning up (twice:
    a run deletes the files the previous one freed)."""
    print(f"\n## lake maintain after {count} ingests of {offers:,} offers (5 % changed each)")
    with start_postgres() as dsn:
        target = lake.Lake(f"postgres:{create_database(dsn, 'maintain')}", f"{tmp}/maintain/")
        ingest_snapshots(target, "bench", offers, count)
        maintain_twice(target)


def maintain_twice(target: lake.Lake) -> None:
    print(f"before         {lake_storage(target)}")
    for label, retention, grace in (
        ("keep 90d", dt.timedelta(days=90), maintenance.DEFAULT_GRACE),
        ("keep 0s", dt.timedelta(0), dt.timedelta(0)),
        ("again", dt.timedelta(0), dt.timedelta(0)),  # deletes what the previous run freed
    ):
        wall, cpu = time.perf_counter(), time.process_time()
        with connections.writer(target) as con:
            report = maintenance.run(con, retention, grace)
        took = f"{time.perf_counter() - wall:.1f} s wall, {time.process_time() - cpu:.1f} s CPU"
        print(f"after {label:9}{lake_storage(target)} ({took})")
        for line in report.lines():
            print(f"    {line}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--offers", type=int, default=100_000)
    parser.add_argument("--history-offers", type=int, default=1_000_000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--snapshots", type=int, default=3)
    parser.add_argument(
        "--parts", default="ingest,queries,readers", help="comma-separated parts to run"
    )
    parser.add_argument("--maintain-offers", type=int, default=300)
    parser.add_argument("--maintain-snapshots", type=int, default=50)
    args = parser.parse_args()
    if args.quick:
        args.offers, args.history_offers, args.days, args.snapshots = 10_000, 100_000, 7, 2
        args.maintain_snapshots = 10
    with tempfile.TemporaryDirectory() as tmp, backends(Path(tmp)) as targets:
        parts = set(args.parts.split(","))
        if "ingest" in parts:
            bench_ingest(targets, args.offers, args.snapshots)
        if "queries" in parts:
            bench_queries(targets, args.history_offers, args.days)
        lake_target = targets["ducklake"]
        assert isinstance(lake_target, lake.Lake)
        if "readers" in parts:
            bench_readers(lake_target, args.offers, args.snapshots)
        if "maintain" in parts:
            bench_maintain(Path(tmp), args.maintain_offers, args.maintain_snapshots)


if __name__ == "__main__":
    main()
