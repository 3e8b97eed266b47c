"""The `priceadvisor` command line (DESIGN §9). Errors are one line and a non-zero exit."""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Annotated

import duckdb
import typer

from priceadvisor import __version__
from priceadvisor.cli.common import (
    AppState,
    FormatOpt,
    ProviderOpt,
    UserError,
    err,
    out,
    state,
)
from priceadvisor.cli.doctor import render_report
from priceadvisor.cli.notify import commands as notify_commands
from priceadvisor.cli.output import Format, render
from priceadvisor.cli.progress import FetchProgress
from priceadvisor.cli.serve import commands as serve_commands
from priceadvisor.cli.sizing import commands as sizing_commands
from priceadvisor.collect import health
from priceadvisor.collect.adapters import REGISTRY, UnknownProviderError, adapter_class
from priceadvisor.collect.fetch import enabled_providers, run_cycle
from priceadvisor.config import ConfigError, Settings, default_db_path
from priceadvisor.manifest import ManifestError
from priceadvisor.models import IngestSummary, RunStatus
from priceadvisor.resources import ResourceError
from priceadvisor.service.daemon import Daemon
from priceadvisor.service.logs import configure
from priceadvisor.store import db as store
from priceadvisor.store import reads
from priceadvisor.store.export import export_parquet

CONTINENTS = ("AF", "AS", "EU", "NA", "OC", "SA")
READ_STATEMENTS = {"SELECT", "EXPLAIN"}

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
    for provider_id in ids or []:
        adapter_class(provider_id)
    return list(ids or [])


@app.command()
def fetch(
    ctx: typer.Context,
    provider: ProviderOpt = None,
    offline: Annotated[
        bool, typer.Option("--offline", help="Use the recorded responses shipped with the package.")
    ] = False,
    fmt: FormatOpt = Format.TABLE,
) -> None:
    """Fetch current prices from providers into the database (all enabled by default)."""
    settings = state(ctx).settings
    ids = _known_providers(provider) or enabled_providers(settings, list(REGISTRY))
    if not ids:
        raise UserError("no provider enabled: enable one in the config or pass --provider")
    summaries = _fetch_with_progress(settings, ids, offline)
    render(_summary_table(summaries), fmt, out, title="Fetch summary")
    if any(s.status is RunStatus.FAILED for s in summaries):
        raise typer.Exit(1)


def _fetch_with_progress(settings: Settings, ids: list[str], offline: bool) -> list[IngestSummary]:
    with FetchProgress(err, ids) as progress:
        return run_cycle(settings, ids, offline, progress.update)


def _summary_table(summaries: list[IngestSummary]) -> reads.Table:
    columns = [
        "provider",
        "status",
        "offers",
        "new",
        "changed",
        "closed",
        "rejected",
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
            s.unmapped,
            s.requests,
            s.bytes,
            round(s.duration_s, 3),
            s.error,
        )
        for s in summaries
    ]
    return reads.Table(columns, rows)


def _pricing(value: str | None) -> str | None:
    if value is None:
        return None
    normalised = value.strip().lower().replace("-", "_")
    if normalised not in ("on_demand", "spot"):
        raise UserError(f"unknown pricing {value!r} (use on_demand or spot)")
    return normalised


def _continent(value: str | None) -> str | None:
    if value is not None and value.upper() not in CONTINENTS:
        raise UserError(f"unknown continent {value!r} (use one of {', '.join(CONTINENTS)})")
    return value.upper() if value else None


def _offer_filter(
    gpu: str | None,
    provider: list[str] | None,
    country: str | None,
    continent: str | None,
    eu: bool,
    pricing: str | None,
) -> reads.OfferFilter:
    return reads.OfferFilter(
        gpu=gpu,
        providers=_known_providers(provider),
        country=country,
        continent=_continent(continent),
        eu=eu,
        pricing=_pricing(pricing),
    )


