"""At most one daemon per database: the OS lock beside the file."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from priceadvisor.store.daemonlock import DaemonLock, DaemonRunning, lock_path
from priceadvisor.store.errors import StoreError


def test_a_second_holder_is_refused_with_the_first_ones_pid(db_path: Path) -> None:
    first = DaemonLock(db_path)
    first.acquire()
    try:
        with pytest.raises(DaemonRunning) as refused:
            DaemonLock(db_path).acquire()
        message = str(refused.value)
        assert f"(PID {os.getpid()})" in message and str(db_path) in message
        assert "\n" not in message
    finally:
        first.release()
    again = DaemonLock(db_path)
    again.acquire()  # released: the next daemon may start
    again.release()


@pytest.mark.slow  # a subprocess
def test_a_lock_left_by_a_killed_process_does_not_block_a_restart(db_path: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path;"
            "from priceadvisor.store.daemonlock import DaemonLock;"
            "DaemonLock(Path(sys.argv[1])).acquire(); print('held', flush=True); time.sleep(120)",
            str(db_path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(DaemonRunning, match=f"PID {holder.pid}"):
            DaemonLock(db_path).acquire()
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
        assert holder.stdout is not None
        holder.stdout.close()
    assert lock_path(db_path).read_text().strip() == str(holder.pid)  # the stale record stays
    lock = DaemonLock(db_path)
    lock.acquire()
    assert lock_path(db_path).read_text().strip() == str(os.getpid())
    lock.release()


def test_a_lock_that_cannot_be_created_is_one_clear_line(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory")
    with pytest.raises(StoreError, match=r"cannot open the daemon lock .*: File exists$"):
        DaemonLock(tmp_path / "file" / "prices.duckdb").acquire()


def test_a_second_daemon_through_a_symlink_is_refused(tmp_path: Path, db_path: Path) -> None:
    """Another name of the same file (a symlink, or a path through a symlinked folder) finds
    the same lock, whether the database exists yet or not."""
    link = tmp_path / "link.duckdb"
    link.symlink_to(db_path)
    folder = tmp_path / "folder-link"
    folder.symlink_to(db_path.parent, target_is_directory=True)
    first = DaemonLock(db_path)
    first.acquire()
    try:
        for other in (link, folder / db_path.name):
            with pytest.raises(DaemonRunning, match=f"PID {os.getpid()}"):
                DaemonLock(other).acquire()
    finally:
        first.release()


def test_a_second_daemon_through_a_hard_link_is_refused(tmp_path: Path, db_path: Path) -> None:
    """A hard link has its own real path: the database file's inode is locked too."""
    db_path.write_bytes(b"")
    (tmp_path / "elsewhere").mkdir()
    other = tmp_path / "elsewhere" / "prices.duckdb"
    os.link(db_path, other)
    first = DaemonLock(db_path)
    first.acquire()
    try:
        with pytest.raises(DaemonRunning, match="another name of the file"):
            DaemonLock(other).acquire()
    finally:
        first.release()
    again = DaemonLock(other)
    again.acquire()  # released: a daemon may start under either name
    again.release()
