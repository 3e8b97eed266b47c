"""At most one daemon per database: an exclusive OS lock on a file beside it.

`<db>.daemon.lock` is locked with flock(2) for the daemon's whole life and holds its PID, so a
second daemon is refused with the first one's PID. The kernel drops the lock when the process
ends however it ends (kill -9 included), so a stale file never blocks a restart; the file itself
stays (removing it would let two daemons lock two different files of the same name).

One file may have many names: a symlink, a path through a symlinked folder, a hard link, a bind
mount. So the lock file sits beside the database's real path (symlinks resolved), and an
existing database file is itself locked too (flock(2) on its inode, whatever the name: DuckDB's
own locks are fcntl(2) locks, which flock does not touch on a local file system).
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable
from pathlib import Path

from priceadvisor.store.errors import StoreError


class DaemonRunning(StoreError):
    """Another daemon holds the database."""


def lock_path(db: Path) -> Path:
    """Beside the database's real path, so every name of one file finds the same lock."""
    real = db.resolve()
    return real.with_name(real.name + ".daemon.lock")


class DaemonLock:
    """Held from `acquire` until `release` (or the end of the process). Release it only once
    this process's connections to the database are closed: closing a descriptor of the file
    also drops the fcntl(2) locks the process holds on it."""

    def __init__(self, db: Path) -> None:
        self.db = db
        self.path = lock_path(db)
        self._fds: list[int] = []
        self._database_held = False

    def acquire(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StoreError(f"cannot open the daemon lock {self.path}: {exc.strerror}") from None
        self._hold(fd, lambda: f"(PID {_read_pid(fd)})")
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self.hold_database_file()

    def hold_database_file(self) -> None:
        """The inode of an existing database, locked under whatever name it was reached by
        (a hard link, a bind mount); a database yet to be created has no other name, so the
        daemon calls this again once its first write has created the file."""
        if self._database_held:
            return
        try:
            fd = os.open(self.db, os.O_RDONLY)
        except FileNotFoundError:
            return
        except OSError as exc:
            self.release()
            raise StoreError(f"cannot open {self.db} to lock it: {exc.strerror}") from None
        self._hold(fd, lambda: "(under another name of the file)")
        self._database_held = True

    def _hold(self, fd: int, holder: Callable[[], str]) -> None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            who = holder()
            os.close(fd)
            self.release()
            raise DaemonRunning(
                f"another priceadvisor daemon {who} is already running on {self.db}"
            ) from None
        self._fds.append(fd)

    def release(self) -> None:
        self._database_held = False
        while self._fds:
            os.close(self._fds.pop())  # closing the descriptor drops the lock


def _read_pid(fd: int) -> str:
    """The holder's PID as it wrote it; 'unknown' in the instant before it has written it."""
    text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    return text if text.isdigit() else "unknown"
