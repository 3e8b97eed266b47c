"""The price gauges behind /metrics: one uncached read (what a scrape costs every
`[daemon] metrics_cache` seconds) and the series it yields, over N synthetic current offers.

Usage: python bench/bench_price_gauges.py [--offers 100000 --offers 1000000] [--reads 10]

Builds a database as bench_web.py does (bench/gen_snapshot.py, one ingest), then times
`read_gauges` (a fresh sealed read-only connection, the two grouped scans, per provider on) and
reports the median and max wall and CPU time and the number of series.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from bench_web import build

from priceadvisor.store.handle import Store
from priceadvisor.store.pricegauges import read_gauges


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--offers", type=int, action="append")
    parser.add_argument("--reads", type=int, default=10)
    args = parser.parse_args()
    for size in args.offers or [100_000]:
        with tempfile.TemporaryDirectory() as tmp:
            db = Path(tmp) / "bench.duckdb"
            build(db, size)
            measure(db, size, args.reads)


def measure(db: Path, offers: int, reads: int) -> None:
    gauges = read_gauges(Store(db), True)  # warm: the first open of the file
    walls, cpus = [], []
    for _ in range(reads):
        wall, cpu = time.perf_counter(), time.process_time()
        read_gauges(Store(db), True)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    series = len(gauges.cheapest) + len(gauges.by_provider) + len(gauges.workloads)
    print(
        f"{offers:>9,} offers  read median {statistics.median(walls) * 1000:.1f} ms wall "
        f"(max {max(walls) * 1000:.1f}), {statistics.median(cpus) * 1000:.1f} ms CPU; "
        f"{len(gauges.cheapest)} model x pricing series, {len(gauges.by_provider)} per provider, "
        f"{series} in all"
    )


if __name__ == "__main__":
    main()
