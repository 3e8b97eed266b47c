"""DuckDB's own allocator: hand the pages a finished step freed back to the system, or (the
daemon) every page as soon as it is freed.

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


# jemalloc's decay times, in ms: how long freed pages are kept for reuse, first "dirty" (still
# mapped), then "muzzy" (marked as reclaimable). -1 keeps them for good.
_DECAYS = (b"dirty_decay_ms", b"muzzy_decay_ms")


def return_freed_pages_at_once() -> None:
    """From now on every page DuckDB frees goes back to the system at once (a decay time of 0
    in every arena of its jemalloc, and for arenas made later). The purges between steps
    (return_freed_pages) cannot do that within a step, and do not return all the pages kept
    between them either: with this the daemon's 100,000-offer ingest peaks ~10 MB lower, its
    steps start from ~10 MB less, for ~5-10 % more CPU on the ingest (docs/benchmarks.md).
    For a long-running process on a small VM, as glibc's mmap threshold is (service.daemon)."""
    set_decay_ms(0)


def set_decay_ms(ms: int) -> None:
    """Decay time `ms` for every arena of DuckDB's jemalloc and its default for new ones
    (jemalloc's own default is 1000 in DuckDB's build). Nothing without that jemalloc."""
    mallctl = _mallctl()
    if mallctl is None:
        return
    value = ctypes.c_ssize_t(ms)
    arenas = [f"arena.{i}.".encode() for i in range(_arena_count(mallctl))]
    for decay in _DECAYS:
        for prefix in (b"arenas.", *arenas):  # an arena not made yet answers EFAULT: skipped
            mallctl(prefix + decay, None, None, ctypes.byref(value), ctypes.sizeof(value))


def _arena_count(mallctl: Any) -> int:
    count = ctypes.c_uint(0)
    size = ctypes.c_size_t(ctypes.sizeof(count))
    if mallctl(b"arenas.narenas", ctypes.byref(count), ctypes.byref(size), None, 0) != 0:
        return 0
    return count.value
