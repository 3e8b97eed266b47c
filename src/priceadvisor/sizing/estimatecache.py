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

A ranking lists the folder once (`opened`) and opens only the files it found there or wrote
itself: a workload not kept costs no failed open. A file that cannot be read is ignored (sized
again, then rewritten); one that cannot be written is not kept. Folders of other code versions
beyond the `KEEP` most recently used are removed, and a folder keeps at most `MAX_FILES`
workload files (the least recently used go) and no temporary file a killed write left behind.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
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


class Opened(NamedTuple):
    """The cache folder of this code version as a ranking found it: where it is, and the
    names of its files (listed once, then those the ranking writes): a ranking opens only
    those, not every file it might find."""

    path: Path
    names: set[str]


def opened() -> Opened:
    """The folder and its files' names (one listing instead of a failed open per workload not
    kept), marked used now (what pruning other versions' folders reads)."""
    target = folder()
    try:
        names = set(os.listdir(target))
    except OSError:
        return Opened(target, set())  # none yet, or not ours to read: every workload is sized
    with contextlib.suppress(OSError):  # a folder we may read but not change is still read
        os.utime(target)
    return Opened(target, names)


def read(key: str, where: Opened | None = None) -> Entries:
    """The kept estimates of a workload, empty when there is no readable file (`where`: the
    folder as a ranking found it, else looked up now)."""
    name = f"{key}{_SUFFIX}"
    if where is not None and name not in where.names:
        return {}
    path = (folder() if where is None else where.path) / name
    try:
        found = _decoded(path.read_bytes())
    except (OSError, ValueError, TypeError, AttributeError, IndexError, EOFError):
        return {}  # missing, unreadable or not ours: sized again
    with contextlib.suppress(OSError):  # when it was last used: what eviction reads
        os.utime(path)
        if where is None:
            os.utime(path.parent)
    return found


def write(
    key: str,
    entries: Mapping[tuple[str, float], Kept | None],
    tidy: bool = True,
    where: Opened | None = None,
) -> None:
    """Store a workload's kept estimates (replacing its file at once). With `tidy` the cache is
    then kept within its bounds (`tidy`); a caller writing many files tidies once after them."""
    try:
        # a Kept is a tuple of the four values: tuple() is its row
        rows = {(m, float(c)): None if k is None else tuple(k) for (m, c), k in entries.items()}
        body = marshal.dumps(rows, 4)
    except ValueError:
        return  # a value marshal has no type for (a float subclass without a buffer): not kept
    target = folder() if where is None else where.path
    try:
        name = _written(target, hashlib.sha256(body).digest()[:_CHECK] + body)
        os.replace(name, target / f"{key}{_SUFFIX}")  # atomic: a reader sees all of it or none
    except OSError:
        return  # a read-only or full cache folder: the next process sizes again
    if where is not None:
        where.names.add(f"{key}{_SUFFIX}")  # workloads of one sizing input share their file
    if tidy:
        tidy_up()


def _written(target: Path, data: bytes) -> str:
    """A temporary file in `target` holding `data` (the folder made on the first write)."""
    try:
        handle, name = tempfile.mkstemp(dir=target, prefix=".tmp-", suffix=".part")
    except FileNotFoundError:
        target.mkdir(parents=True, exist_ok=True)
        handle, name = tempfile.mkstemp(dir=target, prefix=".tmp-", suffix=".part")
    with open(handle, "wb") as file:  # writes it all, or raises
        file.write(data)
    return name


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


# The estimate columns (advisor._fields): GPU model, count, tokens/s, hours, TTFT, TPOT,
# binding, uncertainty; None where a column has no value. marshal keeps an int an int and a
# float a float, and gives back no subclass of them (bool aside, which is no number here), so
# a row is checked by its columns' exact types: one lookup among the combinations allowed.
_NUMBERS = frozenset((float, int))
_COLUMN_TYPES: tuple[frozenset[type], ...] = (
    frozenset((str,)),
    _NUMBERS,
    _NUMBERS,
    _NUMBERS | {type(None)},
    _NUMBERS | {type(None)},
    _NUMBERS | {type(None)},
    frozenset((str,)),
    _NUMBERS,
)
_ROW_TYPES = frozenset(itertools.product(*_COLUMN_TYPES))


def _kept(value: Any) -> Kept | None:
    if value is None:
        return None
    if type(value) is not tuple or len(value) != 4:
        raise TypeError("not an estimate row")
    factor, fields, tokens_per_s, replicas = value
    if type(fields) is not tuple or tuple(map(type, fields)) not in _ROW_TYPES:
        raise ValueError("not an estimate row")
    if type(replicas) is not int:
        raise TypeError("not a replica count")
    if type(factor) not in _NUMBERS or type(tokens_per_s) not in _NUMBERS:
        raise TypeError("not a number")
    return Kept(float(factor), fields, float(tokens_per_s), replicas)


def _shape(shape: Any) -> tuple[str, float]:
    if type(shape) is not tuple or len(shape) != 2:
        raise TypeError("not a shape")
    model, count = shape
    if type(model) is not str or type(count) is not float or not math.isfinite(count):
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
