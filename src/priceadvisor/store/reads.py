"""Read queries behind the CLI: current prices, history, health. Parameters are always bound."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

import duckdb

from priceadvisor.pricing import RENTABLE

if TYPE_CHECKING:
    from priceadvisor.manifest import Hosts


def no_sla(alias: str) -> str:
    """SQL true for an offer from a marketplace or community host: individual sellers with no
    SLA, as each provider's manifest says (`[hosts]`: Vast.ai, RunPod's Community Cloud, ...).
    `alias` is the offer's table alias in the query."""
    from priceadvisor.manifest import marketplaces  # noqa: PLC0415 - pydantic, off `prices`' path

    terms = [_marketplace_sql(alias, provider, hosts) for provider, hosts in marketplaces()]
    return "(" + (" OR ".join(terms) or "false") + ")"


def _marketplace_sql(alias: str, provider: str, hosts: Hosts) -> str:
    own = f"{alias}.provider = {_literal(provider)}"
    if hosts.marketplace == "all":
        return own
    regions = ", ".join(map(_literal, hosts.regions))
    scopes = [f"{alias}.region IN ({regions})"] if regions else []
    if hosts.instance_type_word:
        words = f"string_split({alias}.instance_type, ' ')"
        scopes.append(f"list_contains({words}, {_literal(hosts.instance_type_word)})")
    return f"({own} AND ({' OR '.join(scopes)}))"


def _literal(text: str) -> str:
    """A SQL string literal of a manifest's own text (package data, never user input)."""
    return "'" + text.replace("'", "''") + "'"


# An offer's key (core.price_intervals: one open row per key), the last words of every ordered
# offer listing: equal prices then come back in the same order on every run.
OFFER_KEY = "provider, region, zone, instance_type, pricing, term_months"

PRICE_SORTS = {
    "gpu-hour": "price_gpu_hour_usd NULLS LAST, price_hour_usd",
    "hour": "price_hour_usd, price_gpu_hour_usd NULLS LAST",
    "provider": "provider, region, price_gpu_hour_usd NULLS LAST",
    "gpu": "gpu_model NULLS LAST, price_gpu_hour_usd NULLS LAST",
}

# Every column `prices` can show, in display order; the default table shows a subset.
PRICE_COLUMNS = (
    "provider",
    "region",
    "country",
    "instance_type",
    "gpu_model",
    "gpu_count",
    "gpu_memory_gb",
    "pricing",
    "term_months",
    "price_gpu_hour_usd",
    "price_hour_usd",
    "upfront_usd",
    "monthly_usd",
    "available",
    "interruption_rate",
    "price_origin",
    "flag_reason",
)


# A NamedTuple and a plain class rather than dataclasses: `prices` starts without the
# dataclasses module and the inspect module it imports (~5 ms; cli/light.py).
class Table(NamedTuple):
    columns: list[str]
    rows: list[tuple[Any, ...]]
    # Rows matching before a LIMIT cut them (None: nothing was cut), for "showing 50 of 278".
    total: int | None = None


