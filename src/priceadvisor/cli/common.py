"""What every CLI command shares: the consoles, the per-invocation state, common options."""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from priceadvisor.cli.output import Format
from priceadvisor.config import Settings, load_settings, unknown_env_vars

# Piped output is not cut to 80 columns: scripts and CI logs get whole tables.
out = Console(soft_wrap=True, width=None if sys.stdout.isatty() else 250)
err = Console(stderr=True, soft_wrap=True)


class UserError(Exception):
    """Bad input from the user; exit 1 with the message."""


class UsageError(UserError):
    """A command used in a way it does not accept (an argument out of range, a refused SQL
    statement); exit 2 with the message, like a malformed argument."""


@dataclass(slots=True)
class AppState:
    config: Path | None
    db: Path | None
    _settings: Settings | None = None

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            overrides: dict[str, Any] = {"db": self.db} if self.db else {}
            self._settings = load_settings(self.config, **overrides)
            for name in unknown_env_vars(self._settings):
                err.print(
                    f"warning: ignoring unknown environment variable {name}",
                    markup=False,
                    highlight=False,
                )
            logging.basicConfig(
                level=self._settings.log_level,
                stream=sys.stderr,
                format="%(levelname)s %(name)s: %(message)s",
            )
            # httpx logs every request at INFO; the fetch summary already counts them.
            logging.getLogger("httpx").setLevel(logging.WARNING)
        return self._settings


def state(ctx: typer.Context) -> AppState:
    current = ctx.obj
    assert isinstance(current, AppState)
    return current


ProviderOpt = Annotated[
    list[str] | None, typer.Option("--provider", "-p", help="Provider id; repeat for several.")
]
FormatOpt = Annotated[Format, typer.Option("--format", "-f", help="Output format.")]