GpuOpt = Annotated[str | None, typer.Option(help="GPU model or part of it, e.g. H100.")]
CountryOpt = Annotated[str | None, typer.Option(help="Country code (DE) or name.")]
ContinentOpt = Annotated[str | None, typer.Option(help="Continent: AF AS EU NA OC SA.")]
EuOpt = Annotated[bool, typer.Option("--eu", help="Only EU member states.")]
PricingOpt = Annotated[str | None, typer.Option(help="on_demand or spot.")]
LimitOpt = Annotated[int, typer.Option(min=1, help="At most this many rows.")]


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
    limit: LimitOpt = 50,
    fmt: FormatOpt = Format.TABLE,
) -> None:
    """Current offers, cheapest per GPU-hour first."""
    if sort not in reads.PRICE_SORTS:
        raise UserError(f"unknown sort {sort!r} (use one of {', '.join(reads.PRICE_SORTS)})")
    flt = _offer_filter(gpu, provider, country, continent, eu, pricing)
    settings = state(ctx).settings
    with store.reader(settings.db_path(), settings.lock_timeout) as con:
        table = reads.prices(con, flt, sort, limit)
    render(table, fmt, out, title="Current GPU offers (USD)")


@app.command()
def history(
    ctx: typer.Context,
    gpu: GpuOpt = None,
    provider: ProviderOpt = None,
    region: Annotated[str | None, typer.Option(help="Provider region code.")] = None,
    instance_type: Annotated[str | None, typer.Option(help="Exact instance type.")] = None,
    pricing: PricingOpt = None,
    limit: LimitOpt = 100,
    fmt: FormatOpt = Format.TABLE,
) -> None:
    """Price intervals over time (newest first per offer)."""
    flt = _offer_filter(gpu, provider, None, None, False, pricing)
    settings = state(ctx).settings
    with store.reader(settings.db_path(), settings.lock_timeout) as con:
        table = reads.history(con, flt, region, instance_type, limit)
    render(table, fmt, out, title="Price history (USD)")


@app.command()
def sql(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="One read-only SQL statement.")],
    fmt: FormatOpt = Format.TABLE,
) -> None:
    """Run one read-only SQL query against the public views (see docs/sql.md)."""
    settings = state(ctx).settings
    with store.reader(settings.db_path(), settings.lock_timeout) as con:
        _check_read_only(con, query)
        try:
            table = reads.fetch_table(con, query)
        except duckdb.Error as exc:
            raise UserError(f"SQL error: {_one_line(exc)}") from None
    render(table, fmt, out)


def _check_read_only(con: duckdb.DuckDBPyConnection, query: str) -> None:
    try:
        statements = con.extract_statements(query)
    except duckdb.Error as exc:
        raise UserError(f"SQL error: {_one_line(exc)}") from None
    if len(statements) != 1:
        raise UserError(f"give exactly one SQL statement (got {len(statements)})")
    kind = statements[0].type.name
    if kind not in READ_STATEMENTS:
        raise UserError(f"only read queries are allowed here; {kind} statements are refused")


@app.command()
def export(
    ctx: typer.Context,
    out_dir: Annotated[
        Path | None,
        typer.Option("--out", help="Target folder (default: 'export' beside the database)."),
    ] = None,
) -> None:
    """Write the public views as Parquet, hive-partitioned by day."""
    settings = state(ctx).settings
    target = out_dir or settings.db_path().parent / "export"
    with store.reader(settings.db_path(), settings.lock_timeout) as con:
        counts = export_parquet(con, target)
    rows = [(name, n) for name, n in counts.items()]
    render(reads.Table(["table", "rows"], rows), Format.TABLE, out, title=f"Exported to {target}")


@app.command()
def doctor(ctx: typer.Context, fmt: FormatOpt = Format.TABLE) -> None:
    """Check data health: providers stale or failing, unmapped GPU names. Exit 1 if unhealthy."""
    settings = state(ctx).settings
    report = health.check(settings)
    render_report(report, fmt, out)
    if not report.healthy:
        raise typer.Exit(1)


