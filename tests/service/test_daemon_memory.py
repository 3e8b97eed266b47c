"""The daemon's memory bounds (service.daemon._bound_memory) reach DuckDB's own allocator:
freed pages go back to the system at once instead of after DuckDB's decay. Checked in a
child process: the bounds are process-wide and would change every later test's DuckDB."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

_READ_DECAYS = """
import ctypes, json, sys
import duckdb
names = ("arenas.dirty_decay_ms", "arenas.muzzy_decay_ms",
         "arena.0.dirty_decay_ms", "arena.0.muzzy_decay_ms")
def decays():
    lib = ctypes.CDLL(sys.modules["_duckdb"].__file__)
    if not hasattr(lib, "duckdb_je_mallctl"):
        return None
    values = {}
    for name in names:
        value, size = ctypes.c_ssize_t(-1), ctypes.c_size_t(ctypes.sizeof(ctypes.c_ssize_t))
        lib.duckdb_je_mallctl(name.encode(), ctypes.byref(value), ctypes.byref(size), None, 0)
        values[name] = value.value
    return values
before = decays()
duckdb.sql("SELECT count(*) FROM range(100000) a JOIN range(100000) b ON a.range = b.range")
if "--bound" in sys.argv:
    from priceadvisor.service.daemon import _bound_memory
    _bound_memory()
    duckdb.sql("SELECT count(*) FROM range(100000) a JOIN range(100000) b ON a.range = b.range")
print(json.dumps([before, decays()]))
"""


def _decays(*args: str) -> list[dict[str, int] | None]:
    done = subprocess.run(
        [sys.executable, "-c", _READ_DECAYS, *args], capture_output=True, text=True, check=True
    )
    return list(json.loads(done.stdout))


def test_the_daemon_returns_duckdbs_freed_pages_at_once() -> None:
    before, after = _decays("--bound")
    if before is None:
        pytest.skip("this DuckDB build has no jemalloc of its own")
    assert min(before.values()) > 0  # DuckDB's default: freed pages kept for a while
    assert after == dict.fromkeys(before, 0)
