"""The dashboard's requests share one read-only DuckDB instance (store.sharedreader): they run at
the same time instead of taking turns, a write in the same process still gets its turn while
they keep coming and is seen by the next request, and an idle dashboard holds no lock."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import duckdb
import pytest

from priceadvisor.service.dashboard import Dashboard
from priceadvisor.store import connections as store
from priceadvisor.store.handle import Store
from priceadvisor.store.sharedreader import SharedReader
from tests.service import dashboard_data

pytestmark = pytest.mark.anyio
CONCURRENT = 8


@pytest.fixture
def database(tmp_path: Path) -> Path:
    return dashboard_data.build(tmp_path / "web.duckdb")


async def test_concurrent_requests_read_at_the_same_time(database: Path) -> None:
    """Every read waits inside its connection until all of them are inside theirs: only reads
    that run side by side get past the barrier."""
    together = threading.Barrier(CONCURRENT, timeout=60)

    def count_offers(con: duckdb.DuckDBPyConnection) -> int:
        together.wait()
        row = con.execute("SELECT count(*) FROM offers").fetchone()
        assert row is not None
        return int(row[0])

    dashboard = Dashboard(Store(database), "test")
    counts = await asyncio.gather(*(dashboard.read(count_offers) for _ in range(CONCURRENT)))
    assert len(set(counts)) == 1 and counts[0] > 0


def test_a_write_gets_its_turn_while_reads_keep_coming_and_is_seen_next(database: Path) -> None:
    shared = SharedReader(database, lock_timeout=60)
    stop = threading.Event()
    failures: list[BaseException] = []

    def keep_reading() -> None:
        try:
            while not stop.is_set():
                with shared.cursor() as con:
                    con.execute("SELECT count(*) FROM offers").fetchall()
        except BaseException as exc:
            failures.append(exc)

    readers = [threading.Thread(target=keep_reading) for _ in range(CONCURRENT)]
    for reader in readers:
        reader.start()
    try:
        time.sleep(0.5)  # the readers are busy
        # Raises StoreError if the readers never hand the turn over within the timeout.
        with store.writer(database, lock_timeout=60) as con:
            con.execute("CREATE TABLE main.marker AS SELECT 42 AS answer")
        with shared.cursor() as con:
            assert con.execute("SELECT answer FROM main.marker").fetchall() == [(42,)]
    finally:
        stop.set()
        for reader in readers:
            reader.join(60)
    assert not failures
    assert shared.openings >= 2  # one instance before the write, a fresh one after it


def test_an_idle_shared_reader_holds_no_lock(database: Path) -> None:
    shared = SharedReader(database, lock_timeout=60)
    with shared.cursor() as con:
        con.execute("SELECT 1").fetchall()
    # Another process's writer would be refused while any instance had the file open.
    duckdb.connect(str(database)).close()


def test_a_replaced_file_is_read_afresh(database: Path, tmp_path: Path) -> None:
    shared = SharedReader(database, lock_timeout=60)
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with shared.cursor():
            holding.set()
            release.wait(60)

    # Built first: in one process every opening of any file takes the same turn.
    replacement = dashboard_data.build(tmp_path / "other.duckdb")
    with store.writer(replacement) as con:
        con.execute("CREATE TABLE main.marker AS SELECT 'replaced' AS generation")
    holder = threading.Thread(target=hold)
    holder.start()
    holding.wait(60)
    replacement.replace(database)  # a new inode under the same name, while a request holds one
    release.set()
    holder.join(60)
    with shared.cursor() as con:
        assert con.execute("SELECT generation FROM main.marker").fetchall() == [("replaced",)]
