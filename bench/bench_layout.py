"""The storage order of core.current_offers over a history of hourly ingests: after each one, how
many rows `prices --gpu H100 --pricing spot` scans (DuckDB's profile: row groups the zone maps
did not skip), and when the fetch session's rewrite (store.clustering.keep_clustered) ran and how
long it took.

    uv run python bench/bench_layout.py [--offers 300000] [--hours 12] [--change 0.04] [--quick]

Each hour is one synthetic snapshot (bench/gen_snapshot.py) with `--change` of its prices moved,
ingested through the real ingest and then store.clustering.keep_clustered, as collect.fetch does.
--quick: the default 300,000 offers (over two row groups once rejects are dropped, so the
rewrite applies), 6 hours.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import duckdb

sys.path.insert(0, str(Path(__file__).parent))

from bench_ingest import MANIFEST
from bench_startup import cli_sql
from gen_snapshot import snapshots

from priceadvisor.records import FetchResult, RunStatus
from priceadvisor.store import clustering as layout
from priceadvisor.store import connections
from priceadvisor.store.ingest import ingest
from priceadvisor.store.runs import start_run

T0 = dt.datetime(2026, 11, 1)


def scanned(db: Path, sql: str, params: list[Any]) -> tuple[int, int]:
    """Rows of core.current_offers the CLI's query scans, and rows the table holds."""
    profile = db.with_suffix(".profile.json")
    with duckdb.connect(str(db), read_only=True) as con:
        total = con.execute("SELECT count(*) FROM core.current_offers").fetchone()
        con.execute("PRAGMA enable_profiling = 'json'")
        con.execute(f"PRAGMA profiling_output = '{profile}'")
        con.execute(sql, params).fetchall()
        con.execute("PRAGMA disable_profiling")
    return _scan_rows(json.loads(profile.read_text())), int(total[0]) if total else 0


def _scan_rows(node: dict[str, Any]) -> int:
    own = 0
    if "current_offers" in str(node.get("extra_info", {}).get("Table", "")):
        own = int(node.get("operator_rows_scanned", 0))
    return own + sum(_scan_rows(child) for child in node.get("children", []))


def hour(db: Path, quotes: list[Any], at: int) -> tuple[float, float | None]:
    """One ingest then the layout check: the ingest's seconds, the rewrite's (None: none)."""
    with connections.writer(db) as con:
        run_id = start_run(con, "bench")
        result = FetchResult("bench", RunStatus.OK, quotes, finished_at=T0 + dt.timedelta(hours=at))
        started = time.perf_counter()
        ingest(con, run_id, result, MANIFEST)
        ingested = time.perf_counter() - started
        started = time.perf_counter()
        rewrote = layout.keep_clustered(con)
        return ingested, (time.perf_counter() - started) if rewrote else None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--offers", type=int, default=300_000)
    parser.add_argument("--hours", type=int, default=12)
    parser.add_argument("--change", type=float, default=0.04)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    offers, hours = (300_000, 6) if args.quick else (args.offers, args.hours)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "layout.duckdb"
        feed = snapshots(offers, args.change)
        for at in range(hours + 1):
            quotes, changed = next(feed)
            ingested, rewrite = hour(db, quotes, at)
            if at == 0:
                sql, params = cli_sql(db)
            rows, total = scanned(db, sql, params)
            note = f"rewritten in order in {rewrite:.2f} s" if rewrite is not None else ""
            print(
                f"hour {at:>2}: {changed:>7,} prices changed, ingest {ingested:.2f} s, "
                f"H100 spot query scans {rows:>9,} of {total:,} rows {note}"
            )


if __name__ == "__main__":
    main()
