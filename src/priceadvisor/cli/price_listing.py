"""What `prices` answers, whichever way the command line started: the offers (one query, the
filters of store/filters.py), and for the table its title and notes. The Typer command
(cli/app.py) and the light start (cli/light.py) both print this; neither imports Typer or
Rich here."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import NamedTuple, Protocol

import duckdb

from priceadvisor.cli import filters
from priceadvisor.cli import prices as layout
from priceadvisor.cli.errors import UsageError, recorded_database_hint
from priceadvisor.cli.output import Format
from priceadvisor.clock import utcnow
from priceadvisor.config_basics import DbSettings
from priceadvisor.store import asof, reads
from priceadvisor.store.handle import Store

TABLE_ROWS = 50  # what a terminal shows when --limit is not given; machine formats get all
NAMED_PROVIDERS = 3  # a note names this many providers; more are counted (--verbose names them)


class PricesRequest(NamedTuple):
    """The options of `prices`, as given. (NamedTuples here, not dataclasses: the light start
    imports no dataclasses for them.)"""

    gpu: str | None = None
    providers: Sequence[str] = ()
    country: str | None = None
    continent: str | None = None
    eu: bool = False
    pricing: str | None = None
    sort: str = "gpu-hour"
    limit: int | None = None
    columns: str | None = None
    wide: bool = False
    include_derived: bool = False
    verbose: bool = False
    include_flagged: bool = False
    as_of: str | None = None
    fmt: Format = Format.TABLE


class Listing(NamedTuple):
    """The offers; for the table, also what they are, its title and the notes under it."""

    table: reads.Table
    noun: layout.Noun
    title: str = ""
    notes: Sequence[str] = ()
    narrows: bool = False  # the default columns: a narrow terminal may show fewer


class Providers(Protocol):
    """What the adapters and manifests say about providers. Asking them imports the adapters'
    registry or pydantic, so the caller says how to ask."""

    def known(self, ids: list[str]) -> list[str]:
        """`ids`, each checked to name a provider (an error naming the unknown one)."""

    def offers_source(self, provider: str) -> bool:
        """Whether a provider's data are offers (FX sources, such as ecb, only convert)."""


class Configured(Protocol):
    """Where the data are (common.AppState, light.LightState), resolved when first asked: a
    malformed option is reported before a missing config file, as by every command."""

    @property
    def store(self) -> Store: ...
    @property
    def read_settings(self) -> DbSettings: ...


def listing(configured: Configured, request: PricesRequest, providers: Providers) -> Listing:
    moment = _moment(request.as_of) if request.as_of is not None else None
    filters.sort_order(request.sort)
    flt = filters.offer_filter(
        providers.known(list(request.providers)),
        request.country,
        request.continent,
        request.eu,
        request.pricing,
        request.include_derived,
        request.include_flagged,
    )
    table_format = request.fmt is Format.TABLE
    # Machine formats get every column unless --columns: a stable shape for scripts.
    fields = layout.chosen(request.columns, request.wide or not table_format, flt.pricing)
    if request.include_flagged and request.columns is None and "flag" not in fields:
        fields = (*fields, "flag")
    shown = layout.view_columns(fields)
    rows = request.limit if request.limit is not None or not table_format else TABLE_ROWS
    with configured.store.reader(as_of=moment) as con:
        filters.resolve_gpu(con, flt, request.gpu)
        if moment is not None and not reads.has_flags(con):
            # a lake snapshot from before the offer guard existed: nothing was flagged then
            flt.include_flagged = True
            shown = tuple(c for c in shown if c != "flag_reason")
        table = reads.prices(con, flt, request.sort, rows, shown)
        if not table_format:  # CSV and JSON are the rows alone
            return Listing(table, "GPU")
        sources = reads.latest_sources(con)
        noun = _noun(con, table, flt)
        hidden = 0 if flt.include_flagged else reads.count_flagged(con, flt)
        stale = reads.stale_providers(con, utcnow()) if moment is None else {}
    notes = price_notes(table, sources, providers, request.verbose)
    notes += _recorded_hint(configured.read_settings, sources)
    notes += _other_notes(hidden, stale, noun, flt.pricing)
    narrows = request.columns is None and not request.wide
    return Listing(table, noun, _title(noun, request.as_of), notes, narrows)


def _title(noun: layout.Noun, as_of: str | None) -> str:
    offers = noun.replace("/", " and ")
    return f"{offers} offers as of {as_of} (USD)" if as_of else f"Current {offers} offers (USD)"


def _other_notes(
    hidden: int, stale: dict[str, int], noun: layout.Noun, pricing: str | None
) -> list[str]:
    notes = []
    if hidden:
        offers_word = "offer" if hidden == 1 else "offers"
        notes.append(f"{hidden} flagged {offers_word} left out: --include-flagged to see them")
    if stale:
        notes.append(_stale_note(stale))
    if noun != "GPU":
        notes.append("accelerators (TPU, Gaudi, Trainium…): n counts chips, priced per chip")
    if pricing == "reserved":
        notes.append(
            "commitment prices: the effective hourly price over a term of `months`, "
            "never ranked against on-demand"
        )
    return notes


def _noun(
    con: duckdb.DuckDBPyConnection, table: reads.Table, flt: reads.OfferFilter
) -> layout.Noun:
    """What the shown offers are: from their models, else the --gpu models, else whether any
    current offer is an accelerator."""
    accelerators = reads.accelerator_models(con)
    models = layout.shown_models(table)
    if models is None:
        models = set(flt.gpu_models) if flt.gpu_models else reads.offered_models(con)
    return layout.noun_for(models, accelerators)


def _moment(text: str) -> dt.datetime:
    moment = asof.parse_moment(text)
    if moment is None:
        raise UsageError(f"--as-of takes {asof.AS_OF_FORMAT}, got {text!r}")
    return moment


def price_notes(
    table: reads.Table,
    sources: dict[str, str | None],
    providers: Providers,
    verbose: bool = False,
) -> list[str]:
    notes = []
    if table.total is not None:
        notes.append(f"showing {len(table.rows)} of {table.total}: --limit N for more")
    elif not table.rows:
        notes.append("no offers match")
    recorded = sorted(
        p for p, source in sources.items() if source == "recorded" and providers.offers_source(p)
    )
    if len(recorded) > NAMED_PROVIDERS and not verbose:
        notes.append(
            f"recorded responses, not live prices, for {len(recorded)} providers "
            "(--verbose names them)"
        )
    elif recorded:
        notes.append(f"recorded responses, not live prices: {', '.join(recorded)}")
    return notes


def _stale_note(stale: dict[str, int]) -> str:
    """Stale prices stay listed, marked; advise and alerts leave them out (docs/sql.md)."""
    counts = ", ".join(f"{provider} ({n})" for provider, n in stale.items())
    return (
        f"stale: offers not seen for over twice their provider's fetch interval: {counts}; "
        "advise and alerts leave them out"
    )


def _recorded_hint(settings: DbSettings, sources: dict[str, str | None]) -> list[str]:
    """The default database holds no fetch yet while `fetch --offline` filled recorded.duckdb:
    the option that reads it (the README's `prices` line after `fetch --offline`)."""
    if sources or getattr(settings, "storage", "duckdb") != "duckdb":
        return []
    hint = recorded_database_hint(settings.db_path())
    return [f"no fetch in this database yet; {hint}"] if hint else []
