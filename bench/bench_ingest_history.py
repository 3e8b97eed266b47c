"""Hourly ingest against a long history: CPU, wall, peak RSS and file size after N days.

    uv run python bench/bench_ingest_history.py [--offers 100000] [--change 0.02]
        [--days 1,30,365] [--ingests 3] [--growth 24] [--quick] [--block-size 16384]

For each history length a fresh DuckDB file gets one provider's history as if it had been
fetched hourly for that many days with `--change` of the prices moving each hour:
  1. the current snapshot (bench/gen_snapshot.py) is ingested through the real ingest;
  2. the earlier intervals are written in SQL: days x 24 x change x offers change events at
     random (key, hour), each key's events cut its past into closed intervals ending where the
     current one begins, plus one `ok` fetch run per hour. The rows are then rewritten in the
     order hourly ingests would have appended them (by valid_from; the split schema's closed
     table by valid_to), so open rows lie scattered through the history as they would.
The result has the tables' shape after that many real ingests (same rows per key, same
intervals, same runs), without running 8,760 ingests.

Then a child process with the daemon's settings (service.daemon._bound_memory: DuckDB
memory_limit 128 MB, 1 thread, 2 malloc arenas) builds the next snapshots (`--change` moved)
and ingests `--ingests` of them, each in its own writer session as the daemon does (ingest,
COMMIT, CHECKPOINT without vacuum, close; the run is started in a session of its own before,
as the daemon starts it before fetching, and that session's checkpoint vacuums); it prints
the median CPU time (process) and wall time per ingest session, its RSS holding the quotes
before the first ingest, and its peak RSS during the timed ingests and run starts (VmHWM,
reset once the quotes are built; ru_maxrss would include the parent's size at fork).
Then `--growth` more hourly ingests show how the file grows per ingest. `--quick`: 20,000
offers, days 1 and 30, 12 growth ingests. `--block-size`: the block size of the fresh file and of
its compact rewrite (DuckDB's `default_block_size`; without it DuckDB's default, 262144).

Works on both schemas (single core.price_intervals table, or current/closed tables since
migration 0040), so the same script measures the code before and after.
"""

from __future__ import annotations

import argparse
import datetime as dt
import inspect
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import duckdb
from gen_snapshot import base_quotes, next_snapshot

from priceadvisor.manifest import Manifest
from priceadvisor.records import FetchResult, RunStatus
from priceadvisor.service.daemon import _bound_memory
from priceadvisor.store import connections
from priceadvisor.store.ingest import ingest
from priceadvisor.store.runs import start_run

MANIFEST = Manifest(
    id="bench",
    name="Synthetic",
    homepage="https://example.invalid",
    interval=3600,
    price_basis="gpu",
    endpoints={"prices": "https://example.invalid/prices"},
)
# The daemon's ingest session checkpoints without vacuum (collect.fetch.ingest_results); a
# checkout from before that option had none.
INGEST_SESSION = (
    {"vacuum": False} if "vacuum" in inspect.signature(connections.writer).parameters else {}
)
T0 = dt.datetime(2025, 1, 1)
SEED = 1


def now_after(hours: int) -> dt.datetime:
    return T0 + dt.timedelta(hours=hours)


def split_schema(con: object) -> bool:
    row = con.execute(  # type: ignore[attr-defined]
        "SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'core' "
        "AND table_name = 'current_offers'"
    ).fetchone()
    return bool(row[0])


# Change events -> past intervals of each key. `k` numbers the keys; an event at hour h ends
# one interval and starts the next; the key's last event is where its open interval begins.
_PAST_SQL = """
CREATE OR REPLACE TEMP TABLE _keys AS
SELECT row_number() OVER (ORDER BY region, zone, instance_type, pricing) - 1 AS k, *
FROM {current} WHERE provider = 'bench';
CREATE OR REPLACE TEMP TABLE _events AS
SELECT DISTINCT (hash(i, 'k') % {offers})::BIGINT AS k,
    (1 + hash(i, 'h') % ({hours} - 1))::BIGINT AS h
FROM range({events}) AS t(i);
CREATE OR REPLACE TEMP TABLE _past AS
SELECT k, coalesce(lag(h) OVER w, 0) AS h_from, h AS h_to, row_number() OVER w AS n
FROM _events WINDOW w AS (PARTITION BY k ORDER BY h);
"""