@app.command()
def providers(ctx: typer.Context, fmt: FormatOpt = Format.TABLE) -> None:
    """List providers: enabled, configured (or why not), interval, endpoints, last run."""
    table = health.providers_table(state(ctx).settings)
    render(table, fmt, out, title="Providers")


@app.command()
def run(
    ctx: typer.Context,
    offline: Annotated[
        bool, typer.Option("--offline", help="Serve the recorded responses instead of the network.")
    ] = False,
) -> None:
    """Run the service: scheduled fetches, advice, health and metrics, until SIGTERM."""
    settings = state(ctx).settings
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
        typer.Option("--replace", help="Overwrite the database given by --db / PRICEADVISOR_DB."),
    ] = False,
) -> None:
    """The whole pipeline offline into a fresh database, ending with a table of offers."""
    current = state(ctx)
    settings = current.settings
    path = _demo_path(settings, replace)
    summaries = _fetch_with_progress(
        settings.model_copy(update={"db": path}), list(REGISTRY), offline=True
    )
    render(_summary_table(summaries), Format.TABLE, out, title="Offline fetch (recorded data)")
    with store.reader(path, settings.lock_timeout) as con:
        table = reads.prices(con, reads.OfferFilter(), "gpu-hour", 25)
        [(offers, cheapest)] = con.execute(
            "SELECT count(*), min(price_gpu_hour_usd) FROM offers"
        ).fetchall()
    render(table, Format.TABLE, out, title="Cheapest current GPU offers (USD)")
    # Jinja is imported here only: the daemon, which never renders, stays ~10 MB smaller.
    from priceadvisor.notify import render as templates  # noqa: PLC0415

    out.out(
        templates.render(
            "cli/demo_next_steps.txt.j2",
            db_path=path,
            offers=offers,
            cheapest=cheapest,
            providers=[s.provider for s in summaries],
        ),
        highlight=False,
        end="",
    )


def _demo_path(settings: Settings, replace: bool) -> Path:
    if settings.db is None:
        path = Path(tempfile.gettempdir()) / "priceadvisor-demo" / "demo.duckdb"
    else:
        path = settings.db
        if path.exists() and not replace:
            raise UserError(f"{path} exists; the demo needs a fresh database (add --replace)")
    for stale in (path, path.with_name(path.name + ".wal")):
        stale.unlink(missing_ok=True)
    return path


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


_USER_ERRORS = (UserError, store.StoreError, UnknownProviderError, ResourceError, ManifestError)


def main(argv: list[str] | None = None) -> None:
    """Console entry point: turn every expected failure into one line and an exit code."""
    try:
        code = app(args=argv, standalone_mode=False)
    except ConfigError as exc:
        _fail(str(exc), 2)
    except _USER_ERRORS as exc:
        _fail(str(exc), 1)
    except typer.Abort:
        _fail("aborted", 130)
    except Exception as exc:
        if not _is_usage_error(exc):
            raise
        _fail(exc.format_message(), exc.exit_code)  # type: ignore[attr-defined]
    sys.exit(code if isinstance(code, int) else 0)


def _is_usage_error(exc: Exception) -> bool:
    """Typer's bundled click raises ClickException subclasses for bad arguments; they are
    matched by shape because typer keeps that module private."""
    return hasattr(exc, "format_message") and isinstance(getattr(exc, "exit_code", None), int)


def _fail(message: str, code: int) -> None:
    err.print(f"error: {_one_line_text(message)}", highlight=False, markup=False)
    sys.exit(code)


def _one_line_text(message: str) -> str:
    return " ".join(message.split())


# The sizing and notification commands live in their own modules, merged in at the top level.
app.add_typer(sizing_commands)
app.add_typer(notify_commands)
app.add_typer(serve_commands)
