"""The `priceadvisor` command line. Errors are one line and a non-zero exit: 2 for usage and
configuration errors, 1 for the rest (README "Using it")."""

from __future__ import annotations

import copy
import datetime as dt
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import duckdb
import typer

from priceadvisor import __version__
from priceadvisor.cli import filters
from priceadvisor.cli import prices as layout
from priceadvisor.cli.common import (
    AppState,
    FormatOpt,
    ProviderOpt,
    UsageError,
    UserError,
    err,
    out,
    state,
)
from priceadvisor.cli.output import Format, clean, render, stream, to_rich
from priceadvisor.cli.sqlguard import check_read_only
from priceadvisor.config_light import ConfigError, default_db_path, recorded_db_path
from priceadvisor.models import RunStatus
from priceadvisor.resources import ResourceError
from priceadvisor.store import db as store
from priceadvisor.store import reads

if TYPE_CHECKING:
    from priceadvisor.config import Settings
    from priceadvisor.models import IngestSummary

# The read commands (prices, history, sql) start in a fraction of the time when the adapters,
# HTTP, HTML parsing, the scheduler and the web server are not imported: each command imports
# what only it needs (tests/cli/test_startup.py keeps the read path free of them).

app = typer.Typer(
    name="priceadvisor",
    help="Live cloud GPU prices in DuckDB, with history, workload costs and alerts.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        out.print(f"priceadvisor {__version__}")
        raise typer.Exit()


@app.callback()
def _global(
    ctx: typer.Context,
    config: Annotated[Path | None, typer.Option("--config", help="TOML config file.")] = None,
    db: Annotated[
        Path | None,
        typer.Option(
            "--db", help=f"DuckDB file (env PRICEADVISOR_DB; default {default_db_path()})."
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Show the version and exit."
        ),
    ] = False,
) -> None:
    ctx.obj = AppState(config, db)


def _known_providers(ids: list[str] | None) -> list[str]:
    if ids:
        from priceadvisor.collect.adapters import adapter_class

        for provider_id in ids:
            adapter_class(provider_id)
    return list(ids or [])


@app.command()
def fetch(
    ctx: typer.Context,
    provider: ProviderOpt = None,
    offline: Annotated[
        bool,
        typer.Option(
            "--offline",
            help="Replay the recorded responses shipped with the package, into their own "
            f"database ({recorded_db_path()}) unless --db or --into-live is given.",
        ),
    ] = False,
    into_live: Annotated[
        bool,
        typer.Option(
            "--into-live", help="With --offline: write into the configured database anyway."
        ),
    ] = False,
    fmt: FormatOpt = Format.TABLE,
) -> None:
    """Fetch current prices from providers into the database (all enabled by default)."""
    from priceadvisor.collect.fetch import enabled_providers
    from priceadvisor.manifest import manifest_ids

    current = state(ctx)
    settings = current.settings
    ids = _known_providers(provider) or enabled_providers(settings, manifest_ids())
    if not ids:
        raise UsageError("no provider enabled: enable one in the config or pass --provider")
    # Recorded prices never land in the live database by default: they would pass for live.
    path = recorded_db_path() if offline and current.db is None and not into_live else None
    summaries = _fetch_with_progress(settings, ids, offline, path)
    render(_summary_table(summaries), fmt, out, title="Fetch summary")
    if path is not None:
        err.print(f"recorded responses written to {path}; read them with --db {path}")
    if any(s.status is RunStatus.FAILED for s in summaries):
        raise typer.Exit(1)


def _fetch_with_progress(
    settings: Settings, ids: list[str], offline: bool, path: Path | None = None
) -> list[IngestSummary]:
    from priceadvisor.cli.progress import FetchProgress
    from priceadvisor.collect.fetch import run_cycle

    with FetchProgress(err, ids) as progress:
        return run_cycle(settings, ids, offline, progress.update, path)


def _summary_table(summaries: list[IngestSummary]) -> reads.Table:
    columns = [
        "provider",
        "status",
        "offers",
        "new",
        "changed",
        "closed",
        "rejected",
        "duplicates",
        "flagged",
        "unmapped",
        "requests",
        "bytes",
        "seconds",
        "error",
    ]
    rows = [
        (
            s.provider,
            str(s.status),
            s.offers_seen,
            s.offers_new,
            s.offers_changed,
            s.offers_closed,
            s.offers_rejected,
            s.offers_duplicate,
            s.offers_flagged,
            s.unmapped,
            s.requests,
            s.bytes,
            round(s.duration_s, 3),
            s.error,
        )
        for s in summaries
    ]
    return reads.Table(columns, rows)


def _offer_filter(
    provider: list[str] | None,
    country: str | None,
    continent: str | None,
    eu: bool,
    pricing: str | None,
    include_derived: bool = False,
    include_flagged: bool = False,
) -> reads.OfferFilter:
    return reads.OfferFilter(
        providers=_known_providers(provider),
        country=filters.country_code(country) if country else None,
        continent=filters.continent_code(continent) if continent else None,
        eu=eu,
        pricing=filters.pricing(pricing) if pricing else None,
        include_derived=include_derived,
        include_flagged=include_flagged,
    )


def _resolve_gpu(con: duckdb.DuckDBPyConnection, flt: reads.OfferFilter, gpu: str | None) -> None:
    """--gpu as typed to catalog ids, against the catalog the database holds: a small query
    where parsing gpus.toml cost each start ~7 ms."""
    if gpu:
        flt.gpu_models = filters.gpu_models(gpu, reads.gpu_families(con))


GpuOpt = Annotated[
    str | None,
    typer.Option(
        help="GPU model (H100-SXM-80GB) or family (H100: every variant, not GH100); "
        "a trailing * matches a prefix (H100-S*)."
    ),
]
CountryOpt = Annotated[str | None, typer.Option(help="Country: code (DE) or name (Germany).")]
ContinentOpt = Annotated[
    str | None, typer.Option(help="Continent: code or name, AF AS EU NA OC SA (EU = Europe).")
]
EuOpt = Annotated[bool, typer.Option("--eu", help="Only EU member states.")]
PricingOpt = Annotated[
    str | None,
    typer.Option(help="on_demand, spot or market (market averages are shown only when asked)."),
]


TABLE_ROWS = 50  # what a terminal shows when --limit is not given; machine formats get all
DerivedOpt = Annotated[
    bool,
    typer.Option(
        "--include-derived",
        help="Also show prices derived by a rule (e.g. OCI preemptible = 50 % of on-demand).",
    ),
]
FlaggedOpt = Annotated[
    bool,
    typer.Option(
        "--include-flagged",
        help="Also show offers the offer guard flagged (a placeholder, a price far below its "
        "market, ...), with the reason; see docs/offers-guard.md.",
    ),
]


@app.command()
def prices(
    ctx: typer.Context,
    gpu: GpuOpt = None,
    provider: ProviderOpt = None,
    country: CountryOpt = None,
    continent: ContinentOpt = None,
    eu: EuOpt = False,
    pricing: PricingOpt = None,
    sort: Annotated[
        str, typer.Option(help=f"Sort by: {', '.join(reads.PRICE_SORTS)}.")
    ] = "gpu-hour",
    limit: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=10**9,
            help=f"At most this many rows (table default {TABLE_ROWS}; "
            "csv and json return every row).",
        ),
    ] = None,
    columns: Annotated[
        str | None,
        typer.Option(help=f"Comma-separated columns: {', '.join(layout.FIELDS)}."),
    ] = None,
    wide: Annotated[bool, typer.Option("--wide", help="Every column (a wide terminal).")] = False,
    include_derived: DerivedOpt = False,
    include_flagged: FlaggedOpt = False,
    as_of: Annotated[
        str | None,
        typer.Option(
            "--as-of",
            help="The offers as of this time (ISO 8601, UTC unless it has an offset): a lake's "
            "snapshot then (kept for lake.snapshot_retention), or a DuckDB file's price "
            "intervals open then.",
        ),
    ] = None,
    fmt: FormatOpt = Format.TABLE,
) -> None:
    """Current offers, cheapest per GPU-hour first: published prices of mapped GPUs (derived
    prices with --include-derived; offers the offer guard flagged with --include-flagged;
    offers with an unmapped GPU: `doctor`)."""
    moment = _moment(as_of) if as_of is not None else None
    if sort not in reads.PRICE_SORTS:
        raise UsageError(f"unknown sort {sort!r} (use one of {', '.join(reads.PRICE_SORTS)})")
    flt = _offer_filter(provider, country, continent, eu, pricing, include_derived, include_flagged)
    # Machine formats get every column unless --columns: a stable shape for scripts.
    fields = layout.chosen(columns, wide or fmt is not Format.TABLE)
    if include_flagged and columns is None and "flag" not in fields:
        fields = (*fields, "flag")
    shown = layout.view_columns(fields)
    rows = limit if limit is not None or fmt is not Format.TABLE else TABLE_ROWS
    settings = state(ctx).read_settings
    with store.reader(store.target(settings), settings.lock_timeout, as_of=moment) as con:
        _resolve_gpu(con, flt, gpu)
        if moment is not None and not reads.has_flags(con):
            # a lake snapshot from before the offer guard existed: nothing was flagged then
            flt.include_flagged = True
            shown = tuple(c for c in shown if c != "flag_reason")
        table = reads.prices(con, flt, sort, rows, shown)
        sources = reads.latest_sources(con)
        hidden = 0 if flt.include_flagged else reads.count_flagged(con, flt)
    if fmt is Format.TABLE:
        notes = _price_notes(table, sources)
        if hidden:
            offers = "offer" if hidden == 1 else "offers"
            notes.append(f"{hidden} flagged {offers} left out: --include-flagged to see them")
        title = f"GPU offers as of {as_of} (USD)" if as_of else "Current GPU offers (USD)"
        out.print(layout.to_rich(table, title, notes))
    else:
        render(table, fmt, out)


