"""Write conflicts between concurrent writers of one lake.

A DuckLake transaction works on a snapshot and is checked at COMMIT: when another writer
committed a change to the same table meanwhile (an UPDATE or DELETE of that table's rows), the
commit fails with "Transaction conflict" and nothing of the transaction is kept. Concurrent
INSERTs into one table do not conflict. A DuckDB file has one writer at a time, so there a
transaction never meets this.

`transaction` runs a unit of work in one transaction and turns that failure into
`WriteConflict`; `retried` runs it again in a fresh snapshot until it commits, which is right
for work that decides from what it reads (the retry sees the other writer's rows).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress
from typing import TypeVar

import duckdb
import stamina

from priceadvisor.store.errors import StoreError, first_line

T = TypeVar("T")
# How DuckLake words a lost commit ("Transaction conflict - attempting to ...").
_CONFLICT = "conflict"
# Conflicting writers are other daemons' ingests (seconds at most): back off up to a few
# seconds, give up after about a minute of losing.
_ATTEMPTS = 20
_WAIT_MAX = 5.0


class WriteConflict(StoreError):
    """A concurrent writer changed the same table first; the transaction was rolled back."""


def is_conflict(exc: BaseException) -> bool:
    return isinstance(exc, duckdb.TransactionException) and _CONFLICT in str(exc).lower()


def transaction(
    con: duckdb.DuckDBPyConnection, work: Callable[[duckdb.DuckDBPyConnection], T]
) -> T:
    """`work(con)` in one transaction: committed whole, or rolled back and re-raised (a commit
    conflict as WriteConflict)."""
    con.execute("BEGIN TRANSACTION")
    try:
        result = work(con)
        con.execute("COMMIT")
    except duckdb.TransactionException as exc:
        _rollback(con)
        if is_conflict(exc):
            raise WriteConflict(f"a concurrent write won: {first_line(exc)}") from None
        raise
    except BaseException:
        _rollback(con)
        raise
    return result


def retried(
    con: duckdb.DuckDBPyConnection,
    work: Callable[[duckdb.DuckDBPyConnection], T],
    attempts: int = _ATTEMPTS,
) -> T:
    """`transaction(con, work)`, run again (with jittered backoff) while it loses a conflict."""
    for attempt in stamina.retry_context(
        on=WriteConflict, attempts=attempts, wait_initial=0.05, wait_max=_WAIT_MAX, timeout=None
    ):
        with attempt:
            return transaction(con, work)
    raise AssertionError("unreachable: stamina re-raises the last conflict")  # pragma: no cover


def _rollback(con: duckdb.DuckDBPyConnection) -> None:
    """A failed COMMIT has already ended the transaction: ROLLBACK may raise, and must not hide
    the error being handled."""
    with suppress(duckdb.Error):
        con.execute("ROLLBACK")
