"""Job leases: a job that must run once per store (alert evaluation, the weekly digest, lake
maintenance) runs only in the daemon holding its row of `core.job_leases`, however many
daemons share the store.

A lease is taken or renewed in one transaction by an UPDATE that matches only a free, expired
or own row. On one DuckDB file the writers take turns, so the UPDATE decides alone. On a lake,
two daemons may both see the row free in their snapshots; both UPDATE the table, and the lake
refuses the second commit as a conflict. That daemon tries again on a fresh snapshot, where
the row is now the winner's: it did not get the lease. A holder that
dies stops renewing; its lease ends at `expires_at` and the next daemon takes it.
"""

from __future__ import annotations

import datetime as dt
import os
import socket
import uuid

import duckdb

from priceadvisor.store import transactions
from priceadvisor.store.transactions import retried

JOBS = ("alerts", "digest", "maintenance")


def holder_id() -> str:
    """This process's name in the lease table: host and PID (for people reading the row) and
    a random part (a PID can be reused after a restart)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def acquire(
    con: duckdb.DuckDBPyConnection, job: str, holder: str, ttl: float, now: dt.datetime
) -> bool:
    """Take the lease on `job` for `ttl` seconds, or renew it when `holder` has it already.
    False when another holder's lease still runs, or another daemon took it at this moment."""
    if job not in JOBS:
        raise ValueError(f"no lease for job {job!r} (known: {', '.join(JOBS)})")

    def take(con: duckdb.DuckDBPyConnection) -> tuple[int, ...] | None:
        return con.execute(
            "UPDATE core.job_leases SET holder = $holder, expires_at = $until "
            "WHERE job = $job AND (holder = $holder OR holder IS NULL OR expires_at <= $now)",
            {"holder": holder, "until": now + dt.timedelta(seconds=ttl), "job": job, "now": now},
        ).fetchone()

    try:  # a conflict may come from the other job's row: decide again on a fresh snapshot
        row = retried(con, take, attempts=5)
    except duckdb.TransactionException as exc:
        if not transactions.is_conflict(exc):
            raise
        return False  # the lease table keeps changing under us: try at the next run
    return bool(row and row[0])


def release(con: duckdb.DuckDBPyConnection, job: str, holder: str, now: dt.datetime) -> bool:
    """Give the lease up (when `holder` has it), so the next daemon need not wait for expiry."""

    def give_up(con: duckdb.DuckDBPyConnection) -> tuple[int, ...] | None:
        return con.execute(
            "UPDATE core.job_leases SET holder = NULL, expires_at = $now "
            "WHERE job = $job AND holder = $holder",
            {"job": job, "holder": holder, "now": now},
        ).fetchone()

    row = retried(con, give_up)
    return bool(row and row[0])


def current(con: duckdb.DuckDBPyConnection, job: str) -> tuple[str | None, dt.datetime]:
    """(holder, expires_at) of the job's lease."""
    row = con.execute(
        "SELECT holder, expires_at FROM core.job_leases WHERE job = ?", [job]
    ).fetchone()
    if row is None:
        raise ValueError(f"no lease row for job {job!r}")
    return row[0], row[1]
