"""What `advise` keeps of each estimate, kept on disk between processes.

The first ranking of a process sizes every (workload, GPU model, GPU count) its offers hold
(about 4,700 estimates at 50 workloads): half of the first `advise` of a process, and the same
figures every time, since offers come and go but the GPU shapes and the workloads stay. An
estimate is a pure function of the sizing input (`Workload`, whose repr states every field:
the model's numbers, the fitted scales), the tensor-parallel degree asked for, the GPU model
and count, and of the code and catalogs. So each workload's figures are stored in the user
cache folder, in a file named by a digest of its sizing input, in a folder named by a digest
of the code and data (`inputs_digest`): any change to them gives a new folder, and the
estimates are computed afresh. Only what advice reads is kept (`Kept`), floats written as
their shortest repr, which reads back to the same bits.

A file that cannot be read is ignored (sized again, then rewritten); one that cannot be
written is not kept. Folders of other code versions beyond the `KEEP` most recently used are
removed, and a folder keeps at most `MAX_FILES` workload files (the least recently used go)
and no temporary file a killed write left behind.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import math
import os
import shutil
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
    digest = hashlib.sha256(scalecache.inputs_digest().encode())
    if workload_module.__file__:
        digest.update(Path(workload_module.__file__).read_bytes())
    return digest.hexdigest()[:24]


def folder() -> Path:
    return Path(platformdirs.user_cache_dir("priceadvisor")) / f"{_PREFIX}{inputs_digest()}"


def read(key: str) -> Entries:
    """The kept estimates of a workload, empty when there is no readable file."""
    path = folder() / f"{key}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        found = {_shape(name): _kept(value) for name, value in data.items()}
    except (OSError, ValueError, TypeError, AttributeError, IndexError):
        return {}  # missing, unreadable or not ours: sized again
    with contextlib.suppress(OSError):  # when they were last used: what eviction reads
        os.utime(path)
        os.utime(path.parent)
    return found


def write(key: str, entries: Mapping[tuple[str, float], Kept | None], tidy: bool = True) -> None:
    """Store a workload's kept estimates (replacing its file at once). With `tidy` the cache is
    then kept within its bounds (`tidy`); a caller writing many files tidies once after them."""
    body = json.dumps({f"{m}\t{c!r}": _row(k) for (m, c), k in entries.items()})
    target = folder()
    path = target / f"{key}.json"
    try:
        target.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(
            "w", dir=target, prefix=".tmp-", suffix=".part", delete=False, encoding="utf-8"
        ) as file:
            file.write(body)
        os.replace(file.name, path)  # atomic: a concurrent reader sees all of it or nothing
    except OSError:
        return  # a read-only or full cache folder: the next process sizes again
    if tidy:
        tidy_up()


def tidy_up() -> None:
    """Keep the cache within its bounds: the folders of the `KEEP` most recently used other
    code versions, `MAX_FILES` workload files in this one, no stale temporary file."""
    target = folder()
    with contextlib.suppress(OSError):
        _remove_least_used(target.parent, _PREFIX, KEEP + 1)
        _trim(target)


def _row(kept: Kept | None) -> list[Any] | None:
    return (
        None if kept is None else [kept.factor, list(kept.fields), kept.tokens_per_s, kept.replicas]
    )


# The estimate columns (advisor._fields): GPU model, count, tokens/s, hours, TTFT, TPOT,
# binding, uncertainty; None where a column has no value. JSON keeps an int an int and a float a
# float, so each reads back as the type it was written with.
_NUMBER = float | int
_FIELD_TYPES = (str, _NUMBER, _NUMBER, _NUMBER | None, _NUMBER | None, _NUMBER | None, str, _NUMBER)


def _kept(value: Any) -> Kept | None:
    if value is None:
        return None
    factor, fields, tokens_per_s, replicas = value
    if len(fields) != len(_FIELD_TYPES) or not all(map(_is, fields, _FIELD_TYPES)):
        raise ValueError("not an estimate row")
    if not isinstance(replicas, int) or isinstance(replicas, bool):
        raise TypeError("not a replica count")
    return Kept(_float(factor), tuple(fields), _float(tokens_per_s), replicas)


def _is(value: Any, kind: Any) -> bool:
    return isinstance(value, kind) and not isinstance(value, bool)  # true is no number here


def _float(value: Any) -> float:
    if not _is(value, _NUMBER):
        raise TypeError("not a number")
    return float(value)


def _shape(name: str) -> tuple[str, float]:
    model, count = name.split("\t")
    parsed = float(count)
    if not math.isfinite(parsed):
        raise ValueError("not a GPU count")
    return model, parsed


def _trim(target: Path) -> None:
    """At most MAX_FILES workload files: the least recently used go first; and no temporary
    file of a write that was killed before its rename (older than STALE_SECONDS)."""
    stale = time.time() - STALE_SECONDS
    for part in target.glob(".tmp-*.part"):
        if _used_at(part) < stale:
            part.unlink(missing_ok=True)
    files = list(target.glob("*.json"))
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
