"""A full disk ends a write with one line naming the cause, not a traceback in which ROLLBACK's
own error hides it. The disk is real: a tiny tmpfs (needs root; skipped otherwise)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import cli_process


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "tiny"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=600k", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)


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
