"""Start-up benchmark: `priceadvisor prices --gpu H100 --pricing spot` in a fresh process, beside
raw DuckDB running the same SQL on the same file in a fresh process (the floor: Python, the
duckdb import and the query). Runs are interleaved (CLI, raw, CLI, raw, ...) so a busy machine
slows both alike; medians and ranges are reported.

    uv run python bench/bench_startup.py [--offers 10000 1000000] [--runs 9] [--quick]

--src DIR: time the CLI of another checkout's src/ (e.g. `git archive REV src providers db
templates | tar -x -C DIR` for a before/after), run as `python -m priceadvisor` either way.

--quick: 10k offers and 3 runs, a smoke test for CI. The databases are built once in a temp
folder from one synthetic snapshot (bench/gen_snapshot.py), through the real ingest.

Both processes run with bytecode caching on (in a temp PYTHONPYCACHEPREFIX, filled by a warm-up
run), as an installed package runs: with PYTHONDONTWRITEBYTECODE=1 every start recompiles
~300 modules from source, which alone costs ~0.5 s here and says nothing about the code.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from bench_ingest import MANIFEST
from gen_snapshot import snapshots

from priceadvisor.cli import filters
from priceadvisor.cli import prices as layout
from priceadvisor.models import FetchResult, RunStatus
from priceadvisor.store import db as store
from priceadvisor.store import reads
from priceadvisor.store.ingest import ingest

CLI_ARGS = ["prices", "--gpu", "H100", "--pricing", "spot"]
TABLE_ROWS = 50  # what the CLI's table asks for without --limit

RAW = """
import json, sys
import duckdb
con = duckdb.connect(sys.argv[1], read_only=True)
rows = con.execute(sys.argv[2], json.loads(sys.argv[3])).fetchall()
print(len(rows))
"""


def build(db: Path, offers: int) -> None:
    quotes, _ = next(snapshots(offers, 0.0))
    with store.writer(db) as con:
        run_id = store.start_run(con, "bench")
        result = FetchResult("bench", RunStatus.OK, quotes, finished_at=dt.datetime(2026, 11, 1))
        ingest(con, run_id, result, MANIFEST)


def cli_sql(db: Path) -> tuple[str, list[Any]]:
    """The exact SQL and parameters the CLI runs for CLI_ARGS (captured from reads.prices)."""
    seen: list[tuple[str, list[Any]]] = []
    original = reads.fetch_table

    def capture(con: Any, sql: str, params: list[Any] | None = None) -> reads.Table:
        seen.append((sql, list(params or [])))
        return original(con, sql, params)

    reads.fetch_table = capture  # type: ignore[assignment]
    try:
        flt = reads.OfferFilter(gpu_models=filters.gpu_models("H100"), pricing="spot")
        with store.reader(db) as con:
            reads.prices(con, flt, "gpu-hour", TABLE_ROWS, layout.view_columns(layout.DEFAULT))
    finally:
        reads.fetch_table = original  # type: ignore[assignment]
    return seen[0]


def timed(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, env=env)
    return time.perf_counter() - started


def bytecode_env(cache: Path, src: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(cache)
    if src is not None:  # PYTHONPATH comes before the installed (editable) package
        env["PYTHONPATH"] = str(src.resolve())
    return env


def compare(db: Path, runs: int, env: dict[str, str]) -> dict[str, list[float]]:
    sql, params = cli_sql(db)
    cli = [sys.executable, "-m", "priceadvisor", "--db", str(db), *CLI_ARGS]
    raw = [sys.executable, "-c", RAW, str(db), sql, json.dumps(params)]
    timed(cli, env), timed(raw, env)  # fill the bytecode and page caches for both
    times: dict[str, list[float]] = {"cli": [], "raw": []}
    for _ in range(runs):
        times["cli"].append(timed(cli, env))
        times["raw"].append(timed(raw, env))
    return times


def report(offers: int, times: dict[str, list[float]]) -> None:
    cli, raw = statistics.median(times["cli"]), statistics.median(times["raw"])
    print(
        f"{offers:>9,} offers: CLI median {cli:.3f} s ({min(times['cli']):.3f}-"
        f"{max(times['cli']):.3f}), raw DuckDB median {raw:.3f} s ({min(times['raw']):.3f}-"
        f"{max(times['raw']):.3f}), CLI/raw {cli / raw:.2f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--offers", type=int, nargs="+", default=[10_000, 1_000_000])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--src", type=Path, help="time the CLI from this src/ folder")
    parser.add_argument("--quick", action="store_true", help="10k offers, 3 runs")
    args = parser.parse_args()
    sizes, runs = ([10_000], 3) if args.quick else (args.offers, args.runs)
    with tempfile.TemporaryDirectory() as tmp:
        env = bytecode_env(Path(tmp) / "pycache", args.src)
        for offers in sizes:
            db = Path(tmp) / f"offers-{offers}.duckdb"
            build(db, offers)
            report(offers, compare(db, runs, env))


if __name__ == "__main__":
    main()
