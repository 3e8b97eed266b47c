"""The `priceadvisor` command line. Errors are one line and a non-zero exit: 2 for usage and
configuration errors, 1 for the rest (README "Using it")."""

from __future__ import annotations

import copy
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
from priceadvisor.cli.errors import fail, os_error_text, with_recorded_hint
from priceadvisor.cli.output import Format, render, stream, to_rich
from priceadvisor.cli.price_listing import TABLE_ROWS, PricesRequest, listing, price_notes
from priceadvisor.cli.querystop import QueryInterrupted, QueryTimedOut, run_stoppable
from priceadvisor.cli.sqlguard import check_read_only
from priceadvisor.config_basics import (
    ConfigError,
    default_db_path,
    recorded_db_path,
)
from priceadvisor.durations import parse_duration
from priceadvisor.records import RunStatus
from priceadvisor.resources import ResourceError, data_dir
from priceadvisor.store import errors, reads
from priceadvisor.store.handle import Store

if TYPE_CHECKING:
    from priceadvisor.config import Settings
    from priceadvisor.records import IngestSummary

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
    record: Annotated[
        Path | None,
        typer.Option(
            "--record",
            help="Also write every response received to DIR/<provider>/ as recordings "
            "(the --offline layout, credentials left out) for review.",
            metavar="DIR",
        ),
    ] = None,
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
    if record is not None and offline:
        raise UsageError("--record writes what a live fetch receives: not with --offline")
    # Recorded prices never land in the live database by default: they would pass for live.
    path = recorded_db_path() if offline and current.db is None and not into_live else None
    store = current.store if path is None else current.store.with_file(path)
    summaries = _fetch_with_progress(settings, store, ids, offline, record)
    render(_summary_table(summaries), fmt, out, title="Fetch summary")
    if record is not None:
        err.print(f"responses recorded under {record}/<provider>/: review them before use")
    if path is not None:
        err.print(f"recorded responses written to {path}; read them with --db {path}")
    if any(s.status is RunStatus.FAILED for s in summaries):
        raise typer.Exit(1)


def _fetch_with_progress(
    settings: Settings,
    store: Store,
    ids: list[str],
    offline: bool,
    record: Path | None = None,
) -> list[IngestSummary]:
    from priceadvisor.cli.progress import FetchProgress
    from priceadvisor.collect.fetch import run_cycle
    from priceadvisor.collect.recorder import RecordError

    try:
        with FetchProgress(err, ids) as progress:
            return run_cycle(settings, store, ids, offline, progress.update, record)
    except RecordError as exc:
        raise UsageError(str(exc)) from None


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
    known = _known_providers(provider)
    return filters.offer_filter(
        known, country, continent, eu, pricing, include_derived, include_flagged
    )


def _resolve_gpu(con: duckdb.DuckDBPyConnection, flt: reads.OfferFilter, gpu: str | None) -> None:
    filters.resolve_gpu(con, flt, gpu)


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
    typer.Option(
        help="on_demand, spot, market or reserved (market averages and commitments are shown "
        "only when asked)."
    ),
]


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
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Name every provider the notes count.")
    ] = False,
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
    request = PricesRequest(
        gpu=gpu,
        providers=list(provider or []),
        country=country,
        continent=continent,
        eu=eu,
        pricing=pricing,
        sort=sort,
        limit=limit,
        columns=columns,
        wide=wide,
        include_derived=include_derived,
        verbose=verbose,
        include_flagged=include_flagged,
        as_of=as_of,
        fmt=fmt,
    )
    found = listing(state(ctx), request, _Providers())
    if fmt is Format.TABLE:
        layout.print_rich(out, found.table, found.title, found.notes, found.noun, found.narrows)
    else:
        render(found.table, fmt, out)


class _Providers:
    """The adapters' registry and the manifests (price_listing.Providers)."""

    def known(self, ids: list[str]) -> list[str]:
        return _known_providers(ids)

    def offers_source(self, provider: str) -> bool:
        return _offers_source(provider)


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
    with state(ctx).store.reader() as con:
        _resolve_gpu(con, flt, gpu)
        table = reads.history(con, flt, region, instance_type, limit)
    render(table, fmt, out, title="Price history (USD)")


@app.command()
def sql(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="One read-only SQL statement.")],
    fmt: FormatOpt = Format.TABLE,
    timeout: Annotated[
        str | None,
        typer.Option(
            "--timeout",
            help="Stop the query after this long, e.g. 30s or 10m (default: readers.sql_timeout, "
            "5m).",
        ),
    ] = None,
) -> None:
    """Run one read-only SQL query against the public views (see docs/sql.md). A table shows
    the first 1000 rows; csv and json stream every row. Ctrl-C stops the query at once."""
    current = state(ctx)
    limit = _timeout(timeout, current.read_settings.readers.sql_timeout)
    with current.store.reader() as con:
        check_read_only(con, query)
        with _sql_errors(limit):
            if fmt is not Format.TABLE:
                run_stoppable(con, lambda: _stream_sql(con, query, fmt), limit)
                return
            table, more, total = run_stoppable(con, lambda: _first_rows(con, query), limit)
    shown = to_rich(table)
    if more:
        of = f"{SQL_TABLE_ROWS} of {total}" if total is not None else f"the first {SQL_TABLE_ROWS}"
        shown.caption = f"showing {of} rows: --format csv or json for all"
    out.print(shown)


