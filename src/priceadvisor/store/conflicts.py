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

from priceadvisor.store import db

T = TypeVar("T")
# Conflicting writers are other daemons' short transactions: a lease or claim tries this often.
_ATTEMPTS = 20


def transaction(
    con: duckdb.DuckDBPyConnection, work: Callable[[duckdb.DuckDBPyConnection], T]
) -> T:
    """`work(con)` in one transaction: committed whole, or rolled back and re-raised."""
    with db.transaction(con):
        return work(con)


def retried(
    con: duckdb.DuckDBPyConnection,
    work: Callable[[duckdb.DuckDBPyConnection], T],
    attempts: int = _ATTEMPTS,
) -> T:
    """`transaction(con, work)`, run again while it loses a commit conflict (db.conflict_retry);
    the last conflict is raised (a duckdb.TransactionException, see `db.is_conflict`)."""
    return db.conflict_retry(attempts)(transaction)(con, work)
