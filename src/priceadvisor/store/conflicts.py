"""Read-decide-write transactions that may lose a commit to a concurrent writer of a lake.

A DuckLake transaction works on a snapshot and is checked at COMMIT: when another writer
committed a change to the same table meanwhile, the commit fails (`db.is_conflict`) and nothing
of the transaction is kept. `retried` runs a unit of work in one transaction and, on such a
conflict, runs it again on a fresh snapshot, where it sees the winner's rows and decides anew
(a lease already taken, an outbox row already claimed). On a DuckDB file the writers take turns
and the first attempt always commits.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import duckdb
import stamina

from priceadvisor.store import db

T = TypeVar("T")
# Conflicting writers are other daemons' short transactions: back off up to a few seconds.
_ATTEMPTS = 20
_WAIT_MAX = 5.0


def transaction(
    con: duckdb.DuckDBPyConnection, work: Callable[[duckdb.DuckDBPyConnection], T]
) -> T:
    """`work(con)` in one transaction: committed whole, or rolled back and re-raised."""
    con.execute("BEGIN TRANSACTION")
    try:
        result = work(con)
        con.execute("COMMIT")
    except BaseException:
        db.rollback(con)  # a failed COMMIT has ended it already; rollback() stays quiet then
        raise
    return result


def retried(
    con: duckdb.DuckDBPyConnection,
    work: Callable[[duckdb.DuckDBPyConnection], T],
    attempts: int = _ATTEMPTS,
) -> T:
    """`transaction(con, work)`, run again (jittered backoff) while it loses a commit conflict;
    the last conflict is raised (a duckdb.TransactionException, see `db.is_conflict`)."""
    for attempt in stamina.retry_context(
        on=db.is_conflict, attempts=attempts, wait_initial=0.05, wait_max=_WAIT_MAX, timeout=None
    ):
        with attempt:
            return transaction(con, work)
    raise AssertionError("unreachable: stamina re-raises the last conflict")  # pragma: no cover
