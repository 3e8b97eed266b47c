"""store.allocator: pages DuckDB has freed go back to the system when asked, not after its
allocator's decay (read from that allocator's own statistics)."""

from __future__ import annotations

import ctypes
import sys

import duckdb
import pytest

from priceadvisor.store import allocator


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