class OfferFilter:
    """Filters with values already resolved to catalog codes (see store/filters.py).

    `gpu_models`: canonical ids (unmapped GPUs never match); `country` an ISO code; `continent`
    AF AS EU NA OC SA. `mapped_only`: offers whose GPU name maps to no catalog model have no GPU
    to compare (`doctor` lists them). `include_derived`: derived prices (a documented rule
    applied to a published one) answer "what does it cost" but not "what is cheapest", so they
    are left out unless asked for. `include_flagged`: offers the offer guard flagged
    (store.guard) are never "cheapest" unless asked for."""

    __slots__ = (
        "continent",
        "country",
        "eu",
        "gpu_models",
        "include_derived",
        "include_flagged",
        "mapped_only",
        "pricing",
        "providers",
    )

    def __init__(
        self,
        gpu_models: list[str] | None = None,
        providers: list[str] | None = None,
        country: str | None = None,
        continent: str | None = None,
        eu: bool = False,
        pricing: str | None = None,
        mapped_only: bool = True,
        include_derived: bool = False,
        include_flagged: bool = False,
    ) -> None:
        self.gpu_models = gpu_models
        self.providers: list[str] = [] if providers is None else providers
        self.country, self.continent, self.eu = country, continent, eu
        self.pricing, self.mapped_only = pricing, mapped_only
        self.include_derived, self.include_flagged = include_derived, include_flagged

    def _values(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}

    def replaced(self, **changes: Any) -> OfferFilter:
        """A copy with `changes` (as dataclasses.replace)."""
        return OfferFilter(**(self._values() | changes))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OfferFilter) and self._values() == other._values()

    __hash__ = None  # type: ignore[assignment]  # mutable, as a dataclass with eq

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={value!r}" for name, value in self._values().items())
        return f"OfferFilter({shown})"

    def where(self) -> tuple[str, list[Any]]:
        clauses: list[str] = ["gpu_model IS NOT NULL"] if self.mapped_only else ["TRUE"]
        params: list[Any] = []
        if not self.include_derived:
            clauses.append("price_origin = 'published'")
        if not self.include_flagged:
            clauses.append("flag IS NULL")
        for wanted, clause, value in (
            (self.gpu_models is not None, "list_contains(?, gpu_model)", self.gpu_models),
            (bool(self.providers), "list_contains(?, provider)", self.providers),
            (self.country, "country = ?", self.country),
            (self.continent, "continent = ?", self.continent),
            (self.pricing, "pricing = ?", self.pricing),
        ):
            if wanted:
                clauses.append(clause)
                params.append(value)
        if self.gpu_models:  # the same rows; a range DuckDB's zone maps can skip row groups by
            clauses.append("gpu_model BETWEEN ? AND ?")
            params.extend([min(self.gpu_models), max(self.gpu_models)])
        if self.eu:
            clauses.append("is_eu")
        # market averages and commitments are not what renting costs now: shown only when asked
        if not self.pricing:
            clauses.append("list_contains(?, pricing)")
            params.append([str(p) for p in RENTABLE])
        return " AND ".join(clauses), params


def fetch_table(con: duckdb.DuckDBPyConnection, sql: str, params: Any = None) -> Table:
    cursor = con.execute(sql, params) if params is not None else con.execute(sql)
    rows = cursor.fetchall()
    columns = [d[0] for d in cursor.description] if cursor.description else []
    return Table(columns, rows)


def fetch_first(con: duckdb.DuckDBPyConnection, sql: str, cap: int) -> tuple[Table, bool]:
    """At most `cap` rows of a query, and whether it had more (the rest is never fetched)."""
    cursor = con.execute(sql)
    columns = [d[0] for d in cursor.description] if cursor.description else []
    rows = cursor.fetchmany(cap + 1) if cursor.description else []
    return Table(columns, rows[:cap]), len(rows) > cap


def count_rows(con: duckdb.DuckDBPyConnection, sql: str) -> int | None:
    """How many rows a query returns, counted by DuckDB as a relation (trailing `;` and comments
    allowed); None when the statement returns no relation."""
    try:
        relation = con.sql(sql)
        found = relation.aggregate("count(*)").fetchone() if relation is not None else None
    except duckdb.Error:
        return None
    return int(found[0]) if found else None


def fetch_batches(
    con: duckdb.DuckDBPyConnection, sql: str, size: int = 10_000
) -> tuple[list[str], Iterator[list[tuple[Any, ...]]]]:
    """A query's columns and its rows in batches: a million-row result is written out batch by
    batch instead of held in Python whole."""
    cursor = con.execute(sql)
    columns = [d[0] for d in cursor.description] if cursor.description else []

    def batches() -> Iterator[list[tuple[Any, ...]]]:
        while columns and (rows := cursor.fetchmany(size)):
            yield rows

    return columns, batches()


