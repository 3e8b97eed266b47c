"""Concurrent writers on a PostgreSQL-catalog lake: ids are never handed out twice, and a
transaction that lost a snapshot conflict runs again instead of failing."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import duckdb
import pytest
import stamina

from priceadvisor.store import connections, lake, transactions
from priceadvisor.store.ids import next_id
from priceadvisor.store.runs import start_run


@pytest.fixture
def target(pg_dsn: str, tmp_path: Path) -> lake.Lake:
    made = lake.Lake(catalog=f"postgres:{pg_dsn}", data_path=f"{tmp_path / 'data'}/")
    with connections.writer(made):
        pass  # migrated
    return made


def test_concurrent_writers_never_share_an_id(target: lake.Lake) -> None:
    stamina.set_testing(True, attempts=200)  # contention is the point: retry as long as needed

    def take(_: int) -> list[int]:
        with lake.connect(target) as con:
            return [next_id(con, "core.notification_ids") for _ in range(5)]

    with ThreadPoolExecutor(4) as pool:
        ids = [i for batch in pool.map(take, range(4)) for i in batch]
    assert sorted(ids) == list(range(1, 21))


def test_a_conflicting_transaction_runs_again(target: lake.Lake) -> None:
    attempts = []

    with lake.connect(target) as mine, lake.connect(target) as theirs:

        @transactions.retry_conflicts
        def finish_run() -> None:
            attempts.append(1)
            mine.execute("BEGIN TRANSACTION")
            mine.execute("UPDATE core.fetch_runs SET status = 'ok' WHERE run_id = 1")
            if len(attempts) == 1:  # another writer commits to the same table meanwhile
                theirs.execute("UPDATE core.fetch_runs SET error = 'x' WHERE run_id = 1")
            try:
                mine.execute("COMMIT")
            except duckdb.Error:
                transactions.rollback(mine)
                raise

        start_run(mine, "azure")
        finish_run()
        row = mine.execute("SELECT status, error FROM core.fetch_runs").fetchall()
    assert len(attempts) == 2
    assert row == [("ok", "x")]


# What DuckLake 1.5.5 raised (trimmed) when a flush of inlined data and another writer's commit
# overlapped on a PostgreSQL catalog: PostgreSQL rolled one of them back, and DuckLake passed
# PostgreSQL's own error on instead of its conflict error.
CATALOG_ROLLBACKS = [
    duckdb.Error(
        "Failed to delete flushed inlined data in DuckLake from table ducklake_inlined_data_31_26:"
        ' Failed to execute query "DELETE FROM ..."'
        ": ERROR:  could not serialize access due to concurrent update"
    ),
    duckdb.TransactionException(
        "TransactionContext Error: Failed to commit: Failed to commit DuckLake transaction.\n"
        'Failed to flush changes into DuckLake: Failed to execute query "INSERT INTO ...": '
        "ERROR:  deadlock detected\nDETAIL:  Process 31726 waits for ShareLock on transaction 757"
    ),
]


@pytest.mark.parametrize("error", CATALOG_ROLLBACKS, ids=["serialization", "deadlock"])
def test_a_catalog_rollback_is_a_lost_commit_that_runs_again(error: duckdb.Error) -> None:
    attempts = []

    @transactions.retry_conflicts
    def work() -> str:
        attempts.append(1)
        if len(attempts) == 1:
            raise error
        return "committed"

    assert transactions.is_conflict(error)
    assert work() == "committed"
    assert len(attempts) == 2


@pytest.mark.parametrize(
    "error",
    [
        duckdb.IOException('Could not set lock on file "x.duckdb": Conflicting lock is held'),
        duckdb.Error("Current transaction is aborted, commands ignored"),
        ValueError("could not serialize access"),  # not from the database
    ],
)
def test_other_failures_are_not_lost_commits(error: Exception) -> None:
    assert not transactions.is_conflict(error)