def _timeout(given: str | None, configured: float) -> float:
    if given is None:
        return configured
    try:
        return parse_duration(given)
    except ValueError as exc:
        raise UsageError(f"--timeout: {exc}") from None


def _stream_sql(con: duckdb.DuckDBPyConnection, query: str, fmt: Format) -> None:
    columns, batches = reads.fetch_batches(con, query)
    stream(columns, batches, fmt, out)


def _first_rows(con: duckdb.DuckDBPyConnection, query: str) -> tuple[reads.Table, bool, int | None]:
    table, more = reads.fetch_first(con, query, SQL_TABLE_ROWS)
    return table, more, reads.count_rows(con, query) if more else None


SQL_TABLE_ROWS = 1000  # a terminal table; machine formats get every row


@contextmanager
def _sql_errors(timeout: float) -> Iterator[None]:
    """DuckDB's refusals and errors, while the query runs or its rows are fetched, as one line;
    a query stopped by its timeout or by Ctrl-C says so."""
    try:
        yield
    except QueryTimedOut:
        raise UserError(
            f"query stopped after its {timeout:g} s timeout (sql --timeout, readers.sql_timeout)"
        ) from None
    except QueryInterrupted:
        raise typer.Abort from None
    except duckdb.OutOfMemoryException as exc:
        # DuckDB's advice (SET memory_limit, SET threads) is refused here: the limit is config.
        cause = _one_line(exc).removeprefix("Out of Memory Error: ").split(" Possible solutions")
        raise UserError(
            f"query needs more memory than readers.memory_limit allows: {cause[0]}"
        ) from None
    except duckdb.PermissionException as exc:
        raise UserError(f"refused: {errors.first_line(exc)}") from None
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

    current = state(ctx)
    target = out_dir or current.settings.db_path().parent / "export"
    counts = export_database(current.store, target)
    rows = [(name, n) for name, n in counts.items()]
    render(reads.Table(["table", "rows"], rows), Format.TABLE, out, title=f"Exported to {target}")


@app.command("export-opencost")
def export_opencost(
    ctx: typer.Context,
    gpu: GpuOpt = None,
    provider: ProviderOpt = None,
    region: Annotated[
        list[str] | None, typer.Option(help="Provider region code; repeat for several.")
    ] = None,
    pricing: PricingOpt = None,
    fmt: Annotated[
        str, typer.Option("--format", "-f", help="json (custom pricing file) or csv.")
    ] = "json",
    base: Annotated[
        Path | None,
        typer.Option(help="Your custom pricing JSON: its CPU, RAM, storage, egress are kept."),
    ] = None,
) -> None:
    """Prices for OpenCost (docs/operations.md): its custom pricing JSON (GPU and spotGPU: the
    cheapest published $/GPU-hour of one GPU model) or its CSV provider's node rows (the
    cheapest whole-node price per region and instance type)."""
    from priceadvisor.cli.opencost import OpenCostFormat, export_text, read_base

    if fmt not in ("json", "csv"):
        raise typer.BadParameter(f"{fmt!r} is not json or csv", param_hint="--format")
    flt = _offer_filter(provider, None, None, False, pricing)
    if flt.pricing == "market":
        raise UsageError("OpenCost needs rentable prices: --pricing on_demand or spot")
    if flt.pricing and fmt == "json":
        raise UsageError("--pricing is for --format csv: the JSON carries GPU and spotGPU both")
    base_prices = read_base(base) if base is not None else None
    with state(ctx).store.reader() as con:
        _resolve_gpu(con, flt, gpu)
        text = export_text(con, flt, region or [], OpenCostFormat(fmt), base_prices)
    sys.stdout.write(text)


@app.command()
def doctor(ctx: typer.Context, fmt: FormatOpt = Format.TABLE) -> None:
    """Check data health: providers stale or failing, unmapped GPU names. Exit 1 if unhealthy."""
    from priceadvisor.cli.doctor import render_report
    from priceadvisor.collect import health

    current = state(ctx)
    report = health.check(current.settings, current.store)
    render_report(report, fmt, out)
    if not report.healthy:
        raise typer.Exit(1)


