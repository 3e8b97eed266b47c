"""Concurrent writers on a PostgreSQL-catalog lake: ids are never handed out twice, and a
transaction that lost a snapshot conflict runs again instead of failing."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import duckdb
import pytest
import stamina

from priceadvisor.store import db as store
from priceadvisor.store import lake


@pytest.fixture
def target(pg_dsn: str, tmp_path: Path) -> lake.Lake:
    made = lake.Lake(catalog=f"postgres:{pg_dsn}", data_path=f"{tmp_path / 'data'}/")
    with store.writer(made):
        pass  # migrated
    return made


def test_concurrent_writers_never_share_an_id(target: lake.Lake) -> None:
    stamina.set_testing(True, attempts=200)  # contention is the point: retry as long as needed

    def take(_: int) -> list[int]:
        with lake.connect(target) as con:
            return [store.next_id(con, "core.notification_ids") for _ in range(5)]

    with ThreadPoolExecutor(4) as pool:
        ids = [i for batch in pool.map(take, range(4)) for i in batch]
    assert sorted(ids) == list(range(1, 21))


def test_a_conflicting_transaction_runs_again(target: lake.Lake) -> None:
    attempts = []

    with lake.connect(target) as mine, lake.connect(target) as theirs:

        @store.retry_conflicts
        def finish_run() -> None:
            attempts.append(1)
            mine.execute("BEGIN TRANSACTION")
            mine.execute("UPDATE core.fetch_runs SET status = 'ok' WHERE run_id = 1")
            if len(attempts) == 1:  # another writer commits to the same table meanwhile
                theirs.execute("UPDATE core.fetch_runs SET error = 'x' WHERE run_id = 1")
            try:
                mine.execute("COMMIT")
            except duckdb.Error:
                store.rollback(mine)
                raise

        store.start_run(mine, "azure")
        finish_run()
        row = mine.execute("SELECT status, error FROM core.fetch_runs").fetchall()
    assert len(attempts) == 2
    assert row == [("ok", "x")]