def _moment(text: str) -> dt.datetime:
    try:
        return dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise UsageError(
            f"--as-of takes an ISO 8601 time such as 2026-11-20T08:00 (UTC) or "
            f"2026-11-20T09:00+01:00, got {text!r}"
        ) from None


def _price_notes(table: reads.Table, sources: dict[str, str | None]) -> list[str]:
    notes = []
    if table.total is not None:
        notes.append(f"showing {len(table.rows)} of {table.total}: --limit N for more")
    elif not table.rows:
        notes.append("no offers match")
    recorded = sorted(
        p for p, source in sources.items() if source == "recorded" and _offers_source(p)
    )
    if recorded:
        notes.append(f"recorded responses, not live prices: {', '.join(recorded)}")
    return notes


@app.command()
def history(
    ctx: typer.Context,
    gpu: GpuOpt = None,
    provider: ProviderOpt = None,
    region: Annotated[str | None, typer.Option(help="Provider region code.")] = None,
    instance_type: Annotated[str | None, typer.Option(help="Exact instance type.")] = None,
    pricing: PricingOpt = None,
    limit: Annotated[int, typer.Option(min=1, max=10**9, help="At most this many rows.")] = 100,
    fmt: FormatOpt = Format.TABLE,
) -> None:
    """Price intervals over time (newest first per offer), published and derived."""
    flt = _offer_filter(provider, None, None, False, pricing, include_derived=True)
    settings = state(ctx).read_settings
    with store.reader(store.target(settings), settings.lock_timeout) as con:
        _resolve_gpu(con, flt, gpu)
        table = reads.history(con, flt, region, instance_type, limit)
    render(table, fmt, out, title="Price history (USD)")


