"""The console entry point. `prices`, the command people run most, starts here without Typer,
pydantic or logging (~0.1 s of imports on every start): when the arguments are ones this
module reads with certainty and the configuration is one config_basics resolves alone, it runs
the same query (cli/price_listing.py) and prints the same bytes the Typer command would. Where
plain text is exactly what Rich would print (a pipe, a table at its natural width: see
cli/plaintable.py), Rich is not imported either; a terminal (styles, the window's width), a
table Rich lays out otherwise, or a tab in CSV is printed by Rich, through the Typer command's
own console and code (cli/consoles.py, cli/prices.py). Which recorded providers hold offers
comes from the manifests' `kind`, read without pydantic (manifest_files.py).

Any other command line (another command, --help, an option it does not know, --provider, a value
that looks like an option), a stdout that is not UTF-8, and a configuration or manifest only the
full load reads go to the Typer app (cli/app.py), which then does everything from the start:
behaviour never differs, only the start-up time does. A failure it can word (a usage,
configuration or store error) ends here, in the Typer app's words and exit code.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from priceadvisor.cli import plaintable
from priceadvisor.cli import prices as layout
from priceadvisor.cli.errors import UsageError, UserError, fail, os_error_text, with_recorded_hint
from priceadvisor.cli.output import PIPED_WIDTH, Format, to_csv, to_json
from priceadvisor.cli.price_listing import Listing, PricesRequest, listing
from priceadvisor.config_basics import ConfigError, DbSettings, ReadSettings, quick_settings
from priceadvisor.resources import ResourceError
from priceadvisor.store.errors import StoreError
from priceadvisor.store.handle import Store

# The options of `prices` read here (the Typer command's names; tests/cli/test_light_start.py
# checks them against it). --provider is not: checking a provider id imports the adapters.
VALUES = {
    "--gpu": "gpu",
    "--country": "country",
    "--continent": "continent",
    "--pricing": "pricing",
    "--sort": "sort",
    "--limit": "limit",
    "--columns": "columns",
    "--as-of": "as_of",
    "--format": "fmt",
    "-f": "fmt",
}
FLAGS = {
    "--eu": "eu",
    "--wide": "wide",
    "--include-derived": "include_derived",
    "--include-flagged": "include_flagged",
    "--verbose": "verbose",
    "-v": "verbose",
}
GLOBALS = {"--config": "config", "--db": "db"}
LIMIT_RANGE = range(1, 10**9 + 1)  # the Typer option's min and max
# What makes Rich treat a pipe as a terminal (styles, another width): the Typer app then prints.
RICH_TERMINAL_SWITCHES = ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")


class NotLight(Exception):
    """The Typer app answers this command line (see the module's docstring)."""


def main(argv: list[str] | None = None) -> NoReturn:
    args = sys.argv[1:] if argv is None else argv
    if _answered(args):
        sys.exit(0)
    from priceadvisor.cli.app import main as typer_main

    typer_main(args)
    sys.exit(0)  # typer_main always exits; this says so to the type checker


def _answered(args: list[str]) -> bool:
    """Whether this start answered `args` (printed the result, or exited with an error)."""
    parsed = parse(args)
    if parsed is None:
        return False
    state, request = parsed
    if not _utf8_stdout():
        return False
    try:
        found = listing(state, request, _ManifestFiles())
    except NotLight:
        return False
    except (ConfigError, UsageError) as exc:
        fail(str(exc), 2)
    except StoreError as exc:
        fail(with_recorded_hint(str(exc)), 1)
    except (UserError, ResourceError) as exc:
        fail(str(exc), 1)
    except KeyboardInterrupt:
        sys.exit(130)  # as Typer ends on Ctrl-C: the code alone
    except Exception:  # the Typer app words anything unexpected, from the start
        return False
    _print(found, request.fmt)
    return True


def _print(found: Listing, fmt: Format) -> None:
    """The plain text where it is exactly Rich's; else Rich prints it (~15 ms of imports),
    through the Typer command's own console and code."""
    text = _plain_text(found, fmt)
    if text is not None:
        _write(lambda: (sys.stdout.write(text), sys.stdout.flush()))
        return
    from priceadvisor.cli.consoles import out

    if fmt is Format.TABLE:
        _write(
            lambda: layout.print_rich(
                out, found.table, found.title, found.notes, found.noun, found.narrows
            )
        )
    else:
        from priceadvisor.cli.output import render

        _write(lambda: render(found.table, fmt, out))


def _write(printing: Callable[[], object]) -> None:
    """Print; a reader that went away (`| head`) ends it with exit code 1 and no message, as
    Typer does."""
    try:
        printing()
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:
        # Python flushes stdout again at exit: into /dev/null, not the closed pipe
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
    except OSError as exc:  # a full disk: the file system's words, as the Typer app says it
        fail(os_error_text(exc), 1)


def parse(args: list[str]) -> tuple[LightState, PricesRequest] | None:
    """The global options and `prices`' options, or None for anything else."""
    command = _command_at(args)
    if command is None or args[command] != "prices":
        return None
    given = _read(args[:command], GLOBALS, {})
    options = _read(args[command + 1 :], VALUES, FLAGS)
    if given is None or options is None or "" in given.values():
        return None
    request = _request(options)
    if request is None:
        return None
    return LightState(given.get("config"), given.get("db")), request


def _command_at(args: list[str]) -> int | None:
    """Where the command is: after the global options and their values (`--db FILE`)."""
    at = 0
    while at < len(args) and args[at].startswith("-"):
        at += 2 if args[at] in GLOBALS else 1
    return at if at < len(args) else None


def _read(args: list[str], values: dict[str, str], flags: dict[str, str]) -> dict[str, Any] | None:
    """Options as click reads them, but only the unambiguous forms: `--name value`,
    `--name=value`, `-f value`, a flag alone; each given once, no value starting with `-`."""
    found: dict[str, Any] = {}
    remaining = iter(args)
    for arg in remaining:
        name, equals, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        key = flags.get(name) if not equals else None
        given: str | bool | None = True
        if key is None and name in values:
            key, given = values[name], value if equals else next(remaining, None)
            if given is None or given.startswith("-"):
                return None
        if key is None or key in found:
            return None
        found[key] = given
    return found


def _request(options: dict[str, Any]) -> PricesRequest | None:
    limit = options.get("limit")
    if limit is not None:
        if not limit.isascii() or not limit.isdigit() or int(limit) not in LIMIT_RANGE:
            return None
        options["limit"] = int(limit)
    fmt = options.get("fmt", Format.TABLE.value)
    if fmt not in tuple(Format):
        return None
    options["fmt"] = Format(fmt)
    return PricesRequest(**options)


class LightState:
    """The CLI's state (common.AppState) for the light start: the read settings of
    config_basics or nothing (NotLight), and the store they name."""

    __slots__ = ("_read", "_store", "config", "db")

    def __init__(self, config: str | None, db: str | None) -> None:
        self.config, self.db = config, db
        self._read: ReadSettings | None = None
        self._store: Store | None = None

    @property
    def read_settings(self) -> DbSettings:
        if self._read is None:
            db = Path(self.db) if self.db is not None else None
            config = Path(self.config) if self.config is not None else None
            self._read = quick_settings(config, db)
            if self._read is None:
                raise NotLight("the configuration needs the full load")
            # No logging set up: no reader logs (connections logs only a writer's long wait).
            from priceadvisor.store import connections

            connections.limit_readers(self._read.readers)
        return self._read

    @property
    def store(self) -> Store:
        if self._store is None:
            from priceadvisor.service.stores import configured_store

            self._store = configured_store(self.read_settings)
        return self._store


class _ManifestFiles:
    """Provider facts without the adapters or pydantic: which recorded providers hold offers
    from the manifests' `kind` (manifest_files.py, shared with the manifest model). Checking
    provider ids (--provider) imports the adapters: that command line is the Typer app's."""

    def known(self, ids: list[str]) -> list[str]:
        if ids:
            raise NotLight("checking provider ids imports the adapters")
        return []

    def offers_source(self, provider: str) -> bool:
        # only for a recorded provider: a live database never loads tomllib for it
        from priceadvisor.manifest_files import ManifestFileError, holds_offers

        try:
            return holds_offers(provider)
        except ManifestFileError:
            raise NotLight("a manifest only the full model words an error for") from None


def _plain_text(found: Listing, fmt: Format) -> str | None:
    """What the Typer command prints for `found`, exactly, without Rich; or None where Rich
    must print it: a table on a terminal (styled, sized to the window) or one Rich lays out
    otherwise (cli/plaintable.py), a tab (Rich expands it)."""
    if fmt is Format.JSON:
        return _unchanged_by_rich(to_json(found.table) + "\n")
    if fmt is Format.CSV:
        return _unchanged_by_rich(to_csv(found.table))
    if _rich_sees_a_terminal():
        return None
    columns = layout.shown_columns(found.table, found.noun)
    cells = layout.shown_cells(found.table)
    drawn = plaintable.draw(found.title, columns, cells, PIPED_WIDTH)
    notes = [plaintable.note_line(note, PIPED_WIDTH) for note in found.notes]
    if drawn is None or None in notes:
        return None
    return drawn + "".join(n for n in notes if n is not None)


def _utf8_stdout() -> bool:
    """Rich draws an ASCII box, and words what it cannot encode, on another encoding
    (PYTHONIOENCODING=ascii): the Typer app prints there."""
    return (sys.stdout.encoding or "utf-8").lower().replace("_", "-") in ("utf-8", "utf8")


def _rich_sees_a_terminal() -> bool:
    """A terminal gets a styled table sized to its window: Rich draws that."""
    return sys.stdout.isatty() or any(name in os.environ for name in RICH_TERMINAL_SWITCHES)


def _unchanged_by_rich(text: str) -> str | None:
    """CSV and JSON go out through Rich's Console.out, which expands tabs (JSON escapes them;
    a CSV cell keeps them)."""
    return None if "\t" in text else text
