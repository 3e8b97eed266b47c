"""What every CLI command shares: the consoles, the per-invocation state, common options."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperOption

from priceadvisor.cli.consoles import err, out
from priceadvisor.cli.errors import UsageError, UserError
from priceadvisor.cli.output import Format
from priceadvisor.config_basics import DbSettings, ReadSettings, quick_settings

if TYPE_CHECKING:
    from priceadvisor.config import Settings
    from priceadvisor.store.handle import Store

# The consoles and errors every command uses, defined in light modules (cli/light.py starts
# `prices` without this one) and shared from here.
__all__ = ["AppState", "FormatOpt", "ProviderOpt", "UsageError", "UserError", "err", "out"]
__all__ += ["job_lease", "state"]


@dataclass(slots=True)
class AppState:
    config: Path | None
    db: Path | None
    _settings: Settings | None = None
    _read: ReadSettings | None = None
    _store: Store | None = None

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            from priceadvisor.config import load_settings, unknown_env_vars

            overrides: dict[str, Any] = {"db": self.db} if self.db else {}
            self._settings = load_settings(self.config, **overrides)
            for name in unknown_env_vars(self._settings):
                err.print(
                    f"warning: ignoring unknown environment variable {name}",
                    markup=False,
                    highlight=False,
                )
            _configure_logging(self._settings.log_level)
            _limit_readers(self._settings)
        return self._settings

    @property
    def read_settings(self) -> DbSettings:
        """For commands that only read the database: the same values as `settings`, without
        loading pydantic when the configuration holds nothing else (config_basics)."""
        if self._settings is None and self._read is None:
            self._read = quick_settings(self.config, self.db)
            if self._read is not None:
                _configure_logging(self._read.log_level)
                _limit_readers(self._read)
        return self._read or self.settings

    @property
    def store(self) -> Store:
        """The configured store, built once (service.stores: the lake's secrets resolved
        there); from the light read settings when those are all the command needed so far."""
        if self._store is None:
            from priceadvisor.service.stores import configured_store

            self._store = configured_store(self.read_settings)
        return self._store


def _limit_readers(settings: DbSettings) -> None:
    from priceadvisor.store import connections

    connections.limit_readers(settings.readers)


def _configure_logging(level: str) -> None:
    logging.basicConfig(
        level=level, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
    )
    # httpx logs every request at INFO; the fetch summary already counts them.
    logging.getLogger("httpx").setLevel(logging.WARNING)


def state(ctx: typer.Context) -> AppState:
    current = ctx.obj
    assert isinstance(current, AppState)
    return current


_typer_metavar = TyperOption.make_metavar


def _repeatable_metavar(self: TyperOption, ctx: Any) -> str:
    """Typer's --help names an option's value (`<str>`) the same whether the option takes one
    value or repeats: a repeatable option says it repeats (`<str>…`)."""
    metavar = _typer_metavar(self, ctx)
    return f"{metavar}…" if self.multiple else metavar


TyperOption.make_metavar = _repeatable_metavar  # type: ignore[method-assign]

ProviderOpt = Annotated[
    list[str] | None, typer.Option("--provider", "-p", help="Provider id; repeat for several.")
]
FormatOpt = Annotated[Format, typer.Option("--format", "-f", help="Output format.")]


@contextmanager
def job_lease(settings: Settings, store: Store, job: str, activity: str) -> Iterator[None]:
    """The daemons' lease on `job` (store.leases), held while the command does that job: a
    manual run takes its turn like a daemon, waiting up to lock_timeout for the holder (then
    one line naming it: "<holder> <activity>"), and gives the lease back when it is done."""
    # The store loads here, for the commands that run such a job, not at every start-up.
    from priceadvisor.records import utcnow
    from priceadvisor.store import leases

    holder = leases.holder_id()
    deadline = time.monotonic() + store.lock_timeout
    while not _take_lease(settings, store, holder, job):
        if time.monotonic() >= deadline:
            with store.reader() as con:
                other, until = leases.current(con, job)
            raise UserError(f"{other} {activity} (lease until {until:%H:%M:%S} UTC)")
        time.sleep(0.5)
    try:
        yield
    finally:
        with store.writer() as con:
            leases.release(con, job, holder, utcnow())


def _take_lease(settings: Settings, store: Store, holder: str, job: str) -> bool:
    from priceadvisor.records import utcnow
    from priceadvisor.store import leases

    with store.writer() as con:
        return leases.acquire(con, job, holder, settings.daemon.lease, utcnow())