@app.command()
def sql(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="One read-only SQL statement.")],
    fmt: FormatOpt = Format.TABLE,
) -> None:
    """Run one read-only SQL query against the public views (see docs/sql.md). A table shows
    the first 1000 rows; csv and json stream every row."""
    settings = state(ctx).read_settings
    with store.reader(store.target(settings), settings.lock_timeout) as con:
        check_read_only(con, query)
        with _sql_errors():
            if fmt is not Format.TABLE:
                columns, batches = reads.fetch_batches(con, query)
                stream(columns, batches, fmt, out)
                return
            table, more = reads.fetch_first(con, query, SQL_TABLE_ROWS)
            total = reads.count_rows(con, query) if more else None
    shown = to_rich(table)
    if more:
        of = f"{SQL_TABLE_ROWS} of {total}" if total is not None else f"the first {SQL_TABLE_ROWS}"
        shown.caption = f"showing {of} rows: --format csv or json for all"
    out.print(shown)


SQL_TABLE_ROWS = 1000  # a terminal table; machine formats get every row


@contextmanager
def _sql_errors() -> Iterator[None]:
    """DuckDB's refusals and errors, while the query runs or its rows are fetched, as one line."""
    try:
        yield
    except duckdb.PermissionException as exc:
        raise UsageError(f"refused: {store.first_line(exc)}") from None
    except duckdb.Error as exc:
        raise UserError(f"SQL error: {_one_line(exc)}") from None


