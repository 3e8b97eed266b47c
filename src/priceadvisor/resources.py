"""Where the data folders are: inside the wheel, or at the top of a checkout.

The folders `providers/` (with the recorded responses under `providers/recordings/`), `db/`,
`templates/` and `sizing-data/` live at the top of the repository. A built wheel carries
them under `priceadvisor/_data/` (hatch force-include); an editable install or a plain checkout
finds them two levels above this package. This module is the only place that knows.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent
_WHEEL_DATA = _PACKAGE_DIR / "_data"
_CHECKOUT_ROOT = _PACKAGE_DIR.parent.parent

# name -> its path below the wheel's _data folder and below a checkout's top (the same path)
_FOLDERS = {
    "providers": "providers",
    "db": "db",
    "templates": "templates",
    "recordings": "providers/recordings",
    "sizing": "sizing-data",
}


class ResourceError(RuntimeError):
    """A data folder the package needs is missing from this installation."""


@cache
def data_dir(name: str) -> Path:
    """Return the folder `name` (providers, db, templates, recordings, sizing)."""
    candidates = (_WHEEL_DATA / _FOLDERS[name], _CHECKOUT_ROOT / _FOLDERS[name])
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    looked = ", ".join(str(c) for c in candidates)
    raise ResourceError(f"priceadvisor data folder {name!r} not found (looked in {looked})")


def providers_dir() -> Path:
    return data_dir("providers")


def migrations_dir() -> Path:
    return data_dir("db") / "migrations"


def views_dir() -> Path:
    return data_dir("db") / "views"


def queries_dir() -> Path:
    return data_dir("db") / "queries"


def templates_dir() -> Path:
    return data_dir("templates")


def recordings_dir() -> Path:
    return data_dir("recordings")


def sizing_data_dir() -> Path:
    return data_dir("sizing")
