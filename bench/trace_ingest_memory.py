"""Where the ingest's memory peaks: RSS and high-water mark around each statement of the timed
ingest of bench_ingest_memory.py (its second snapshot, daemon settings, batches of 50,000).

Each statement the ingest runs is wrapped: VmHWM is reset before it and read after it, so a
line shows the RSS the statement started from, its own peak and the RSS it left. The writer
session's closing CHECKPOINT is one line of its own, measured after the ingest has returned
(its freed pages returned to the system, as `ingest` does). Linux only (/proc/self).

    ./uvw run --locked python bench/trace_ingest_memory.py --offers 100000 [--top 12]
        [--block-size 262144]

`--block-size`: the block size of the fresh DuckDB file (default: DuckDB's, 262144).
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import bench_ingest_memory as bench

Step = tuple[float, float, float, str]


class TracedConnection:
    """The ingest's connection, each statement measured (everything else passed through)."""

    def __init__(self, con: Any, steps: list[Step]) -> None:
        self._con, self._steps = con, steps

    def __getattr__(self, name: str) -> Any:
        return getattr(self._con, name)

    def execute(self, sql: str, *args: Any) -> Any:
        Path("/proc/self/clear_refs").write_text("5")
        before = bench.status_mb("VmRSS")
        result = self._con.execute(sql, *args)
        label = " ".join(str(sql).split())[:72]
        self._steps.append((before, bench.status_mb("VmHWM"), bench.status_mb("VmRSS"), label))
        return result


def trace(offers: int, block_size: int) -> list[Step]:
    from priceadvisor.service.daemon import _bound_memory  # noqa: PLC0415

    _bound_memory()
    bench._import_as_the_daemon()
    from bench_ingest import MANIFEST  # noqa: PLC0415
    from gen_snapshot import base_quotes, next_snapshot  # noqa: PLC0415

    from priceadvisor.records import FetchResult, RunStatus  # noqa: PLC0415
    from priceadvisor.store import connections, ingest  # noqa: PLC0415
    from priceadvisor.store.runs import start_run  # noqa: PLC0415

    ingest.HANDOFF_BATCH = 50_000
    if block_size:  # DuckDB applies it to a file it creates only
        connections.CONNECTION_CONFIG["default_block_size"] = block_size
    steps: list[Step] = []
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "trace.duckdb"
        quotes = base_quotes(offers, 1)
        for hour in (0, 1):
            if hour:
                quotes, _ = next_snapshot(quotes, 0.02, random.Random(2))
            with connections.writer(db) as con:
                run_id = start_run(con, "bench")
            at = bench.START + dt.timedelta(hours=hour)
            # staging empties the result's list: the first snapshot is kept for the next one
            handed = quotes if hour else list(quotes)
            result = FetchResult("bench", RunStatus.OK, handed, finished_at=at)
            del handed
            if hour:
                del quotes
            steps.clear()
            with connections.writer(db, vacuum=not hour) as con:
                # the ingest's Python tables are named in its own frames, not the wrapper's
                con.execute("SET python_scan_all_frames = true")
                staged = ingest.stage_quotes(result.quotes)
                traced = TracedConnection(con, steps)
                ingest.ingest(traced, run_id, result, MANIFEST, staged=staged)  # type: ignore[arg-type]
                del staged
                Path("/proc/self/clear_refs").write_text("5")
                before = bench.status_mb("VmRSS")
            steps.append((before, bench.status_mb("VmHWM"), bench.status_mb("VmRSS"), "CHECKPOINT"))
    return steps


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--offers", type=int, default=100_000)
    parser.add_argument("--top", type=int, default=0, help="only the N highest peaks")
    parser.add_argument("--block-size", type=int, default=0, help="of the fresh file (bytes)")
    args = parser.parse_args()
    steps = trace(args.offers, args.block_size)
    shown = sorted(steps, key=lambda s: -s[1])[: args.top] if args.top else steps
    print(f"{'start':>7} {'peak':>7} {'after':>7}  statement (MB, {args.offers:,} offers)")
    for before, peak, after, label in shown:
        print(f"{before:7.1f} {peak:7.1f} {after:7.1f}  {label}")


if __name__ == "__main__":
    main()
