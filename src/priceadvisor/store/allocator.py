"""DuckDB's own allocator: hand the pages a finished step freed back to the system.

DuckDB's Linux builds allocate through a jemalloc of their own, which keeps freed pages for
its decay time (1 s in DuckDB) and, with no background thread, returns them only when it next
allocates. A long write such as an ingest then holds the hash tables of all its joins at once,
although each is freed when its statement ends: its peak was the sum of its steps rather than
the largest (docs/benchmarks.md). Purging between steps returns them; a purge costs one call
that finds nothing to do when nothing was freed. Builds without that jemalloc (other platforms)
have nothing to purge.
"""

from __future__ import annotations

import ctypes
import functools
import sys
from typing import Any

# jemalloc's MALLCTL_ARENAS_ALL: "arena.<i>.purge" with this index purges every arena.
_ALL_ARENAS = 4096


@functools.cache
def _mallctl() -> Any:
    """DuckDB's jemalloc control function, or None when its build has none."""
    path = getattr(sys.modules.get("_duckdb"), "__file__", None)
    try:
        return ctypes.CDLL(path).duckdb_je_mallctl if path else None
    except (OSError, AttributeError):
        return None


def return_freed_pages() -> None:
    """Give the pages DuckDB has freed back to the system now."""
    mallctl = _mallctl()
    if mallctl is not None:
        mallctl(f"arena.{_ALL_ARENAS}.purge".encode(), None, None, None, 0)
