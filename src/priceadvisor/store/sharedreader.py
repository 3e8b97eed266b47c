"""One read-only instance of the database file shared by the dashboard's worker threads.

Opening a DuckDB file costs a request more than most of its queries, and in one process every
opening takes the process's turn (store.connections), so a reader per request made the
dashboard answer one request at a time. Here concurrent requests share one sealed read-only
instance, each with a cursor of its own (cursors of one instance run their queries in
parallel). The instance is
closed, and the process's turn handed back, as soon as:

- no request uses it (an idle dashboard holds no lock on the file);
- anyone else in the process waits for the turn (the daemon's ingest, a download's own
  connection): new requests wait while the running ones finish, the waiter goes first, and
  the next request opens a fresh instance that sees what it wrote;
- the file was replaced or changed (its inode or modification time differs from the opening);
- it has admitted requests for LEASE seconds: another process's writer (the daemon beside
  `priceadvisor serve`) gets a gap of REOPEN_PAUSE to take the file.

A request that cannot get an instance within `lock_timeout` gets StoreError (503 upstream).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from priceadvisor.store import connections as store
from priceadvisor.store.errors import StoreError

LEASE = 2.0
REOPEN_PAUSE = 0.3
_POLL = 0.01


class SharedReader:
    def __init__(self, path: Path, lock_timeout: float) -> None:
        self.path = path
        self.lock_timeout = lock_timeout
        self._changed = threading.Condition()
        self._con: duckdb.DuckDBPyConnection | None = None
        self._users = 0
        self._opened = 0.0
        self._identity: tuple[int, int] | None = None
        self._lease_ended = False
        self.openings = 0  # how many instances were opened (tests and benchmarks read it)

    @contextmanager
    def cursor(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A cursor on the shared instance for one request; released when the block ends."""
        cursor = self._enter(time.monotonic() + self.lock_timeout)
        try:
            yield cursor
        finally:
            self._leave(cursor)

    def _enter(self, deadline: float) -> duckdb.DuckDBPyConnection:
        with self._changed:
            while self._con is not None and not self._admits():
                if not self._changed.wait(deadline - time.monotonic()):
                    raise StoreError(f"{self.path} stayed busy past {self.lock_timeout:.0f} s")
            if self._con is None:
                self._open(deadline)
            assert self._con is not None
            self._users += 1
            return self._con.cursor()

    def _leave(self, cursor: duckdb.DuckDBPyConnection) -> None:
        with self._changed:
            cursor.close()
            self._users -= 1
            if self._users == 0 and self._con is not None:
                self._lease_ended = time.monotonic() - self._opened >= LEASE
                store.close_shared_reader(self._con)
                self._con = None
            self._changed.notify_all()

    def _admits(self) -> bool:
        return (
            not store.turn_wanted()
            and time.monotonic() - self._opened < LEASE
            and _identity(self.path) == self._identity
        )

    def _open(self, deadline: float) -> None:
        """Open on the process's turn, after any thread already waiting for it."""
        if self._lease_ended:
            time.sleep(REOPEN_PAUSE)
        while store.turn_wanted() and time.monotonic() < deadline:
            time.sleep(_POLL)
        remaining = max(0.0, deadline - time.monotonic())
        self._identity = _identity(self.path)
        self._con = store.open_shared_reader(self.path, remaining)
        self._opened = time.monotonic()
        self.openings += 1


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_ino, stat.st_mtime_ns
