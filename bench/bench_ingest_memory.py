"""Peak memory of an hourly ingest with the daemon's settings: the quotes handed to DuckDB in
batches (store.ingest.HANDOFF_BATCH) beside the same ingest handed over in one go.

    uv run python bench/bench_ingest_memory.py [--offers 100000] [--batches 50000 0] [--pairs 3]
        [--held] [--block-size 16384]

Each measurement is a fresh child process with the daemon's DuckDB and allocator bounds
(service.daemon._bound_memory) and the modules `priceadvisor run` imports (the CLI's and the
web server's too): it builds a snapshot of `--offers` quotes (bench/gen_snapshot.py),
ingests it into a fresh DuckDB file (the first, all-new ingest), starts the next run in a session
of its own (as the daemon starts runs before fetching), builds the next snapshot (2 % of the
prices moved) and ingests it in a writer session as the daemon's fetch does (no vacuum at the
checkpoint). Reported per child: RSS holding the quotes before the timed ingest, the peak RSS
(VmHWM, reset just before it) over the timed session, and the session's CPU time. A batch
size of 0 means one go (a batch as large as the snapshot), the comparator. Children run
alternately (batched, one go, batched, ...), `--pairs` times; medians at the end.

The timed result is handed over as the fetch path hands it (collect.fetch.ingest_results): its
quotes staged (store.ingest.stage_quotes), the result holding the only list of them. With
`--held` the benchmark keeps its own list through the ingest as well (what it did before
staging; no adapter does). `--block-size`: the block size of the fresh DuckDB file (DuckDB's
`default_block_size`; without it DuckDB's default, 262144).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

START = dt.datetime(2026, 11, 1)


def status_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise SystemExit(f"no {field} in /proc/self/status (Linux only)")


def _ingest(ingest_module: Any, con: Any, run_id: int, result: Any) -> Any:
    """As the fetch path (collect.fetch.ingest_results) hands a result to the store: its quotes
    staged first where the tree has staging (a tree before it ingests the result's list)."""
    from bench_ingest import MANIFEST  # noqa: PLC0415

    stage = getattr(ingest_module, "stage_quotes", None)
    if stage is None:
        return ingest_module.ingest(con, run_id, result, MANIFEST)
    return ingest_module.ingest(con, run_id, result, MANIFEST, staged=stage(result.quotes))


def _import_as_the_daemon() -> None:
    """What `priceadvisor run` has imported before its first fetch besides the daemon's module:
    the CLI (Typer, Rich) and the web server's (uvicorn, Starlette, the dashboard's routes), so
    the process holds what the daemon's does."""
    import priceadvisor.cli.app  # noqa: PLC0415
    import priceadvisor.service.dashboard  # noqa: PLC0415
    import priceadvisor.service.opencost  # noqa: PLC0415
    import priceadvisor.service.web  # noqa: F401, PLC0415


def child(offers: int, batch: int, held: bool, block_size: int) -> dict[str, float]:
    """One measurement, in this (fresh) process. `held`: the producer keeps its own list of
    the quotes through the ingest (no adapter does: the fetch path's result holds the only
    list); otherwise the result holds the only reference, as in the fetch path."""
    from priceadvisor.service.daemon import _bound_memory  # noqa: PLC0415 - child only

    _bound_memory()
    _import_as_the_daemon()
    from gen_snapshot import base_quotes, next_snapshot  # noqa: PLC0415

    from priceadvisor.records import FetchResult, RunStatus  # noqa: PLC0415
    from priceadvisor.store import connections  # noqa: PLC0415
    from priceadvisor.store import ingest as ingest_module  # noqa: PLC0415
    from priceadvisor.store.runs import start_run  # noqa: PLC0415

    ingest_module.HANDOFF_BATCH = batch or max(offers, 1)
    if block_size:  # DuckDB applies it to a file it creates only
        connections.CONNECTION_CONFIG["default_block_size"] = block_size
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.duckdb"
        quotes = base_quotes(offers, 1)
        for hour, vacuum in ((0, True), (1, False)):
            if hour:
                quotes, _ = next_snapshot(quotes, 0.02, random.Random(2))
            with connections.writer(db) as con:
                run_id = start_run(con, "bench")
            holding = status_mb("VmRSS")
            Path("/proc/self/clear_refs").write_text("5")  # VmHWM from here on
            cpu = time.process_time()
            # The result's list is staged away by the ingest: the first snapshot's own list is
            # kept for the next one, and a `held` producer keeps its own through the ingest.
            handed = quotes if hour and not held else list(quotes)
            result = FetchResult(
                "bench", RunStatus.OK, handed, finished_at=START + dt.timedelta(hours=hour)
            )
            if hour and not held:
                del quotes, handed  # as the fetch path: the list lives in the result alone
            with connections.writer(db, vacuum=vacuum) as con:
                summary = _ingest(ingest_module, con, run_id, result)
        measured = {
            "held": holding,
            "peak": status_mb("VmHWM"),
            "cpu": time.process_time() - cpu,
            "changed": summary.offers_changed,
        }
        assert summary.status == RunStatus.OK, summary.error
        with connections.writer(db) as con:  # after the figures: what the file was made with
            found = con.execute("SELECT block_size FROM pragma_database_size()").fetchone()
        return measured | {"block": found[0] if found else 0}


def measure(offers: int, batch: int, held: bool, block_size: int) -> dict[str, float]:
    command = [sys.executable, __file__, "--child", str(offers), str(batch), str(int(held))]
    command.append(str(block_size))
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"child failed:\n{done.stderr}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def label(batch: int) -> str:
    return "one go" if batch == 0 else f"batches of {batch:,}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--offers", type=int, default=100_000)
    parser.add_argument("--batches", type=int, nargs="+", default=[50_000, 0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument(
        "--held", action="store_true", help="the producer keeps its own list of the quotes"
    )
    parser.add_argument(
        "--block-size", type=int, default=0, help="block size of the fresh file (bytes)"
    )
    parser.add_argument("--child", type=int, nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        offers, batch, held, block_size = args.child
        print(json.dumps(child(offers, batch, bool(held), block_size)))
        return
    runs: dict[int, list[dict[str, float]]] = {batch: [] for batch in args.batches}
    for _ in range(args.pairs):
        for batch in args.batches:
            got = measure(args.offers, batch, args.held, args.block_size)
            runs[batch].append(got)
            print(
                f"{args.offers:,} offers, {label(batch)}, {got['block'] / 1024:.0f} KiB blocks: "
                f"holding the quotes {got['held']:.0f} MB, peak {got['peak']:.0f} MB, "
                f"CPU {got['cpu']:.3f} s ({got['changed']:.0f} changed)"
                f"; load {os.getloadavg()[0]:.1f}",
                flush=True,
            )
    for batch, measured in runs.items():
        peak = statistics.median(m["peak"] for m in measured)
        cpu = statistics.median(m["cpu"] for m in measured)
        held = statistics.median(m["held"] for m in measured)
        print(
            f"median, {label(batch)}: peak {peak:.0f} MB ({held:.0f} MB holding the quotes), "
            f"CPU {cpu:.3f} s over {len(measured)} runs"
        )


if __name__ == "__main__":
    main()
