"""A query that stops when asked: after a timeout, or at once on Ctrl-C.

DuckDB runs a statement without returning to Python, so a SIGINT's KeyboardInterrupt would wait
for the statement to end. The statement (and the fetching of its rows) runs in a worker thread
instead, while the main thread waits in an interruptible join: past the timeout, or when Ctrl-C
arrives, it calls DuckDB's `interrupt()` on the connection, which cancels the statement from
any thread, waits for the worker to unwind, and reports why it stopped.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

import duckdb

T = TypeVar("T")


class QueryTimedOut(Exception):
    """The query ran past its timeout and was interrupted."""


class QueryInterrupted(Exception):
    """Ctrl-C: the query was interrupted."""


def run_stoppable(con: duckdb.DuckDBPyConnection, work: Callable[[], T], timeout: float) -> T:
    """`work()` (statements on `con`) with a deadline; Ctrl-C interrupts it at once."""
    outcome: list[T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            outcome.append(work())
        except BaseException as exc:  # handed to the main thread, which raises it
            failure.append(exc)

    worker = threading.Thread(target=run, name="sql query", daemon=True)
    worker.start()
    stop: type[Exception] | None = None
    try:
        worker.join(timeout)
        if worker.is_alive():
            stop = QueryTimedOut
    except KeyboardInterrupt:
        stop = QueryInterrupted
    if stop is not None:
        con.interrupt()
        worker.join()
        if not outcome:
            raise stop
    if failure:
        raise failure[0]
    return outcome[0]