def prices(
    con: duckdb.DuckDBPyConnection,
    flt: OfferFilter,
    sort: str,
    limit: int | None,
    columns: tuple[str, ...] = PRICE_COLUMNS,
) -> Table:
    """Current offers, `columns` of PRICE_COLUMNS; every matching row unless `limit`."""
    sql, params = prices_query(flt, sort, limit, (*columns, "count(*) OVER () AS matching"))
    found = fetch_table(con, sql, params)
    rows = [row[:-1] for row in found.rows]
    total = found.rows[0][-1] if found.rows else 0
    return Table(list(columns), rows, total if total > len(rows) else None)


def prices_query(
    flt: OfferFilter, sort: str, limit: int | None, columns: tuple[str, ...] = PRICE_COLUMNS
) -> tuple[str, list[Any]]:
    """The SQL and parameters of `prices` (the CLI's and the Python API's one query)."""
    where, params = flt.where()
    sql = f"""
        SELECT {", ".join(columns)}
        FROM offers WHERE {where}
        ORDER BY {PRICE_SORTS[sort]}, {OFFER_KEY}
        LIMIT ?"""
    return sql, [*params, limit]


def has_flags(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether `offers` has the offer guard's columns (a lake snapshot from before migration
    0110 has not)."""
    cursor = con.execute("SELECT * FROM offers LIMIT 0")
    return any(d[0] == "flag" for d in cursor.description or [])


def count_flagged(con: duckdb.DuckDBPyConnection, flt: OfferFilter) -> int:
    """How many offers `flt` would match but leaves out because the offer guard flagged them."""
    flagged = flt.replaced(include_flagged=True)
    where, params = flagged.where()
    row = con.execute(f"SELECT count(*) FROM offers WHERE {where} AND flag IS NOT NULL", params)
    found = row.fetchone()
    return int(found[0]) if found else 0


def gpu_families(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str]]:
    """(id, family) of every GPU in the catalog the database holds: the one its writers load
    from gpus.toml, which mapped its offers (a lookup instead of parsing the whole file)."""
    return [
        (str(gpu), str(family))
        for gpu, family in con.execute("SELECT gpu_model, family FROM gpus").fetchall()
    ]


def accelerator_models(con: duckdb.DuckDBPyConnection) -> set[str]:
    """Catalog models that are accelerators, not GPUs (gpus.kind)."""
    found = con.execute("SELECT gpu_model FROM gpus WHERE kind = 'accelerator'").fetchall()
    return {str(model) for (model,) in found}


def offered_models(con: duckdb.DuckDBPyConnection) -> set[str]:
    """Catalog models with a current offer."""
    found = con.execute("SELECT DISTINCT gpu_model FROM offers WHERE gpu_model IS NOT NULL")
    return {str(model) for (model,) in found.fetchall()}


def latest_sources(con: duckdb.DuckDBPyConnection) -> dict[str, str | None]:
    """Per provider: whether its latest successful run was 'live' or 'recorded'."""
    rows = con.execute(
        "SELECT provider, arg_max_null(source, run_id) FROM core.fetch_runs "
        "WHERE status IN ('ok', 'partial') GROUP BY provider"
    ).fetchall()
    return dict(rows)


def stale_providers(con: duckdb.DuckDBPyConnection, now: dt.datetime) -> dict[str, int]:
    """Per provider with stale prices, how many current offers it has that were last seen more
    than twice its fetch interval ago (the interval its latest run was scheduled at)."""
    rows = con.execute(
        """
        WITH latest AS (
            SELECT provider, arg_max(interval_s, run_id) AS interval_s FROM core.fetch_runs
            WHERE interval_s IS NOT NULL GROUP BY provider
        )
        SELECT o.provider, count(*) FROM offers AS o JOIN latest AS l USING (provider)
        WHERE o.last_seen < ?::TIMESTAMP - to_seconds(2 * l.interval_s)
        GROUP BY o.provider ORDER BY o.provider""",
        [now],
    ).fetchall()
    return {provider: int(n) for provider, n in rows}


def history(
    con: duckdb.DuckDBPyConnection,
    flt: OfferFilter,
    region: str | None,
    instance_type: str | None,
    limit: int,
) -> Table:
    return fetch_table(con, *history_query(flt, region, instance_type, limit))


def history_query(
    flt: OfferFilter, region: str | None, instance_type: str | None, limit: int
) -> tuple[str, list[Any]]:
    """The SQL and parameters of `history` (the CLI's and the Python API's one query): every
    interval, flagged ones too (the log is no "cheapest" answer; a glitch stays marked), each
    with its whole key, so two zones or two commitment terms of one instance never read as one
    offer's history."""
    where, params = flt.replaced(include_flagged=True).where()
    extra = ""
    if region:
        extra += " AND region = ?"
        params.append(region)
    if instance_type:
        extra += " AND instance_type = ?"
        params.append(instance_type)
    sql = f"""
        SELECT provider, region, zone, instance_type, gpu_model, gpu_count, pricing,
               term_months, price_hour_usd, price_gpu_hour_usd, price_origin, available, stock,
               valid_from, valid_to, last_seen, flag
        FROM (SELECT h.*, r.country, r.country_name, r.continent, r.is_eu
              FROM price_history AS h LEFT JOIN regions AS r USING (provider, region))
        WHERE {where}{extra}
        ORDER BY {OFFER_KEY}, valid_from DESC
        LIMIT ?"""
    return sql, [*params, limit]


