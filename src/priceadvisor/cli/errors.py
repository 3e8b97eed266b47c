"""How the CLI words a failure: one line on stderr and an exit code (2 for usage and
configuration errors, 1 for the rest). Light to import: the Typer app and the light start of
the read commands (cli/light.py) share it, and Rich loads only when a line is printed."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NoReturn

from priceadvisor.config_basics import default_db_path, recorded_db_path


class UserError(Exception):
    """A request that cannot be done (invalid SQL, an existing demo database); exit 1."""


class UsageError(UserError):
    """A command used in a way it does not accept (an unknown country, GPU or column, an
    argument out of range); exit 2, like a malformed argument. SQL that `sql` refuses is a
    UserError: the argument is well formed, the request cannot be done."""


def fail(message: str, code: int) -> NoReturn:
    from priceadvisor.cli.consoles import err
    from priceadvisor.cli.output import clean

    err.print(f"error: {clean(one_line_text(message))}", highlight=False, markup=False)
    sys.exit(code)


def one_line_text(message: str) -> str:
    return " ".join(message.split())


def os_error_text(exc: OSError) -> str:
    """The file system's own words, and the file."""
    where = f": {exc.filename}" if exc.filename else ""
    return f"{exc.strerror or exc}{where}"


def recorded_database_hint(reading: Path) -> str | None:
    """Where `fetch --offline` wrote recorded responses, when `reading` is the default live
    database (recordings go beside it, never in it) and that file exists: the option to read
    them. None otherwise (another --db, or no recordings)."""
    recorded = recorded_db_path()
    if reading != default_db_path() or not recorded.is_file():
        return None
    return f"recorded responses (fetch --offline) are in {recorded}: add --db {recorded}"


def with_recorded_hint(message: str) -> str:
    """A reader that found no default database, where `fetch --offline` wrote recorded.duckdb
    beside it, says how to read that one."""
    hint = recorded_database_hint(default_db_path())
    missing = f"no database at {default_db_path()}"
    return f"{message}; {hint}" if hint and message.startswith(missing) else message