@app.command()
def providers(
    ctx: typer.Context,
    billing: Annotated[
        bool, typer.Option("--billing", help="One row per billing term, with its source.")
    ] = False,
    fmt: FormatOpt = Format.TABLE,
) -> None:
    """List providers: enabled, configured (or why not), interval, endpoints, last run, billing
    terms known (JSON: the terms)."""
    from priceadvisor.collect import health

    if billing:
        render(health.billing_table(), fmt, out, title="Billing terms")
        return
    current = state(ctx)
    table = health.providers_table(current.settings, current.store)
    if fmt is Format.TABLE:  # the terms themselves: --billing, or JSON
        table = reads.Table(table.columns[:-1], [row[:-1] for row in table.rows])
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
    from priceadvisor.collect.fetch import enabled_providers
    from priceadvisor.manifest import manifest_ids

    current = state(ctx)
    settings = current.settings
    path = _demo_path(current.db, replace)
    providers = enabled_providers(settings, manifest_ids())
    store = current.store.with_file(path)
    summaries = _fetch_with_progress(settings, store, providers, True)
    render(_summary_table(summaries), Format.TABLE, out, title="Offline fetch (recorded data)")
    with store.reader() as con:
        table = reads.prices(
            con, reads.OfferFilter(), "gpu-hour", 25, layout.view_columns(layout.DEFAULT)
        )
        [(offers, cheapest)] = con.execute(
            "SELECT count(*), min(price_gpu_hour_usd) FILTER (pricing IN ('on_demand', 'spot'))"
            " FROM offers"
        ).fetchall()
    out.print(
        layout.to_rich(
            table, "Cheapest current GPU offers (USD)", price_notes(table, {}, _Providers())
        )
    )
    # Jinja is imported here only: the daemon, which never renders, stays ~10 MB smaller.
    from priceadvisor.notify import render as templates

    out.out(
        templates.render(
            "cli/demo_next_steps.txt.j2",
            db_path=path,
            workloads=data_dir("sizing") / DEMO_WORKLOADS,
            offers=offers,
            cheapest=cheapest,
            providers=[s.provider for s in summaries if _offers_source(s.provider)],
            command=_launcher(),
        ),
        highlight=False,
        end="",
    )


# Three workloads an ML platform team runs, for the demo's `advise` step (their comments say
# why each figure).
DEMO_WORKLOADS = "demo-workloads.toml"

# The README's first command: a checkout runs the CLI through uvw, without it on PATH.
CHECKOUT_LAUNCHER = "./uvw run --locked --no-dev priceadvisor"


def _launcher() -> str:
    """How to run the CLI again from here: through ./uvw in a checkout (where the README's
    first command leaves it off PATH), else by its name (installed)."""
    in_checkout = Path("uvw").is_file() and Path("pyproject.toml").is_file()
    return CHECKOUT_LAUNCHER if in_checkout else "priceadvisor"


def _offers_source(provider: str) -> bool:
    """Whether a provider's data are offers (FX sources, such as ecb, only convert prices)."""
    from priceadvisor.manifest import manifest
    from priceadvisor.manifest_files import holds_offers

    return holds_offers(provider, lambda p: manifest(p).kind)


def _demo_path(given: Path | None, replace: bool) -> Path:
    """The demo's own database: a file in a new temporary folder of its own unless --db names
    one (never the configured one: the demo's recorded prices must not mix with live ones;
    and two demos at once must not replace each other's)."""
    import tempfile

    if given is None:
        return Path(tempfile.mkdtemp(prefix="priceadvisor-demo-")) / "demo.duckdb"
    if given.exists() and not replace:
        raise UserError(f"{given} exists; the demo needs a fresh database (add --replace)")
    for stale in (given, given.with_name(given.name + ".wal")):
        stale.unlink(missing_ok=True)
    return given


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


_USER_ERRORS = (UserError, errors.StoreError, ResourceError)


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
        fail(str(exc), 2)
    except errors.StoreError as exc:
        fail(with_recorded_hint(str(exc)), 1)
    except _USER_ERRORS as exc:
        fail(str(exc), 1)
    except typer.Abort:
        fail("aborted", 130)
    except Exception as exc:
        if _is_manifest_error(exc):
            fail(str(exc), 1)
        if _is_unknown_provider(exc):
            fail(str(exc), 2)
        if _is_usage_error(exc):
            fail(exc.format_message(), exc.exit_code)  # type: ignore[attr-defined]
        fail(_unexpected(exc), 1)
    sys.exit(code if isinstance(code, int) else 0)


def _unexpected(exc: Exception) -> str:
    """Anything no command turned into a message still ends as one line: the file system's
    or DuckDB's own words, else the exception; the traceback goes to the DEBUG log."""
    logging.getLogger("priceadvisor.cli").debug("unexpected error", exc_info=exc)
    if isinstance(exc, OSError):
        return os_error_text(exc)
    if isinstance(exc, duckdb.Error):
        return f"database error: {errors.first_line(exc)}"
    return f"unexpected {type(exc).__name__}: {errors.first_line(exc)}"


def _is_usage_error(exc: Exception) -> bool:
    """Typer's bundled click raises ClickException subclasses for bad arguments; they are
    matched by shape because typer keeps that module private."""
    return hasattr(exc, "format_message") and isinstance(getattr(exc, "exit_code", None), int)


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
