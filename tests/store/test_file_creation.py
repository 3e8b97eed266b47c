"""Two processes creating one database file at once: the second waits for the first to finish
the file's headers instead of calling it "not a valid DuckDB database file"."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from priceadvisor.store import connections
from priceadvisor.store.errors import StoreError


def _finish_creating(path: Path) -> None:
    """Stand-in for the creating process: the real file takes the empty one's place."""
    complete = path.with_name("complete.duckdb")
    duckdb.connect(str(complete)).close()
    os.replace(complete, path)


def test_a_file_being_created_is_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "prices.duckdb"
    path.touch()  # what a second opener sees between the creator's open and its headers
    pauses: list[Path] = []

    def pause(wait: connections._LockWait) -> None:  # the creator finishes while we wait
        pauses.append(wait.path)
        _finish_creating(path)

    monkeypatch.setattr(connections._LockWait, "pause", pause)
    with connections.writer(path, lock_timeout=30.0) as con:
        assert con.execute("SELECT count(*) FROM core.schema_migrations").fetchone() != (0,)
    assert pauses == [path]


def test_an_old_empty_file_fails_at_once_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "prices.duckdb"
    path.touch()
    old = time.time() - 3600
    os.utime(path, (old, old))

    def pause(wait: connections._LockWait) -> None:
        raise AssertionError("an old empty file is not waited for")

    monkeypatch.setattr(connections._LockWait, "pause", pause)
    with (
        pytest.raises(StoreError, match="not a valid DuckDB database file") as caught,
        connections.reader(path, lock_timeout=30.0),
    ):
        pass
    assert "\n" not in str(caught.value)


def test_two_processes_creating_the_database_both_succeed(tmp_path: Path) -> None:
    """Looped, since the window is a few milliseconds: every pair must open the new file."""
    for attempt in range(8):
        path = tmp_path / f"prices-{attempt}.duckdb"
        command = [sys.executable, "-m", "priceadvisor", "--db", str(path), "providers"]
        procs = [
            subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            for _ in range(2)
        ]
        errors = [proc.communicate(timeout=120)[1] for proc in procs]
        assert [proc.returncode for proc in procs] == [0, 0], errors
