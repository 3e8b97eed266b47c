"""A fetch waits its turn at the writer, and a failed ingest never leaves a run `running`."""

from __future__ import annotations

import threading
from pathlib import Path

import duckdb
import pytest

from priceadvisor.collect import fetch
from priceadvisor.config import Settings, load_settings
from priceadvisor.service.stores import configured_store
from priceadvisor.store import connections, errors
from tests.conftest import query
from tests.service.test_one_writer import hold_read_only


def test_a_failed_ingest_finishes_its_run_as_failed(
    settings: Settings, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def out_of_memory(*args: object) -> None:
        raise duckdb.OutOfMemoryException("Out of Memory Error: failed to allocate\nSee also …")

    monkeypatch.setattr(fetch, "ingest", out_of_memory)
    with pytest.raises(errors.StoreError, match=r"^ingest failed: Out of Memory Error"):
        fetch.run_cycle(
            settings, configured_store(settings), ["oracle", "ecb"], True, lambda *_: None
        )
    reason = "the snapshot could not be stored: Out of Memory Error: failed to allocate"
    assert query(db_path, "SELECT provider, status, error FROM fetch_runs ORDER BY ALL") == [
        ("ecb", "failed", reason),
        ("oracle", "failed", reason),
    ]


@pytest.mark.slow  # another process holds the file
def test_a_cli_fetch_waits_for_a_reader_longer_than_lock_timeout(db_path: Path) -> None:
    settings = load_settings(db=db_path, lock_timeout="1s")
    fetch.run_cycle(
        settings, configured_store(settings), ["oracle"], True, lambda *_: None
    )  # creates the database
    reader = hold_read_only(db_path, seconds=4)
    try:
        [summary] = fetch.run_cycle(
            settings, configured_store(settings), ["oracle"], True, lambda *_: None
        )
        assert reader.poll() is not None  # it got its turn only once the reader had gone
    finally:
        reader.kill()
        reader.communicate()
    assert summary.status == "ok"
    assert query(db_path, "SELECT status FROM fetch_runs ORDER BY run_id") == [("ok",), ("ok",)]


def test_a_fetch_marks_runs_of_vanished_processes_abandoned(
    settings: Settings, db_path: Path
) -> None:
    fetch.run_cycle(settings, configured_store(settings), ["oracle"], True, lambda *_: None)
    [run_id] = fetch.start_runs(configured_store(settings), ["oracle"], threading.Event())
    with connections.writer(db_path) as con:
        # a CLI fetch interrupted with Ctrl-C: its process (a PID above Linux's maximum) is gone
        con.execute("UPDATE core.fetch_runs SET pid = 4194305 WHERE run_id = ?", [run_id])
    fetch.run_cycle(settings, configured_store(settings), ["oracle"], True, lambda *_: None)
    assert query(db_path, "SELECT status FROM fetch_runs ORDER BY run_id") == [
        ("ok",),
        ("abandoned",),
        ("ok",),
    ]


def test_a_nested_write_in_one_thread_fails_at_once_instead_of_waiting_forever(
    db_path: Path,
) -> None:
    with (
        connections.writer(db_path),
        pytest.raises(errors.StoreError, match="already open in this thread"),
        connections.writer(db_path, give_up=threading.Event()),
    ):
        pass
