"""`priceadvisor lake …`: move a history between a DuckDB file and the configured lake, and
keep the lake's storage in bounds (`lake maintain`)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from priceadvisor.cli.common import UsageError, job_lease, out, state
from priceadvisor.cli.output import Format, render
from priceadvisor.durations import parse_duration

if TYPE_CHECKING:
    from priceadvisor.store.lake import Lake

commands = typer.Typer()
lake_app = typer.Typer(
    help="Move the history between a DuckDB file and the lake (\\[lake] settings); maintain it.",
    no_args_is_help=True,
)
commands.add_typer(lake_app, name="lake")


def _configured_lake(ctx: typer.Context) -> Lake:
    from priceadvisor.service.stores import configured_lake

    settings = state(ctx).settings
    if settings.lake is None:
        raise UsageError("no [lake] section in the config: set lake.catalog and lake.data_path")
    return configured_lake(settings, settings.lake)


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


def _duration(option: str, text: str) -> dt.timedelta:
    try:
        return dt.timedelta(seconds=parse_duration(text))
    except ValueError as exc:
        raise UsageError(f"{option}: {exc}") from None


# For the error while the lease is held: a daemon keeps it for `[daemon] lease` after its run.
_MAINTENANCE_ACTIVITY = "holds the maintenance lease: it is maintaining the lake or just did"


@lake_app.command()
def maintain(
    ctx: typer.Context,
    keep: Annotated[
        str | None,
        typer.Option(
            help="Snapshots kept for --as-of, e.g. 90d (default: lake.snapshot_retention)."
        ),
    ] = None,
    grace: Annotated[
        str,
        typer.Option(help="Delete only files freed at least this long ago (running queries)."),
    ] = "10m",
) -> None:
    """Flush rows inlined in the catalog, rewrite data files with many deleted rows, merge
    small ones, expire snapshots older than the retention, delete old files."""
    from priceadvisor.store import maintenance

    started = dt.datetime.now(dt.UTC)  # the retention counts back from here, not the lease's end
    current = state(ctx)
    settings, store = current.settings, current.store
    if store.file is not None or settings.lake is None:
        raise UsageError(
            f"storage is the DuckDB file {store.describe()}: nothing to maintain (its CHECKPOINT "
            "merges and frees space)"
        )
    if keep is None:
        retention = dt.timedelta(seconds=settings.lake.snapshot_retention)
    else:
        retention = _duration("--keep", keep)
    wait = _duration("--grace", grace)
    with (
        job_lease(settings, store, "maintenance", _MAINTENANCE_ACTIVITY),
        store.writer() as con,
    ):
        report = maintenance.run(con, retention, wait, started)
    for line in report.lines():
        out.print(line, markup=False, highlight=False)