_CLOSED_SQL = """
SELECT c.* EXCLUDE (k{exclude}) REPLACE (
        c.price_hour_usd * (0.8 + (hash(p.k, p.n) % 40) / 100) AS price_hour_usd,
        c.price_hour_original * (0.8 + (hash(p.k, p.n) % 40) / 100) AS price_hour_original,
        ?::TIMESTAMP + to_hours(p.h_from) AS valid_from,
        ?::TIMESTAMP + to_hours(p.h_to - 1) AS last_seen,
        p.n AS opened_run, p.n AS last_run),
    ?::TIMESTAMP + to_hours(p.h_to) AS valid_to
FROM _past AS p JOIN _keys AS c USING (k)
"""


def build(db: Path, offers: int, hours: int, change: float) -> dict[str, float]:
    """The history described in the module docstring; returns how long building took."""
    started = time.perf_counter()
    with connections.writer(db) as con:
        con.execute(
            "INSERT INTO core.fetch_runs (provider, started_at, finished_at, observed_at, "
            "status, offers_seen, source) SELECT 'bench', t, t, t, 'ok', ?, 'live' "
            "FROM (SELECT ?::TIMESTAMP + to_hours(h) AS t FROM range(?) AS r(h))",
            [offers, T0, hours],
        )
        run_id = start_run(con, "bench")
        quotes = base_quotes(offers, SEED)
        ingest(
            con,
            run_id,
            FetchResult("bench", RunStatus.OK, quotes, finished_at=now_after(hours)),
            MANIFEST,
        )
        if hours > 1:
            _write_past(con, offers, hours, change)
    return {"build_s": time.perf_counter() - started}


def _write_past(con: object, offers: int, hours: int, change: float) -> None:
    split = split_schema(con)
    current = "core.current_offers" if split else "core.price_intervals"
    events = round(offers * (hours - 1) * change)
    sql = _PAST_SQL.format(current=current, offers=offers, hours=hours, events=events)
    run = con.execute  # type: ignore[attr-defined]
    run(sql)
    closed = _CLOSED_SQL.format(exclude="" if split else ", valid_to")
    target = "core.price_closed" if split else "core.price_intervals"
    run(f"INSERT INTO {target} BY NAME {closed}", [T0, T0, T0])
    # the open interval begins at its key's last change
    run(
        f"""UPDATE {current} AS c SET valid_from = ?::TIMESTAMP + to_hours(e.h)
        FROM (SELECT k, max(h) AS h FROM _events GROUP BY k) AS e JOIN _keys AS key USING (k)
        WHERE c.provider = 'bench' AND c.region = key.region AND c.zone = key.zone
          AND c.instance_type = key.instance_type AND c.pricing = key.pricing""",
        [T0],
    )
    run(f"UPDATE {current} SET first_seen = ?", [T0])
    _reorder(con, current, "valid_from")
    if split:
        _reorder(con, "core.price_closed", "valid_to")


def _reorder(con: object, table: str, order: str) -> None:
    """Rewrite a table in the order hourly ingests append its rows."""
    run = con.execute  # type: ignore[attr-defined]
    run(f"CREATE OR REPLACE TEMP TABLE _copy AS SELECT * FROM {table} ORDER BY {order}")
    run(f"DELETE FROM {table}")
    run(f"INSERT INTO {table} SELECT * FROM _copy")
    run("DROP TABLE _copy")
    run("CHECKPOINT")


def sizes(db: Path) -> dict[str, float]:
    with connections.writer(db) as con:
        con.execute("CHECKPOINT")
        total, free = con.execute(
            "SELECT total_blocks, free_blocks FROM pragma_database_size()"
        ).fetchone()
        rows = con.execute("SELECT count(*), count(valid_to) FROM core.price_intervals").fetchone()
    return {
        "file_mb": db.stat().st_size / 2**20,
        "compact_mb": compact_size(db),
        "free_share": free / total if total else 0.0,
        "intervals": rows[0],
        "closed": rows[1],
    }


def compact_size(db: Path, blocks: int | None = None) -> float:
    """The size of the same data rewritten into a fresh file (COPY FROM DATABASE) with `blocks`
    bytes a block (default: the file's own), in MB."""
    copy = db.with_suffix(".compact.duckdb")
    con = duckdb.connect()
    try:
        con.execute(
            f"ATTACH '{db}' AS src (READ_ONLY); "
            f"ATTACH '{copy}' AS dst (BLOCK_SIZE {blocks or block_size(db)})"
        )
        con.execute("COPY FROM DATABASE src TO dst")
        con.execute("DETACH dst")
        return copy.stat().st_size / 2**20
    finally:
        con.close()
        copy.unlink(missing_ok=True)


def block_size(db: Path) -> int:
    with connections.writer(db) as con:
        found = con.execute("SELECT block_size FROM pragma_database_size()").fetchone()
    return int(found[0]) if found else 0


