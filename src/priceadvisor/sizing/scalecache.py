"""The fitted calibration scales, kept on disk between processes.

Fitting them (`calibration.fitted_scales`) runs every published case through the estimator
about 25 times (the leave-one-source-out folds that give each regime its uncertainty): most of
what the first `advise` or `estimate` of a process used to cost. The result depends only on the
bundled cases and catalogs and on the sizing code, so it is stored in the user cache folder
under a digest of exactly those files: any change to them gives a new digest, a fresh fit and
a new file. Several installs of different versions under one user (a CLI venv beside the
daemon's, several checkouts) each keep their own file: only files beyond the
`KEEP` most recently used are removed, so the installs do not evict each other. A cache that
cannot be read or written is simply not used: the scales are fitted in the process, as before.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import platformdirs

from priceadvisor import gpu_specs, llm, records
from priceadvisor.resources import providers_dir, sizing_data_dir
from priceadvisor.sizing import estimate as sizing

_SIZING_DATA = ("calibration.toml", "models.toml")
_PREFIX = "calibration-"
KEEP = 4  # files of other inputs kept beside the current one (each ~2 KB)


def load_or_fit(fit: Callable[[], sizing.Scales]) -> sizing.Scales:
    """The scales from the cache file of the current inputs, else `fit()` (then stored)."""
    path = cache_path()
    found = _read(path)
    if found is not None:
        _mark_used(path)
        return found
    scales = fit()
    _write(path, scales)
    return scales


def cache_path() -> Path:
    folder = Path(platformdirs.user_cache_dir("priceadvisor"))
    return folder / f"{_PREFIX}{inputs_digest()}.json"


def inputs_digest() -> str:
    """A digest of every file the fitted scales depend on: the cases, the GPU and model
    catalogs, and the code that predicts and fits (the sizing package, llm, gpu_specs, records)."""
    code = sorted(Path(sizing.__file__).parent.glob("*.py"))
    code += [Path(m.__file__) for m in (llm, gpu_specs, records) if m.__file__]
    digest = hashlib.sha256()
    data = [sizing_data_dir() / name for name in _SIZING_DATA] + [providers_dir() / "gpus.toml"]
    for path in data + code:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:24]


def _read(path: Path) -> sizing.Scales | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return sizing.Scales(_floats(data["factors"]), _floats(data["uncertainty"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None  # missing, unreadable or not ours: fit again


def _floats(value: object) -> dict[str, float]:
    if not isinstance(value, dict):
        raise TypeError("not a mapping")
    return {str(k): float(v) for k, v in value.items()}


def _write(path: Path, scales: sizing.Scales) -> None:
    body = json.dumps({"factors": dict(scales.factors), "uncertainty": dict(scales.uncertainty)})
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(
            "w", dir=path.parent, prefix=".tmp-", delete=False, encoding="utf-8"
        ) as file:
            file.write(body)
        os.replace(file.name, path)  # atomic: a concurrent reader sees all of it or nothing
        _remove_least_used(path.parent)
    except OSError:
        pass  # a read-only or full cache folder: the next process fits again


def _mark_used(path: Path) -> None:
    """The modification time says when an install last used its file (what eviction reads)."""
    with contextlib.suppress(OSError):  # read-only folder: eviction then follows write order
        os.utime(path)


def _remove_least_used(folder: Path) -> None:
    files = sorted(folder.glob(f"{_PREFIX}*.json"), key=_used_at, reverse=True)
    for old in files[KEEP + 1 :]:
        old.unlink(missing_ok=True)


def _used_at(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0  # removed meanwhile by another process: first to go
