"""A full disk ends a write with one line naming the cause, not a traceback in which ROLLBACK's
own error hides it. The disk is real: a tiny tmpfs (needs root; skipped otherwise)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pytest

from priceadvisor.records import RawQuote
from priceadvisor.store import connections, errors, transactions
from tests.conftest import cli_process, ingest_quotes


@contextmanager
def _tmpfs(folder: Path, size: str) -> Iterator[Path]:
    folder.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=False)


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """Too small for the database."""
    with _tmpfs(tmp_path / "tiny", "600k") as folder:
        yield folder


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """Room for an empty database, and then some."""
    with _tmpfs(tmp_path / "small", "4m") as folder:
        yield folder


def test_fetch_onto_a_full_disk_is_one_line(tiny_disk: Path) -> None:
    db = tiny_disk / "prices.duckdb"
    done = cli_process("--db", str(db), "fetch", "--offline")
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"error: writing {db} failed: ")
    assert "No space left on device" in lines[0]


def test_export_onto_a_full_disk_is_one_line(tiny_disk: Path, tmp_path: Path) -> None:
    db = tmp_path / "prices.duckdb"
    fetched = cli_process("--db", str(db), "fetch", "--offline", "-p", "aws")
    assert fetched.returncode == 0, fetched.stderr
    _fill(tiny_disk / "filler")
    done = cli_process("--db", str(db), "export", "--out", str(tiny_disk / "x"))
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert "No space left on device" in lines[0]
    assert sorted(p.name for p in tiny_disk.iterdir()) == ["filler"]  # staging removed


def test_a_commit_onto_a_full_disk_keeps_its_cause(small_disk: Path) -> None:
    """ROLLBACK after the failed commit raises too; the cause must still be what surfaces."""
    db = small_disk / "prices.duckdb"
    with connections.writer(db):
        pass
    _fill(small_disk / "filler")
    quotes = [
        RawQuote(
            region=f"region-{i}",
            instance_type="Standard_NC24ads_A100_v4",
            pricing="on_demand",
            price=1.0 + i,
            gpu_name_raw="A100 80GB",
            gpu_count=1.0,
        )
        for i in range(2000)
    ]
    with pytest.raises(errors.StoreError, match="No space left on device"):
        ingest_quotes(db, "azure", quotes)


def _fill(path: Path) -> None:
    """Take all the space there is."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        while os.write(fd, b"\0" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)


def test_rollback_after_the_transaction_already_ended_keeps_the_first_error() -> None:
    """A fatal error or a failed COMMIT can end the transaction; ROLLBACK then raises its own
    error, which must not replace the one being handled."""
    con = duckdb.connect()
    con.execute("BEGIN TRANSACTION")
    con.execute("COMMIT")
    with pytest.raises(duckdb.TransactionException):
        con.execute("ROLLBACK")  # what the bare statement does
    with pytest.raises(ValueError, match="the cause"):
        try:
            raise ValueError("the cause")
        except ValueError:
            transactions.rollback(con)
            raise
    con.close()