@app.command()
def export(
    ctx: typer.Context,
    out_dir: Annotated[
        Path | None,
        typer.Option("--out", help="Target folder (default: 'export' beside the database)."),
    ] = None,
) -> None:
    """Write the public views as Parquet, hive-partitioned by day."""
    from priceadvisor.store.export import export_database

    settings = state(ctx).settings
    target = out_dir or settings.db_path().parent / "export"
    counts = export_database(store.target(settings), target, settings.lock_timeout)
    rows = [(name, n) for name, n in counts.items()]
    render(reads.Table(["table", "rows"], rows), Format.TABLE, out, title=f"Exported to {target}")


@app.command()
def doctor(ctx: typer.Context, fmt: FormatOpt = Format.TABLE) -> None:
    """Check data health: providers stale or failing, unmapped GPU names. Exit 1 if unhealthy."""
    from priceadvisor.cli.doctor import render_report
    from priceadvisor.collect import health

    settings = state(ctx).settings
    report = health.check(settings)
    render_report(report, fmt, out)
    if not report.healthy:
        raise typer.Exit(1)


@app.command()
def providers(ctx: typer.Context, fmt: FormatOpt = Format.TABLE) -> None:
    """List providers: enabled, configured (or why not), interval, endpoints, last run."""
    from priceadvisor.collect import health

    table = health.providers_table(state(ctx).settings)
    render(table, fmt, out, title="Providers")


@app.command()
def run(
    ctx: typer.Context,
    offline: Annotated[
        bool,
        typer.Option(
            "--offline",
            help="Serve the recorded responses instead of the network, into their own database "
            f"({recorded_db_path()}) unless --db is given.",
        ),
    ] = False,
) -> None:
    """Run the service: scheduled fetches, advice, health and metrics, until SIGTERM."""
    import asyncio

    from priceadvisor.service.daemon import Daemon
    from priceadvisor.service.logs import configure

    current = state(ctx)
    settings = current.settings
    if offline and current.db is None:  # recorded prices never land in the live database
        settings = settings.model_copy(update={"db": recorded_db_path(), "storage": "duckdb"})
    configure(settings.log_level)
    daemon = Daemon(settings, offline=offline)
    if not daemon.providers:
        raise UserError(
            "no provider can run: enable and configure one (see `priceadvisor providers`)"
        )
    asyncio.run(daemon.run())


@app.command()
def demo(
    ctx: typer.Context,
    replace: Annotated[
        bool,
        typer.Option("--replace", help="Overwrite the database given by --db."),
    ] = False,
) -> None:
    """The whole pipeline offline into a fresh database, ending with a table of offers."""
    from priceadvisor.manifest import manifest_ids

    current = state(ctx)
    settings = current.settings
    path = _demo_path(current.db, replace)
    summaries = _fetch_with_progress(settings, manifest_ids(), True, path)
    render(_summary_table(summaries), Format.TABLE, out, title="Offline fetch (recorded data)")
    with store.reader(path, settings.lock_timeout) as con:
        table = reads.prices(
            con, reads.OfferFilter(), "gpu-hour", 25, layout.view_columns(layout.DEFAULT)
        )
        [(offers, cheapest)] = con.execute(
            "SELECT count(*), min(price_gpu_hour_usd) FROM offers"
        ).fetchall()
    out.print(layout.to_rich(table, "Cheapest current GPU offers (USD)", _price_notes(table, {})))
    # Jinja is imported here only: the daemon, which never renders, stays ~10 MB smaller.
    from priceadvisor.notify import render as templates

    out.out(
        templates.render(
            "cli/demo_next_steps.txt.j2",
            db_path=path,
            offers=offers,
            cheapest=cheapest,
            providers=[s.provider for s in summaries if _offers_source(s.provider)],
        ),
        highlight=False,
        end="",
    )


def _offers_source(provider: str) -> bool:
    """Whether a provider's data are offers (FX sources, such as ecb, only convert prices)."""
    from priceadvisor.manifest import manifest, manifest_ids

    return provider in manifest_ids() and manifest(provider).kind == "prices"


def _demo_path(given: Path | None, replace: bool) -> Path:
    """The demo's own database: a temporary file unless --db names one (never the configured
    one: the demo's recorded prices must not mix with live ones)."""
    import tempfile

    if given is None:
        path = Path(tempfile.gettempdir()) / "priceadvisor-demo" / "demo.duckdb"
    else:
        path = given
        if path.exists() and not replace:
            raise UserError(f"{path} exists; the demo needs a fresh database (add --replace)")
    for stale in (path, path.with_name(path.name + ".wal")):
        stale.unlink(missing_ok=True)
    return path


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


