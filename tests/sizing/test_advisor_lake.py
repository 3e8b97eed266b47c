"""The advice refresh on a lake (PostgreSQL catalog): two daemons refreshing it at once make one
commit lose to the other; the loser runs again on the winner's rows instead of failing."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pytest
import stamina

from priceadvisor.config import WorkloadProfile
from priceadvisor.records import utcnow
from priceadvisor.sizing.advisor import store_advice
from priceadvisor.store import connections, lake, transactions
from tests.store.test_lake_ingest_concurrent import ingest_once

PROFILES = [WorkloadProfile(name="chat", task="serve", model="llama-3.1-8b")]


@pytest.fixture(autouse=True)
def _real_retries() -> Iterator[None]:
    stamina.set_testing(False)
    yield
    stamina.set_testing(True, attempts=3)


def advice(target: lake.Lake) -> list[tuple[object, ...]]:
    with connections.reader(target) as con:
        return con.execute(
            "SELECT workload, rank, provider, region, instance_type FROM core.advice ORDER BY ALL"
        ).fetchall()


def test_an_advice_refresh_that_loses_its_commit_runs_again(
    pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = lake.Lake(catalog=f"postgres:{pg_dsn}", data_path=str(tmp_path / "data"))
    # a fresh price: advice ranks only prices younger than twice the provider's fetch interval
    ingest_once(target, "lambda", 0, utcnow() - dt.timedelta(minutes=5))
    real_transaction = transactions.atomic
    attempts: list[int] = []

    @contextmanager
    def a_rival_commits_meanwhile(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
        with real_transaction(con):
            attempts.append(1)
            con.execute("SELECT count(*) FROM core.advice")  # our snapshot starts here
            if len(attempts) == 1:  # another daemon's refresh commits inside ours
                with connections.writer(target) as theirs:
                    store_advice(theirs, PROFILES)
            yield

    monkeypatch.setattr(transactions, "atomic", a_rival_commits_meanwhile)
    with connections.writer(target) as con:
        store_advice(con, PROFILES)  # what the daemon and `advise` call
    monkeypatch.undo()
    assert len(attempts) == 3  # ours, the rival's inside it, ours again after the conflict
    stored = advice(target)
    assert stored and len(stored) == len(set(stored))  # one ranking, not two
    ranks = [row[1] for row in stored]
    assert ranks == sorted(set(ranks))
