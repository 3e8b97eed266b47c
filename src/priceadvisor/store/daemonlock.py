"""At most one daemon per database: an exclusive OS lock on a file beside it.

`<db>.daemon.lock` is locked with flock(2) for the daemon's whole life and holds its PID, so a
second daemon is refused with the first one's PID. The kernel drops the lock when the process
ends however it ends (kill -9 included), so a stale file never blocks a restart; the file itself
stays (removing it would let two daemons lock two different files of the same name).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from priceadvisor.store.errors import StoreError


class DaemonRunning(StoreError):
    """Another daemon holds the database."""


def lock_path(db: Path) -> Path:
    return db.with_name(db.name + ".daemon.lock")


class DaemonLock:
    """Held from `acquire` until `release` (or the end of the process)."""

    def __init__(self, db: Path) -> None:
        self.db = db
        self.path = lock_path(db)
        self._fd: int | None = None

    def acquire(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StoreError(f"cannot open the daemon lock {self.path}: {exc.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_pid(fd)
            os.close(fd)
            raise DaemonRunning(
                f"another priceadvisor daemon (PID {holder}) is already running on {self.db}"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the lock
            self._fd = None


def _read_pid(fd: int) -> str:
    """The holder's PID as it wrote it; 'unknown' in the instant before it has written it."""
    text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    return text if text.isdigit() else "unknown"