def proc_status_mb(field: str) -> float:
    """A memory figure of this process from /proc/self/status (Linux), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def measure(db: str, offers: int, hours: int, change: float, ingests: int, growth: int) -> None:
    """In the child: the daemon's bounds, then timed hourly ingests, then growth ingests."""
    _bound_memory()
    path = Path(db)
    with connections.writer(path):
        pass  # migrations, catalogs and views: once per process, as in the daemon
    rng = random.Random(SEED + hours)
    quotes = base_quotes(offers, SEED)
    quotes, _ = next_snapshot(quotes, change, rng)
    ready = proc_status_mb("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM: the peak from here on
    cpu, wall, summaries = [], [], []
    for i in range(ingests + growth):
        if i:
            quotes, _ = next_snapshot(quotes, change, rng)
        with connections.writer(path) as con:  # the daemon starts a run before fetching
            run_id = start_run(con, "bench")
        started_cpu, started = time.process_time(), time.perf_counter()
        with connections.writer(path, **INGEST_SESSION) as con:
            result = FetchResult(
                "bench", RunStatus.OK, quotes, finished_at=now_after(hours + 1 + i)
            )
            summary = ingest(con, run_id, result, MANIFEST)
        if i < ingests:
            cpu.append(time.process_time() - started_cpu)
            wall.append(time.perf_counter() - started)
            summaries.append(f"{summary.offers_changed} changed, {summary.status}")
        if i == ingests - 1:
            peak = proc_status_mb("VmHWM")
            size_after = path.stat().st_size / 2**20
    print(
        json.dumps(
            {
                "cpu_s": statistics.median(cpu),
                "wall_s": statistics.median(wall),
                "peak_rss_mb": peak,
                "ready_rss_mb": ready,
                "runs": summaries,
                "size_after_timed_mb": size_after,
            }
        )
    )


def point(tmp: Path, offers: int, days: float, args: argparse.Namespace, growth: int) -> None:
    hours = max(1, round(days * 24))
    db = tmp / f"history-{hours}h.duckdb"
    built = build(db, offers, hours, args.change)
    before = sizes(db)
    child = subprocess.run(
        [sys.executable, __file__, "--measure", str(db), str(offers), str(hours),
         str(args.change), str(args.ingests), str(growth)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    measured = json.loads(child.stdout.strip().splitlines()[-1])
    after = sizes(db)
    per_ingest = (after["file_mb"] - measured["size_after_timed_mb"]) / growth if growth else 0
    print(
        f"{days:g} days ({hours} h), {block_size(db) // 1024} KiB blocks: "
        f"{before['intervals']:,} intervals "
        f"({before['closed']:,} closed), built in {built['build_s']:.0f} s, file "
        f"{before['file_mb']:.1f} MB ({before['free_share']:.0%} free) | hourly ingest: CPU "
        f"{measured['cpu_s']:.3f} s, wall {measured['wall_s']:.3f} s, peak RSS "
        f"{measured['peak_rss_mb']:.0f} MB ({measured['ready_rss_mb']:.0f} MB holding the quotes "
        f"before) | after {args.ingests}+{growth} more ingests: "
        f"{after['file_mb']:.1f} MB ({after['free_share']:.0%} free; "
        f"{after['compact_mb']:.1f} MB rewritten into a fresh file), "
        f"{per_ingest:+.2f} MB per ingest"
    )
    db.unlink()


def main() -> None:
    if sys.argv[1:2] == ["--measure"]:
        db, offers, hours, change, ingests, growth = sys.argv[2:8]
        measure(db, int(offers), int(hours), float(change), int(ingests), int(growth))
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--offers", type=int, default=100_000)
    parser.add_argument("--change", type=float, default=0.02)
    parser.add_argument("--days", default="1,30,365")
    parser.add_argument("--ingests", type=int, default=3)
    parser.add_argument("--growth", type=int, default=24)
    parser.add_argument("--dir", type=Path, help="where the files go (default: a temp folder)")
    parser.add_argument("--quick", action="store_true", help="20,000 offers, days 1 and 30")
    parser.add_argument("--block-size", type=int, default=0, help="of the fresh file (bytes)")
    args = parser.parse_args()
    if args.block_size:  # DuckDB applies it to a file it creates only
        connections.CONNECTION_CONFIG["default_block_size"] = args.block_size
    offers, days = args.offers, args.days
    growth = args.growth
    if args.quick:
        offers, days, growth = 20_000, "1,30", 12
    print(
        f"{offers:,} offers, {args.change:.0%} of prices change per hour; the daemon's DuckDB "
        f"settings in the measuring process"
    )
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        for day in days.split(","):
            point(Path(tmp), offers, float(day), args, growth)


if __name__ == "__main__":
    main()
