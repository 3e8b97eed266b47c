"""The configuration the read commands need (database path, lock timeout, log level), resolved
without pydantic, and what the full configuration (priceadvisor.config) shares with it: where
the config file is, the defaults of those keys, ConfigError.

`quick_settings` answers only when its answer is certainly the full load's: the config file
(if any) and the PRICEADVISOR_* environment set none but those three keys, and every value is
one it can see is valid. Anything else (another key, an unknown variable, a doubtful value)
gives None, and the caller loads the full configuration, which validates everything and words
every error. So `prices` still refuses a broken [notify] section the same way; a reader with no
config file, or one of only these keys, starts without importing pydantic (~100 ms).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import platformdirs

from priceadvisor.durations import parse_duration

CONFIG_ENV = "PRICEADVISOR_CONFIG"
ENV_PREFIX = "PRICEADVISOR_"
_APP = "priceadvisor"

# The defaults of the keys resolved here; priceadvisor.config.Settings uses these constants.
DEFAULT_LOCK_TIMEOUT = 10.0
DEFAULT_LOG_LEVEL = "INFO"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
QUICK_KEYS = frozenset({"db", "lock_timeout", "log_level"})
# Every reader's bounds ([readers]): a share of the machine's RAM and two threads fit a 2-core
# VM beside the daemon; a `sql` query stops after the timeout.
DEFAULT_READER_MEMORY = "25%"
DEFAULT_READER_THREADS = 2
DEFAULT_SQL_TIMEOUT = 300.0
_SIZE = re.compile(r"^\s*\d+(\.\d+)?\s*(KB|MB|GB|TB|KiB|MiB|GiB|TiB)\s*$", re.IGNORECASE)
_SHARE = re.compile(r"^\s*(\d+(\.\d+)?)\s*%\s*$")


class ConfigError(ValueError):
    """Invalid configuration: the message is one line naming the key."""


class ReaderBounds(Protocol):
    """[readers]: what bounds a read-only connection and a `sql` query."""

    @property
    def memory_limit(self) -> str: ...
    @property
    def threads(self) -> int: ...
    @property
    def sql_timeout(self) -> float: ...


class DbSettings(Protocol):
    """What a command that only reads the database needs: the full Settings has it too."""

    @property
    def lock_timeout(self) -> float: ...
    @property
    def readers(self) -> ReaderBounds: ...

    def db_path(self) -> Path: ...


# NamedTuples, not dataclasses: `prices` starts without the dataclasses module (and the
# inspect module it imports) where it can (cli/light.py).
class ReaderDefaults(NamedTuple):
    memory_limit: str = DEFAULT_READER_MEMORY
    threads: int = DEFAULT_READER_THREADS
    sql_timeout: float = DEFAULT_SQL_TIMEOUT


class ReadSettings(NamedTuple):
    db: Path | None = None
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT
    log_level: str = DEFAULT_LOG_LEVEL
    readers: ReaderDefaults = ReaderDefaults()

    def db_path(self) -> Path:
        return db_or_default(self.db)


def db_or_default(db: Path | None) -> Path:
    return db if db is not None else default_db_path()


def default_db_path() -> Path:
    return Path(platformdirs.user_data_dir(_APP)) / "priceadvisor.duckdb"


def recorded_db_path() -> Path:
    """Where `fetch --offline` replays the recorded responses by default: beside the live
    database, never in it."""
    return default_db_path().with_name("recorded.duckdb")


def default_config_paths() -> list[Path]:
    """Searched in order when neither --config nor PRICEADVISOR_CONFIG is given."""
    return [
        Path.cwd() / "priceadvisor.toml",
        Path(platformdirs.user_config_dir(_APP)) / "config.toml",
        Path("/etc/priceadvisor/config.toml"),
    ]


def find_config_file(explicit: Path | None) -> Path | None:
    chosen = explicit or (Path(os.environ[CONFIG_ENV]) if os.environ.get(CONFIG_ENV) else None)
    if chosen is not None:
        if not chosen.is_file():
            raise ConfigError(f"config file not found: {chosen}")
        return chosen
    return next((p for p in default_config_paths() if p.is_file()), None)


def quick_settings(config_file: Path | None, db: Path | None) -> ReadSettings | None:
    """The read settings with the full load's precedence (flag, environment, file, default),
    or None when only the full load can say (see the module's docstring)."""
    path = find_config_file(config_file)
    from_file = _file_values(path) if path is not None else {}
    from_env = _env_values()
    if from_file is None or from_env is None:
        return None
    given = from_file | from_env | ({"db": db} if db is not None else {})
    return _certainly_valid(given)


def _file_values(path: Path) -> dict[str, Any] | None:
    import tomllib  # noqa: PLC0415 - only when there is a config file

    try:
        with path.open("rb") as file:
            values = tomllib.load(file)
    except (OSError, ValueError):  # the full load words the error
        return None
    return values if QUICK_KEYS.issuperset(values) else None


def _env_values() -> dict[str, Any] | None:
    """Variables are matched whatever their case, as the full load does; a name this module
    does not resolve (another setting, a secret, a typo to warn about) needs the full load."""
    values: dict[str, Any] = {}
    for name, value in os.environ.items():
        upper = name.upper()
        if not upper.startswith(ENV_PREFIX) or upper == CONFIG_ENV:
            continue
        key = upper[len(ENV_PREFIX) :].lower()
        if key not in QUICK_KEYS or key in values:
            return None
        values[key] = value
    return values


def _certainly_valid(given: dict[str, Any]) -> ReadSettings | None:
    db = given.get("db")
    level = given.get("log_level", DEFAULT_LOG_LEVEL)
    if db is not None and not (isinstance(db, Path) or (isinstance(db, str) and db.strip())):
        return None
    if level not in LOG_LEVELS:
        return None
    try:
        timeout = parse_duration(given.get("lock_timeout", DEFAULT_LOCK_TIMEOUT))
    except ValueError:
        return None
    return ReadSettings(Path(db) if db is not None else None, timeout, level)


def memory_size(text: str) -> str:
    """A DuckDB memory_limit from a size ("2GiB", "512MB") or a share of the machine's RAM
    ("25%"); ValueError naming the accepted forms otherwise."""
    if _SIZE.match(text):
        return text.strip()
    share = _SHARE.match(text)
    if share is None or not 0 < float(share.group(1)) <= 100:
        raise ValueError(f"{text!r}: use a size such as 2GiB or 512MB, or a share of RAM like 25%")
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return f"{max(64, int(ram * float(share.group(1)) / 100) >> 20)}MiB"


def reader_config(bounds: ReaderBounds) -> dict[str, str | int]:
    """The DuckDB settings every reader opens with (before its configuration is locked)."""
    return {"memory_limit": memory_size(bounds.memory_limit), "threads": bounds.threads}
