"""What `advise` keeps of each estimate, kept on disk between processes.

The first ranking of a process sizes every (workload, GPU model, GPU count) its offers hold
(about 4,700 estimates at 50 workloads): half of the first `advise` of a process, and the same
figures every time, since offers come and go but the GPU shapes and the workloads stay. An
estimate is a pure function of the sizing input (`Workload`, whose repr states every field:
the model's numbers, the fitted scales), the tensor-parallel degree asked for, the GPU model
and count, and of the code and catalogs. So each workload's figures are stored in the user
cache folder, in a file named by a digest of its sizing input, in a folder named by a digest
of the code and data (`inputs_digest`): any change to them gives a new folder, and the
estimates are computed afresh. Only what advice reads is kept (`Kept`), in Python's `marshal`
format (floats as their 8 bytes, so they read back to the same bits; an int stays an int),
behind a SHA-256 of the body: encoding and decoding it cost a fifth and a third of JSON's
(1.6 and 1.5 ms for the 4,680 estimates of 50 workloads, against 9.0 and 4.3). marshal is
not meant for data from elsewhere, and its format is Python's own: the digest is checked
before anything is decoded (a file corrupted or not written here is never decoded), the
folder's digest names the Python that writes it, and every row decoded is checked column by
column as before.

A file that cannot be read is ignored (sized again, then rewritten); one that cannot be
written is not kept. Folders of other code versions beyond the `KEEP` most recently used are
removed, and a folder keeps at most `MAX_FILES` workload files (the least recently used go)
and no temporary file a killed write left behind.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import marshal
import math
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

import platformdirs

from priceadvisor import workload as workload_module
from priceadvisor.sizing import scalecache
from priceadvisor.sizing.estimate import Workload

_PREFIX = "estimates-"
_SUFFIX = ".est"
# What the files hold and who can read them: part of the folder's digest, so that no other
# format (the JSON files of earlier versions) or Python is ever read as this one.
_FORMAT = f"marshal {marshal.version} {sys.implementation.cache_tag}"
_CHECK = 16  # bytes of the body's SHA-256 that lead the file
KEEP = 4  # folders of other code versions kept beside the current one
MAX_FILES = 1_000  # workload files per folder (each ~10-20 KB: at most ~20 MB)
STALE_SECONDS = 3600.0  # a temporary file this old is no write in progress


class Kept(NamedTuple):
    """An estimate as advice reads it: cost = effective $/h x `factor`; `fields` the estimate
    columns sizing alone decides (GPU model and count to uncertainty); the replica's tokens/s
    and the replicas a serving offer holds (what `advisor.instances` reads)."""

    factor: float
    fields: tuple[Any, ...]
    tokens_per_s: float
    replicas: int


# Per shape: the kept figures, or None where the workload does not run.
Entries = dict[tuple[str, float], Kept | None]


def workload_key(work: Workload, tensor_parallel: int | None) -> str:
    """The digest a workload's file goes by: every field of its sizing input."""
    text = f"{work!r}\0{tensor_parallel!r}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


@functools.cache
def inputs_digest() -> str:
    """The calibration cache's digest (sizing code, llm, GPU specs, cases and catalogs) and the
    workload rules the estimator imports (priceadvisor.workload)."""
    digest = hashlib.sha256(f"{scalecache.inputs_digest()}\0{_FORMAT}".encode())
    if workload_module.__file__:
        digest.update(Path(workload_module.__file__).read_bytes())
    return digest.hexdigest()[:24]


def folder() -> Path:
    return Path(platformdirs.user_cache_dir("priceadvisor")) / f"{_PREFIX}{inputs_digest()}"


def read(key: str) -> Entries:
    """The kept estimates of a workload, empty when there is no readable file."""
    path = folder() / f"{key}{_SUFFIX}"
    try:
        found = _decoded(path.read_bytes())
    except (OSError, ValueError, TypeError, AttributeError, IndexError, EOFError):
        return {}  # missing, unreadable or not ours: sized again
    with contextlib.suppress(OSError):  # when they were last used: what eviction reads
        os.utime(path)
        os.utime(path.parent)
    return found


