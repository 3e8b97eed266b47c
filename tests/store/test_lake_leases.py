"""Concurrent writers of one lake (PostgreSQL catalog), each with its own DuckDB instance: a
lease has one holder however many race for it, and an outbox row is claimed by one deliverer."""

from __future__ import annotations

import datetime as dt
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import TypeVar

import duckdb
import pytest
import stamina

from priceadvisor.notify import Message, outbox
from priceadvisor.records import utcnow
from priceadvisor.store import connections, lake, leases
from priceadvisor.store.ids import next_id

T = TypeVar("T")
WRITERS = 3


@pytest.fixture(autouse=True)
def _real_retries() -> Iterator[None]:
    """Conflicts are real here: retries back off as in production (conftest turns waits off)."""
    stamina.set_testing(False)
    yield
    stamina.set_testing(True, attempts=3)


@pytest.fixture
def target(pg_dsn: str, tmp_path: Path) -> lake.Lake:
    shared = lake.Lake(catalog=f"postgres:{pg_dsn}", data_path=str(tmp_path / "data"))
    with connections.writer(shared):
        pass  # migrated once, before the racers start
    return shared


def race(target: lake.Lake, work: Callable[[int, duckdb.DuckDBPyConnection], T]) -> list[T]:
    """`work(i, con)` in WRITERS threads at once, each on its own connection to the lake."""
    ready = threading.Barrier(WRITERS)
    results: list[T | BaseException] = [RuntimeError("did not run")] * WRITERS

    def run(i: int) -> None:
        try:
            with connections.writer(target) as con:
                ready.wait(timeout=60)
                results[i] = work(i, con)
        except BaseException as exc:
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results  # type: ignore[return-value]


def test_a_lease_has_one_holder_however_many_race_for_it(target: lake.Lake) -> None:
    for round_ in range(3):  # each round an hour later: the last round's lease has expired
        now = utcnow() + dt.timedelta(hours=round_)
        won = race(target, lambda i, con, now=now: leases.acquire(con, "alerts", f"d{i}", 60, now))
        assert sum(won) == 1
        with connections.writer(target) as con:
            holder, _ = leases.current(con, "alerts")
        assert holder == f"d{won.index(True)}"


def queue_rows(target: lake.Lake, count: int) -> None:
    message = Message(key="k", subject="s", text="t", html="<p>t</p>", slack=[{"text": "t"}])
    payload = json.dumps(asdict(message) | {"images": {}})
    with connections.writer(target) as con:
        for n in range(count):
            row_id = next_id(con, "core.notification_ids")
            con.execute(
                "INSERT INTO core.notifications (id, kind, channel, key, payload, created_at, "
                "status, attempts, next_attempt_at) VALUES (?, 'test', 'slack', ?, ?, ?, "
                "'queued', 0, ?)",
                [row_id, f"test:{n}:slack", payload, utcnow(), utcnow()],
            )


def test_each_outbox_row_is_claimed_by_one_deliverer(target: lake.Lake) -> None:
    queue_rows(target, 8)

    def deliverer(_: int, con: duckdb.DuckDBPyConnection) -> list[int]:
        now = utcnow()
        return [
            row_id
            for row_id, _channel in outbox.due(con, now)
            if outbox.claim(con, row_id, now, 600.0) is not None
        ]

    claimed = race(target, deliverer)
    every = [row_id for rows in claimed for row_id in rows]
    assert sorted(every) == sorted(set(every))  # nobody took a row another one took
    with connections.writer(target) as con:
        assert len(every) == con.execute("SELECT count(*) FROM core.notifications").fetchone()[0]