_USER_ERRORS = (UserError, store.StoreError, ResourceError)


def _is_unknown_provider(exc: Exception) -> bool:
    """Only a command that imported the adapters can raise their error (the read path never
    imports them, so neither does the error handling)."""
    return _raised_by("priceadvisor.collect.adapters", "UnknownProviderError", exc)


def _is_manifest_error(exc: Exception) -> bool:
    """Likewise the manifests: reading them imports pydantic, which the read path does not."""
    return _raised_by("priceadvisor.manifest", "ManifestError", exc)


def _raised_by(module: str, error: str, exc: Exception) -> bool:
    loaded = sys.modules.get(module)
    return loaded is not None and isinstance(exc, getattr(loaded, error))


def main(argv: list[str] | None = None) -> None:
    """Console entry point: turn every expected failure into one line and an exit code."""
    args = sys.argv[1:] if argv is None else argv
    try:
        code = _app_for(args)(args=args, standalone_mode=False)
    except (ConfigError, UsageError) as exc:
        _fail(str(exc), 2)
    except _USER_ERRORS as exc:
        _fail(str(exc), 1)
    except typer.Abort:
        _fail("aborted", 130)
    except Exception as exc:
        if _is_manifest_error(exc):
            _fail(str(exc), 1)
        if _is_unknown_provider(exc):
            _fail(str(exc), 2)
        if _is_usage_error(exc):
            _fail(exc.format_message(), exc.exit_code)  # type: ignore[attr-defined]
        _fail(_unexpected(exc), 1)
    sys.exit(code if isinstance(code, int) else 0)


def _unexpected(exc: Exception) -> str:
    """Anything no command turned into a message still ends as one line: the file system's
    or DuckDB's own words, else the exception; the traceback goes to the DEBUG log."""
    logging.getLogger("priceadvisor.cli").debug("unexpected error", exc_info=exc)
    if isinstance(exc, OSError):
        where = f": {exc.filename}" if exc.filename else ""
        return f"{exc.strerror or exc}{where}"
    if isinstance(exc, duckdb.Error):
        return f"database error: {store.first_line(exc)}"
    return f"unexpected {type(exc).__name__}: {store.first_line(exc)}"


def _is_usage_error(exc: Exception) -> bool:
    """Typer's bundled click raises ClickException subclasses for bad arguments; they are
    matched by shape because typer keeps that module private."""
    return hasattr(exc, "format_message") and isinstance(getattr(exc, "exit_code", None), int)


def _fail(message: str, code: int) -> None:
    err.print(f"error: {clean(_one_line_text(message))}", highlight=False, markup=False)
    sys.exit(code)


def _one_line_text(message: str) -> str:
    return " ".join(message.split())


def _app_for(args: list[str]) -> typer.Typer:
    """Typer builds the parameters of every command before it runs one (~30-50 ms for all of
    them, plus importing their modules): a command of this module runs in a copy of the app
    that holds only it. Anything else (help, the other modules' commands, a typo) gets it all."""
    name = _command_name(args)
    own = [c for c in app.registered_commands if _registered_name(c) == name]
    if not own:
        return _whole_app()
    single = copy.copy(app)
    single.registered_commands, single.registered_groups = own, []
    return single


def _command_name(args: list[str]) -> str | None:
    """The command in `args`, if only the global options that take a value come before it."""
    values = iter(args)
    for arg in values:
        if arg in ("--config", "--db"):
            next(values, None)
        elif not arg.startswith(("--config=", "--db=")):
            return None if arg.startswith("-") else arg
    return None


def _registered_name(command: typer.models.CommandInfo) -> str:
    return command.name or typer.main.get_command_name(command.callback.__name__)  # type: ignore[union-attr]


def _whole_app() -> typer.Typer:
    """The sizing, notification and serve commands live in their own modules, merged in at the
    top level (once: main may run many times in one process)."""
    if not app.registered_groups:
        from priceadvisor.cli.lake import commands as lake_commands
        from priceadvisor.cli.notify import commands as notify_commands
        from priceadvisor.cli.serve import commands as serve_commands
        from priceadvisor.cli.sizing import commands as sizing_commands

        app.add_typer(sizing_commands)
        app.add_typer(notify_commands)
        app.add_typer(serve_commands)
        app.add_typer(lake_commands)
    return app
