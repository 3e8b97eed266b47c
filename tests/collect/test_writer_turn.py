"""A fetch waits its turn at the writer, and a failed ingest never leaves a run `running`."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from priceadvisor.collect import fetch
from priceadvisor.config import Settings, load_settings
from priceadvisor.store import db as store
from tests.conftest import query
from tests.service.test_one_writer import hold_read_only


def test_a_failed_ingest_finishes_its_run_as_failed(
    settings: Settings, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def out_of_memory(*args: object) -> None:
        raise duckdb.OutOfMemoryException("Out of Memory Error: failed to allocate\nSee also …")

    monkeypatch.setattr(fetch, "ingest", out_of_memory)
    with pytest.raises(store.StoreError, match=r"^ingest failed: Out of Memory Error"):
        fetch.run_cycle(settings, ["oracle", "ecb"], True, lambda *_: None)
    reason = "the snapshot could not be stored: Out of Memory Error: failed to allocate"
    assert query(db_path, "SELECT provider, status, error FROM fetch_runs ORDER BY ALL") == [
        ("ecb", "failed", reason),
        ("oracle", "failed", reason),
    ]


@pytest.mark.slow  # another process holds the file
def test_a_cli_fetch_waits_for_a_reader_longer_than_lock_timeout(db_path: Path) -> None:
    settings = load_settings(db=db_path, lock_timeout="1s")
    fetch.run_cycle(settings, ["oracle"], True, lambda *_: None)  # creates the database
    reader = hold_read_only(db_path, seconds=4)
    try:
        [summary] = fetch.run_cycle(settings, ["oracle"], True, lambda *_: None)
        assert reader.poll() is not None  # it got its turn only once the reader had gone
    finally:
        reader.kill()
        reader.communicate()
    assert summary.status == "ok"
    assert query(db_path, "SELECT status FROM fetch_runs ORDER BY run_id") == [("ok",), ("ok",)]
