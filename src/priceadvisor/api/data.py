"""PriceData: the public views read from Python, each call on its own sealed read-only
connection (closed when the call returns, so a notebook never holds the daemon's writes up), or
on one shared by a `with data.session():` block. Filters are the CLI's, resolved by the same
functions (store/filters.py) and refused with the same one-line messages."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from priceadvisor.api.errors import PriceDataError
from priceadvisor.api.results import Result
from priceadvisor.config import Settings, load_settings
from priceadvisor.config_basics import ConfigError
from priceadvisor.service.stores import configured_store
from priceadvisor.store import asof, connections, reads
from priceadvisor.store import filters as offer_filters
from priceadvisor.store.errors import StoreError

if TYPE_CHECKING:
    from priceadvisor.store.handle import Store


def open(config: str | Path | None = None, db: str | Path | None = None) -> PriceData:
    """The data the CLI reads: `config` as `--config` (else $PRICEADVISOR_CONFIG and the
    usual search), `db` as `--db` (else $PRICEADVISOR_DB, the config's, the default); a lake
    when the config sets `storage = "ducklake"`. Nothing is opened until a call reads."""
    overrides: dict[str, Any] = {"db": Path(db)} if db is not None else {}
    with _one_line():
        settings = load_settings(Path(config) if config is not None else None, **overrides)
    connections.limit_readers(settings.readers)
    return PriceData(settings, configured_store(settings))


@contextmanager
def _one_line() -> Iterator[None]:
    """The errors a user acts on, as PriceDataError with the CLI's message."""
    try:
        yield
    except (ConfigError, StoreError, offer_filters.FilterError) as exc:
        raise PriceDataError(str(exc)) from None


class PriceData:
    """Read-only access to the public views (docs/sql.md) and the sizing core."""

    def __init__(self, settings: Settings, store: Store) -> None:
        self.settings = settings
        self.store = store
        self._con: duckdb.DuckDBPyConnection | None = None

    def __repr__(self) -> str:
        return f"<PriceData {self.store.where}>"

    @contextmanager
    def session(self) -> Iterator[PriceData]:
        """One read-only connection for every call in the block (one consistent view of the
        data), closed when the block ends: keep the block short while a daemon writes."""
        if self._con is not None:
            yield self
            return
        with self._reader() as con:
            self._con = con
            try:
                yield self
            finally:
                self._con = None

    def sql(self, query: str, params: Sequence[Any] | None = None) -> Result:
        """Any read-only query over the public views, `?` parameters bound."""
        with self._reader() as con:
            return Result(con.sql(query, params=list(params) if params else None))

    def offers(
        self,
        gpu: str | None = None,
        *,
        provider: str | Sequence[str] | None = None,
        country: str | None = None,
        continent: str | None = None,
        eu: bool = False,
        pricing: str | None = None,
        include_derived: bool = False,
        include_flagged: bool = False,
        sort: str = "gpu-hour",
        limit: int | None = None,
        as_of: dt.datetime | str | None = None,
    ) -> Result:
        """Current offers as `prices --format json` lists them (the same filters, columns and
        order): published prices of mapped GPUs, cheapest per GPU-hour first. `as_of` (a
        datetime or ISO 8601 text, UTC unless it has a zone) is `prices --as-of`: a lake's
        snapshot then, or a DuckDB file's price intervals open then."""
        flt = _filter(provider, country, continent, eu, pricing, include_derived, include_flagged)
        with _one_line():
            offer_filters.sort_order(sort)
        _in_range(limit)
        moment = _moment(as_of)
        columns: tuple[str, ...] = reads.PRICE_COLUMNS
        with self._reader(moment) as con:
            _resolve_gpu(con, flt, gpu)
            if moment is not None and not reads.has_flags(con):
                # a lake snapshot from before the offer guard existed: nothing was flagged then
                flt.include_flagged = True
                columns = tuple(c for c in columns if c != "flag_reason")
            return _result(con, reads.prices_query(flt, sort, limit, columns))

    def history(
        self,
        gpu: str | None = None,
        *,
        provider: str | Sequence[str] | None = None,
        region: str | None = None,
        instance_type: str | None = None,
        pricing: str | None = None,
        limit: int = 100,
    ) -> Result:
        """Price intervals, newest first per offer, published and derived (as `history`)."""
        flt = _filter(provider, None, None, False, pricing, include_derived=True)
        _in_range(limit)
        with self._reader() as con:
            _resolve_gpu(con, flt, gpu)
            return _result(con, reads.history_query(flt, region, instance_type, limit))

    def advice(
        self,
        workload: str | None = None,
        *,
        top: int = 5,
        rank: bool = False,
        include_stale: bool = False,
        include_flagged: bool = False,
    ) -> Result:
        """The best `top` offers per workload: the stored `advice` view (what the daemon last
        ranked), or with `rank=True` ranked now for the config's [[workloads]] without storing
        anything (`include_stale`, `include_flagged` as `advise` takes them)."""
        from priceadvisor.api.advice import ranked, stored  # numpy: for advice only

        _in_range(top, most=100, name="top")
        with self._reader() as con:
            if rank:
                return ranked(con, self.settings, workload, top, include_stale, include_flagged)
            return stored(con, workload, top)

    def estimate(self, gpu: str, gpus: int = 1, **workload: Any) -> dict[str, Any]:
        """`estimate --format json` as a dict: `workload` takes the fields of a [[workloads]]
        entry (model, task, precision, …; the architecture numbers such as params_b among
        them), checked by the same schema. Needs no database."""
        from priceadvisor.api.sizing import estimate

        return estimate(gpu, gpus, workload)

    @contextmanager
    def _reader(self, as_of: dt.datetime | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
        """The session's connection, else a sealed reader of its own, closed on return."""
        if self._con is not None and as_of is not None:
            raise PriceDataError("as_of reads a connection of its own: call it outside session()")
        if self._con is not None:
            yield self._con
            return
        with ExitStack() as stack:
            with _one_line():  # only opening it: a missing or locked database, a bad as_of
                con = stack.enter_context(self.store.reader(as_of=as_of))
            yield con


def _result(con: duckdb.DuckDBPyConnection, query: tuple[str, list[Any]]) -> Result:
    sql, params = query
    return Result(con.sql(sql, params=params))


def _filter(
    provider: str | Sequence[str] | None,
    country: str | None,
    continent: str | None,
    eu: bool,
    pricing: str | None,
    include_derived: bool = False,
    include_flagged: bool = False,
) -> reads.OfferFilter:
    providers = [provider] if isinstance(provider, str) else list(provider or [])
    _check_providers(providers)
    with _one_line():
        return offer_filters.offer_filter(
            providers, country, continent, eu, pricing, include_derived, include_flagged
        )


def _check_providers(providers: list[str]) -> None:
    """Known provider ids, as the CLI checks them (the adapters' registry)."""
    if not providers:
        return
    from priceadvisor.collect.adapters import UnknownProviderError, adapter_class

    for provider_id in providers:
        try:
            adapter_class(provider_id)
        except UnknownProviderError as exc:
            raise PriceDataError(str(exc)) from None


def _resolve_gpu(con: duckdb.DuckDBPyConnection, flt: reads.OfferFilter, gpu: str | None) -> None:
    with _one_line():
        offer_filters.resolve_gpu(con, flt, gpu)


def _moment(value: dt.datetime | str | None) -> dt.datetime | None:
    """`as_of` as `--as-of` takes it: a datetime, or ISO 8601 text."""
    if not isinstance(value, str):
        return value
    moment = asof.parse_moment(value)
    if moment is None:
        raise PriceDataError(f"as_of takes {asof.AS_OF_FORMAT}, got {value!r}")
    return moment


def _in_range(value: int | None, most: int = 10**9, name: str = "limit") -> None:
    """The CLI's range for --limit and --top: 1 to `most`."""
    if value is not None and not (isinstance(value, int) and 1 <= value <= most):
        raise PriceDataError(f"{name} {value!r} is not in the range 1 to {most}")
