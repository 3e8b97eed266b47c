"""store.allocator: pages DuckDB has freed go back to the system when asked, not after its
allocator's decay (read from that allocator's own statistics)."""

from __future__ import annotations

import ctypes
import datetime as dt
import sys
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from priceadvisor.manifest import manifest
from priceadvisor.records import FetchResult, RawQuote, RunStatus
from priceadvisor.store import allocator, connections
from priceadvisor.store.ingest import ingest
from priceadvisor.store.runs import start_run


def _dirty_pages() -> int:
    """Pages DuckDB's jemalloc holds freed but not yet returned, over all its arenas."""
    lib = ctypes.CDLL(sys.modules["_duckdb"].__file__)
    if not hasattr(lib, "duckdb_je_mallctl"):
        pytest.skip("this DuckDB build has no jemalloc of its own")
    epoch = ctypes.c_uint64(1)  # refreshes the statistics
    lib.duckdb_je_mallctl(b"epoch", None, None, ctypes.byref(epoch), ctypes.sizeof(epoch))
    pages, size = ctypes.c_size_t(0), ctypes.c_size_t(ctypes.sizeof(ctypes.c_size_t))
    name = b"stats.arenas.4096.pdirty"
    assert lib.duckdb_je_mallctl(name, ctypes.byref(pages), ctypes.byref(size), None, 0) == 0
    return pages.value


def test_the_pages_of_a_finished_join_are_returned() -> None:
    con = duckdb.connect()
    con.execute("SELECT count(*) FROM range(300000) a JOIN range(300000) b ON a.range = b.range")
    assert _dirty_pages() > 0  # the join's hash table, freed and still held
    allocator.return_freed_pages()
    assert _dirty_pages() == 0


@pytest.fixture
def decay_restored() -> Iterator[None]:
    """The process's decay time as it was (DuckDB's default), whatever the test set."""
    yield
    allocator.set_decay_ms(1000)


@pytest.mark.usefixtures("decay_restored")
def test_once_set_to_return_pages_at_once_a_finished_join_holds_none() -> None:
    """The daemon's setting: no purge needed, nothing freed is kept (the test above shows the
    same join keeping pages without it)."""
    allocator.return_freed_pages_at_once()
    con = duckdb.connect()
    con.execute("SELECT count(*) FROM range(300000) a JOIN range(300000) b ON a.range = b.range")
    assert _dirty_pages() == 0


def test_an_ingest_returns_its_snapshots_pages_once_committed(tmp_path: Path) -> None:
    """The snapshot's table is dropped inside the ingest's transaction and freed only by its
    COMMIT: the ingest hands those pages back before it returns, so the writer session's
    checkpoint does not run on top of them."""
    quotes = [
        RawQuote(f"region-{i % 7}", f"type-{i}", "on_demand", 1.0 + i % 50, gpu_name_raw="H100")
        for i in range(20_000)
    ]
    db = tmp_path / "pages.duckdb"
    with connections.writer(db) as con:
        run_id = start_run(con, "azure")
        result = FetchResult("azure", RunStatus.OK, quotes, finished_at=dt.datetime(2026, 11, 1))
        summary = ingest(con, run_id, result, manifest("azure"))
        assert summary.offers_new == len(quotes)
        assert _dirty_pages() == 0
