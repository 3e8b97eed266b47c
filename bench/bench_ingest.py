"""Ingest benchmark: one 100k-offer snapshot normalised, validated and merged into
the change-log history; target <= 1 s median on a 2-core machine, history growing only by the
changed prices.

    uv run python bench/bench_ingest.py [--offers 100000] [--snapshots 7] [--change 0.05]

Each timed ingest starts from the parsed quotes (RawQuote objects, as an adapter returns them)
and ends after COMMIT; the first snapshot (all new) is reported separately from the steady
state (a share of prices changed). A real DuckDB file in a temp folder is used.
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from gen_snapshot import snapshots

from priceadvisor.manifest import Manifest
from priceadvisor.records import FetchResult, RunStatus
from priceadvisor.store import connections
from priceadvisor.store.ingest import ingest
from priceadvisor.store.runs import start_run

MANIFEST = Manifest(
    id="bench",
    name="Synthetic",
    homepage="https://example.invalid",
    interval=900,
    price_basis="gpu",
    endpoints={"prices": "https://example.invalid/prices"},
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--offers", type=int, default=100_000)
    parser.add_argument("--snapshots", type=int, default=7)
    parser.add_argument("--change", type=float, default=0.05)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run(Path(tmp) / "bench.duckdb", args.offers, args.snapshots, args.change)


def run(db: Path, offers: int, count: int, change: float) -> None:
    timings, clock = [], dt.datetime(2026, 11, 1)
    stream = snapshots(offers, change)
    with connections.writer(db) as con:
        for i in range(count):
            quotes, changed = next(stream)
            clock += dt.timedelta(minutes=15)
            run_id = start_run(con, "bench")
            result = FetchResult("bench", RunStatus.OK, quotes, finished_at=clock)
            started = time.perf_counter()
            summary = ingest(con, run_id, result, MANIFEST)
            elapsed = time.perf_counter() - started
            history = con.execute("SELECT count(*) FROM core.price_intervals").fetchone()[0]
            print(
                f"snapshot {i}: {len(quotes)} quotes, {changed} changed -> new={summary.offers_new}"
                f" changed={summary.offers_changed} rejected={summary.offers_rejected}"
                f" unmapped={summary.unmapped} history={history} in {elapsed:.3f} s"
            )
            if i:
                timings.append(elapsed)
    print(
        f"steady-state ingest median {statistics.median(timings):.3f} s, "
        f"min {min(timings):.3f} s, max {max(timings):.3f} s over {len(timings)} snapshots"
    )


if __name__ == "__main__":
    main()