def write(key: str, entries: Mapping[tuple[str, float], Kept | None], tidy: bool = True) -> None:
    """Store a workload's kept estimates (replacing its file at once). With `tidy` the cache is
    then kept within its bounds (`tidy`); a caller writing many files tidies once after them."""
    try:
        body = marshal.dumps({(m, float(c)): _row(k) for (m, c), k in entries.items()}, 4)
    except ValueError:
        return  # a value marshal has no type for (a float subclass without a buffer): not kept
    target = folder()
    try:
        target.mkdir(parents=True, exist_ok=True)
        handle, name = tempfile.mkstemp(dir=target, prefix=".tmp-", suffix=".part")
        with open(handle, "wb") as file:  # writes it all, or raises
            file.write(hashlib.sha256(body).digest()[:_CHECK] + body)
        os.replace(name, target / f"{key}{_SUFFIX}")  # atomic: a reader sees all of it or none
    except OSError:
        return  # a read-only or full cache folder: the next process sizes again
    if tidy:
        tidy_up()


def _decoded(data: bytes) -> Entries:
    """A file's entries; ValueError unless its digest holds, TypeError (and the like) unless
    every row is of the shape written."""
    check, body = data[:_CHECK], data[_CHECK:]
    if hashlib.sha256(body).digest()[:_CHECK] != check:
        raise ValueError("not a file of this cache")
    # Decoded only once the digest holds: a body this cache wrote, in the user's own folder
    # (whoever can write there can change the user's files anyway).
    found = marshal.loads(body)  # noqa: S302
    if not isinstance(found, dict):
        raise TypeError("not a table of estimates")
    return {_shape(shape): _kept(value) for shape, value in found.items()}


def tidy_up() -> None:
    """Keep the cache within its bounds: the folders of the `KEEP` most recently used other
    code versions, `MAX_FILES` workload files in this one, no stale temporary file."""
    target = folder()
    with contextlib.suppress(OSError):
        _remove_least_used(target.parent, _PREFIX, KEEP + 1)
        _trim(target)


def _row(kept: Kept | None) -> tuple[Any, ...] | None:
    return None if kept is None else (kept.factor, kept.fields, kept.tokens_per_s, kept.replicas)


# The estimate columns (advisor._fields): GPU model, count, tokens/s, hours, TTFT, TPOT,
# binding, uncertainty; None where a column has no value. marshal keeps an int an int and a
# float a float, so each reads back as the type it was written with.
_NUMBER = float | int
_FIELD_TYPES = (str, _NUMBER, _NUMBER, _NUMBER | None, _NUMBER | None, _NUMBER | None, str, _NUMBER)


def _kept(value: Any) -> Kept | None:
    if value is None:
        return None
    if not isinstance(value, tuple) or not isinstance(value[1], tuple):
        raise TypeError("not an estimate row")
    factor, fields, tokens_per_s, replicas = value
    if len(fields) != len(_FIELD_TYPES) or not all(map(_is, fields, _FIELD_TYPES)):
        raise ValueError("not an estimate row")
    if not isinstance(replicas, int) or isinstance(replicas, bool):
        raise TypeError("not a replica count")
    return Kept(_float(factor), fields, _float(tokens_per_s), replicas)


def _is(value: Any, kind: Any) -> bool:
    return isinstance(value, kind) and not isinstance(value, bool)  # true is no number here


def _float(value: Any) -> float:
    if not _is(value, _NUMBER):
        raise TypeError("not a number")
    return float(value)


def _shape(shape: Any) -> tuple[str, float]:
    if not isinstance(shape, tuple) or len(shape) != 2:
        raise TypeError("not a shape")
    model, count = shape
    if not isinstance(model, str) or not isinstance(count, float) or not math.isfinite(count):
        raise ValueError("not a GPU model and count")
    return model, count


def _trim(target: Path) -> None:
    """At most MAX_FILES workload files: the least recently used go first; and no temporary
    file of a write that was killed before its rename (older than STALE_SECONDS)."""
    stale = time.time() - STALE_SECONDS
    for part in target.glob(".tmp-*.part"):
        if _used_at(part) < stale:
            part.unlink(missing_ok=True)
    files = list(target.glob(f"*{_SUFFIX}"))
    if len(files) > MAX_FILES:
        for old in sorted(files, key=_used_at)[: len(files) - MAX_FILES]:
            old.unlink(missing_ok=True)


def _remove_least_used(parent: Path, prefix: str, keep: int) -> None:
    folders = sorted(parent.glob(f"{prefix}*"), key=_used_at, reverse=True)
    for old in folders[keep:]:
        shutil.rmtree(old, ignore_errors=True)


def _used_at(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0  # removed meanwhile by another process: first to go