def unmapped_names(con: duckdb.DuckDBPyConnection) -> Table:
    return fetch_table(
        con,
        """
        SELECT provider, gpu_name_raw, count(*) AS offers,
               list(DISTINCT instance_type ORDER BY instance_type)[1:3] AS example_instance_types
        FROM offers WHERE gpu_model IS NULL
        GROUP BY ALL ORDER BY offers DESC, provider, gpu_name_raw""",
    )


def provider_health(con: duckdb.DuckDBPyConnection) -> Table:
    """Per provider: last run, last success, and how many runs in a row have failed."""
    return fetch_table(
        con,
        """
        WITH ranked AS (
            SELECT *, row_number() OVER (PARTITION BY provider ORDER BY run_id DESC) AS n
            FROM core.fetch_runs WHERE status NOT IN ('running', 'skipped', 'superseded')
        ),
        streak AS (
            SELECT provider,
                   coalesce(min(n) FILTER (WHERE status IN ('ok', 'partial')) - 1, max(n))
                       AS consecutive_failures
            FROM ranked GROUP BY provider
        )
        SELECT r.provider, r.status AS last_status, r.finished_at AS last_run,
               (SELECT max(finished_at) FROM core.fetch_runs f
                 WHERE f.provider = r.provider AND f.status IN ('ok', 'partial')) AS last_success,
               (SELECT arg_max_null(source, run_id) FROM core.fetch_runs f
                 WHERE f.provider = r.provider AND f.status IN ('ok', 'partial'))
                   AS last_success_source,
               s.consecutive_failures, r.error AS last_error,
               (SELECT count(*) FROM offers o WHERE o.provider = r.provider) AS offers
        FROM ranked AS r JOIN streak AS s USING (provider)
        WHERE r.n = 1 ORDER BY r.provider""",
    )


def flagged_offers(con: duckdb.DuckDBPyConnection) -> Table:
    """Current offers the offer guard flagged (store.guard), cheapest first per provider, each
    with its whole key (two zones or two terms of one instance are two offers)."""
    return fetch_table(
        con,
        f"""
        SELECT provider, region, zone, instance_type, pricing, term_months, gpu_model,
            price_gpu_hour_usd, flag, flag_reason
        FROM offers WHERE flag IS NOT NULL
        ORDER BY provider, price_gpu_hour_usd NULLS LAST, {OFFER_KEY}""",
    )


def recent_rejections(con: duckdb.DuckDBPyConnection) -> Table:
    return fetch_table(
        con,
        """
        SELECT q.provider, q.reason, count(*) AS quotes
        FROM core.rejected_quotes q
        JOIN (SELECT provider, max(run_id) AS run_id FROM core.fetch_runs
              WHERE status IN ('ok', 'partial', 'failed') GROUP BY provider) AS latest
            USING (provider, run_id)
        GROUP BY ALL ORDER BY quotes DESC, provider, reason""",
    )
