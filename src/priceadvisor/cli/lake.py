"""`priceadvisor lake …`: move a history between a DuckDB file and the configured lake."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from priceadvisor.cli.common import UsageError, out, state
from priceadvisor.cli.output import Format, render

if TYPE_CHECKING:
    from priceadvisor.store.lake import Lake

commands = typer.Typer()
lake_app = typer.Typer(
    help="Move the history between a DuckDB file and the lake ([lake] settings).",
    no_args_is_help=True,
)
commands.add_typer(lake_app, name="lake")


def _configured_lake(ctx: typer.Context) -> Lake:
    from priceadvisor.store import lake

    settings = state(ctx).settings
    if settings.lake is None:
        raise UsageError("no [lake] section in the config: set lake.catalog and lake.data_path")
    return lake.from_settings(settings, settings.lake)


def _show(counts: dict[str, tuple[int, str | None]], title: str) -> None:
    from priceadvisor.store.reads import Table

    rows = [(table, n, digest) for table, (n, digest) in counts.items()]
    render(Table(["table", "rows", "md5"], rows), Format.TABLE, out, title=title)


@lake_app.command("import")
def import_(
    ctx: typer.Context,
    source: Annotated[Path, typer.Option("--from", help="The DuckDB file to copy in.")],
) -> None:
    """Copy a DuckDB file's whole history into an empty lake, verified table by table."""
    from priceadvisor.store import lakecopy

    target = _configured_lake(ctx)
    counts = lakecopy.import_file(source, target)
    _show(counts, f"Imported {source} into {target.describe()} (verified)")


@lake_app.command("export")
def export(
    ctx: typer.Context,
    dest: Annotated[Path, typer.Option("--to", help="A new DuckDB file to write.")],
) -> None:
    """Copy the lake's whole history into a new DuckDB file, verified table by table."""
    from priceadvisor.store import lakecopy

    target = _configured_lake(ctx)
    counts = lakecopy.export_file(target, dest)
    _show(counts, f"Exported {target.describe()} to {dest} (verified)")
