"""Where the data folders are: inside the wheel, or at the top of a checkout.

The folders `providers/`, `db/`, `templates/` and the recorded responses under
`tests/fixtures/providers/` live at the top of the repository. A built wheel carries
them under `priceadvisor/_data/` (hatch force-include); an editable install or a plain checkout
finds them two levels above this package. This module is the only place that knows.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent
_WHEEL_DATA = _PACKAGE_DIR / "_data"
_CHECKOUT_ROOT = _PACKAGE_DIR.parent.parent

# name inside the wheel -> path inside a checkout
_LAYOUT = {
    "providers": "providers",
    "db": "db",
    "templates": "templates",
    "recordings": "tests/fixtures/providers",
}


class ResourceError(RuntimeError):
    """A data folder the package needs is missing from this installation."""


@cache
def data_dir(name: str) -> Path:
    """Return the folder `name` (providers, db, templates, recordings)."""
    candidates = (_WHEEL_DATA / name, _CHECKOUT_ROOT / _LAYOUT[name])
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
