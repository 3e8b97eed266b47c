"""Transactions: a block committed whole, and retries of a commit lost to another lake writer.

A DuckLake transaction works on a snapshot and is checked at COMMIT: when another writer
committed a change to the same table meanwhile, the commit fails (`is_conflict`) and nothing of
the transaction is kept. `retried` runs a unit of work in one transaction and, on such a
conflict, runs it again on a fresh snapshot, where it sees the winner's rows and decides anew
(a lease already taken, an outbox row already claimed). On a DuckDB file the writers take turns
and the first attempt always commits.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import ParamSpec, TypeVar

import duckdb

P = ParamSpec("P")
T = TypeVar("T")
# PostgreSQL's messages for SQLSTATE 40001 and 40P01, as DuckLake's errors quote them.
_CATALOG_ROLLBACKS = ("could not serialize access", "deadlock detected")
# Conflicting writers are other daemons' short transactions: a lease or claim tries this often.
_ATTEMPTS = 20


@contextmanager
def atomic(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """The block in one transaction: committed when it ends, rolled back when it raises."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield
        con.execute("COMMIT")
    except BaseException:
        rollback(con)  # a failed COMMIT has ended it already; rollback() stays quiet then
        raise


def run_atomic(con: duckdb.DuckDBPyConnection, work: Callable[[duckdb.DuckDBPyConnection], T]) -> T:
    """`work(con)` in one transaction: committed whole, or rolled back and re-raised."""
    with atomic(con):
        return work(con)


def rollback(con: duckdb.DuckDBPyConnection) -> None:
    """Roll back after a failure without hiding it: when the failure (a full disk, a fatal
    error) already ended the transaction, ROLLBACK raises too, and that error would mask the
    cause the caller is about to re-raise."""
    with suppress(duckdb.Error):
        con.execute("ROLLBACK")


def is_conflict(exc: Exception) -> bool:
    """A lake commit that lost to a concurrent writer's: nothing of it was written, and running
    the transaction again is the way on. Either DuckLake's own snapshot conflict check, or a
    PostgreSQL catalog rolling the transaction back because a concurrent one touched the same
    rows (a serialization failure or a deadlock, both retryable by PostgreSQL's own account),
    which DuckLake 1.5.5 passes on as a plain error: seen when a flush of inlined data and
    another writer's commit overlap. A DuckDB file never raises any of them."""
    text = str(exc)
    if isinstance(exc, duckdb.TransactionException) and "Transaction conflict" in text:
        return True
    return isinstance(exc, duckdb.Error) and any(m in text for m in _CATALOG_ROLLBACKS)


def retry_on(
    on: Callable[[Exception], bool],
    attempts: int,
    wait_initial: float = 0.1,
    wait_max: float = 5.0,
    timeout: float | None = 45.0,
) -> Callable[[Callable[P, T]], Callable[P, T]]:
    """stamina.retry, imported when a call first fails in a way it retries: read commands never
    retry, most writing calls never conflict, and importing stamina (with tenacity) is ~7-10 ms
    of a command's start-up or of the first `advise` of a process. The first attempt runs
    before stamina; after a failure `on` retries, stamina takes over with that failure as its
    own first attempt (`_replaying`), so it counts, waits, logs and times out as if it had run
    every attempt itself."""

    def decorate(work: Callable[P, T]) -> Callable[P, T]:
        @functools.wraps(work)
        def retrying(*args: P.args, **kwargs: P.kwargs) -> T:
            started = time.monotonic()
            try:
                return work(*args, **kwargs)
            except Exception as exc:
                if not on(exc):
                    raise
                first = exc
            left = None if timeout is None else timeout - (time.monotonic() - started)
            if left is not None and left <= 0:
                raise first  # stamina would stop here: its timeout counts the first attempt
            import stamina  # noqa: PLC0415 - on the first retried failure, not at start-up

            policy = stamina.retry(
                on=on, attempts=attempts, wait_initial=wait_initial, wait_max=wait_max, timeout=left
            )
            return policy(_replaying(work, first))(*args, **kwargs)

        return retrying

    return decorate


def _replaying(work: Callable[P, T], failure: Exception) -> Callable[P, T]:
    """`work`, whose first call raises `failure` (the attempt already made) and later calls
    run it; named as `work` (stamina's logs and counters name the function)."""
    replayed = False

    @functools.wraps(work)
    def again(*args: P.args, **kwargs: P.kwargs) -> T:
        nonlocal replayed
        if not replayed:
            replayed = True
            raise failure
        return work(*args, **kwargs)

    return again


def conflict_retry(
    attempts: int = 10, on: Callable[[Exception], bool] = is_conflict
) -> Callable[[Callable[P, T]], Callable[P, T]]:
    """The one policy for a commit lost to another lake writer: the work (a whole transaction)
    runs again on a fresh snapshot after a jittered backoff of up to 5 s, `attempts` times.
    `on` widens what counts as lost (a step with a failure of its own that means the same)."""
    return retry_on(on, attempts, wait_initial=0.05, wait_max=5.0, timeout=None)


# Runs a self-contained transaction (it begins, commits or rolls back) again after a conflict.
retry_conflicts = conflict_retry()


def retried(
    con: duckdb.DuckDBPyConnection,
    work: Callable[[duckdb.DuckDBPyConnection], T],
    attempts: int = _ATTEMPTS,
) -> T:
    """`run_atomic(con, work)`, run again while it loses a commit conflict (`conflict_retry`);
    the last conflict is raised (a duckdb.TransactionException, see `is_conflict`)."""
    return conflict_retry(attempts)(run_atomic)(con, work)


def replace_rows(con: duckdb.DuckDBPyConnection, table: str, keys: list[str], source: str) -> None:
    """INSERT OR REPLACE for both backends (a lake has no key to conflict on): the rows of
    `source` (a table or a parenthesised query with `table`'s columns, by name) replace those
    with the same `keys`, in one MERGE statement."""
    match = " AND ".join(f"t.{k} = s.{k}" for k in keys)
    con.execute(
        f"MERGE INTO {table} t USING {source} s ON {match} "
        "WHEN MATCHED THEN UPDATE WHEN NOT MATCHED THEN INSERT"
    )
