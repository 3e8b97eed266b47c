"""Run bookkeeping: a fetch run recorded as `running` before its network work, and the runs
that ended without finishing (failed, given up, abandoned by a process that is gone)."""

from __future__ import annotations

import os
import socket

import duckdb

from priceadvisor.clock import utcnow
from priceadvisor.store.ids import next_id
from priceadvisor.store.transactions import retried


def start_runs(
    con: duckdb.DuckDBPyConnection, providers: list[str], source: str = "live"
) -> list[int]:
    """Record a run per provider as `running` before its network work, so a crash leaves a
    trace; in one transaction, which also logs the ids taken (store.ids), run again on a lake
    when another writer's commit wins. `source` is 'live' or 'recorded' (the shipped
    responses): recorded never passes for live."""
    return retried(con, lambda c: [_start_run(c, provider, source) for provider in providers])


def start_run(con: duckdb.DuckDBPyConnection, provider: str, source: str = "live") -> int:
    """`start_runs` for one provider."""
    return start_runs(con, [provider], source)[0]


def _start_run(con: duckdb.DuckDBPyConnection, provider: str, source: str) -> int:
    run_id = next_id(con, "core.fetch_run_ids")
    con.execute(
        "INSERT INTO core.fetch_runs (run_id, provider, started_at, status, source, pid, host) "
        "VALUES (?, ?, ?, 'running', ?, ?, ?)",
        [run_id, provider, utcnow(), source, os.getpid(), socket.gethostname()],
    )
    return run_id


def abandon_own_runs(con: duckdb.DuckDBPyConnection) -> int:
    """At shutdown: runs this process started and will not finish."""
    row = con.execute(
        "UPDATE core.fetch_runs SET status = 'abandoned', finished_at = ?, "
        "error = 'abandoned at shutdown' WHERE status = 'running' AND pid = ? AND host = ?",
        [utcnow(), os.getpid(), socket.gethostname()],
    ).fetchone()
    return int(row[0]) if row else 0


def fail_runs(con: duckdb.DuckDBPyConnection, run_ids: list[int], status: str, error: str) -> int:
    """Finish the runs among `run_ids` still `running` (their ingest failed or was given up)."""
    row = con.execute(
        "UPDATE core.fetch_runs SET status = ?, finished_at = ?, error = ? "
        "WHERE status = 'running' AND list_contains(?, run_id)",
        [status, utcnow(), error, run_ids],
    ).fetchone()
    return int(row[0]) if row else 0


def mark_abandoned_runs(con: duckdb.DuckDBPyConnection) -> int:
    """Runs left `running` by a process of this host that no longer exists were abandoned."""
    host = socket.gethostname()
    rows = con.execute(
        "SELECT run_id, pid FROM core.fetch_runs WHERE status = 'running' AND host = ?", [host]
    ).fetchall()
    dead = [run_id for run_id, pid in rows if not _alive(pid)]
    if dead:
        con.execute(
            "UPDATE core.fetch_runs SET status = 'abandoned', finished_at = ?, "
            "error = 'the process ended before the run finished' WHERE list_contains(?, run_id)",
            [utcnow(), dead],
        )
    return len(dead)


def _alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
