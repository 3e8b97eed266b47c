"""One store as the program opens it: where it is and how long its connections wait.

Built once at the top (the CLI's state, the daemon) from the configuration, with any lake's
credentials already resolved, and passed down: nothing below reads the configuration to find
the store or its secrets.
"""

from __future__ import annotations

import datetime as dt
import threading
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import duckdb

from priceadvisor.store import connections

if TYPE_CHECKING:
    from priceadvisor.store.connections import Target
    from priceadvisor.store.lake import Lake

DEFAULT_LOCK_TIMEOUT = 10.0


class Store(NamedTuple):
    """`where` is a DuckDB file or a lake (credentials inside, never in its repr);
    `lock_timeout` bounds a wait for another process's hold on a file (see `writer`).
    (A NamedTuple: `prices` starts without the dataclasses module, cli/light.py.)"""

    where: Target
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT

    @property
    def file(self) -> Path | None:
        """The DuckDB file, or None for a lake."""
        return self.where if isinstance(self.where, Path) else None

    @property
    def lake(self) -> Lake | None:
        return None if isinstance(self.where, Path) else self.where

    def with_file(self, path: Path) -> Store:
        """The same timeouts on another DuckDB file (the demo's, the recorded responses')."""
        return Store(path, self.lock_timeout)

    def describe(self) -> str:
        """For messages: a file's path, a lake's catalog without its password."""
        return connections.describe(self.where)

    def reader(
        self,
        *,
        as_of: dt.datetime | None = None,
        writable_dir: Path | None = None,
        lock_timeout: float | None = None,
    ) -> AbstractContextManager[duckdb.DuckDBPyConnection]:
        """A sealed read-only connection (connections.reader); `lock_timeout` overrides the
        store's for a caller that must not wait as long (a web request)."""
        wait = self.lock_timeout if lock_timeout is None else lock_timeout
        return connections.reader(self.where, wait, writable_dir, as_of)

    def writer(
        self, *, give_up: threading.Event | None = None, vacuum: bool = True
    ) -> AbstractContextManager[duckdb.DuckDBPyConnection]:
        """A read-write connection for one write job (connections.writer): bounded by
        `lock_timeout`, or waiting its turn until `give_up` is set."""
        return connections.writer(self.where, self.lock_timeout, give_up, vacuum)

    def change_stamp(self, con: duckdb.DuckDBPyConnection) -> int:
        """A number that changes whenever the data may have (connections.change_stamp)."""
        return connections.change_stamp(con, self.where)
