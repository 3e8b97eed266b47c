"""Read queries behind the CLI: current prices, history, health. Parameters are always bound."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import duckdb

PRICE_SORTS = {
    "gpu-hour": "price_gpu_hour_usd NULLS LAST, price_hour_usd",
    "hour": "price_hour_usd, price_gpu_hour_usd NULLS LAST",
    "provider": "provider, region, price_gpu_hour_usd NULLS LAST",
    "gpu": "gpu_model NULLS LAST, price_gpu_hour_usd NULLS LAST",
}

PRICE_COLUMNS = (
    "provider",
    "region",
    "country",
    "instance_type",
    "gpu_model",
    "gpu_count",
    "pricing",
    "price_hour_usd",
    "price_gpu_hour_usd",
    "available",
    "price_origin",
)


@dataclass(slots=True)
class Table:
    columns: list[str]
    rows: list[tuple[Any, ...]]


@dataclass(slots=True)
class OfferFilter:
    gpu: str | None = None
    providers: list[str] = field(default_factory=list)
    country: str | None = None
    continent: str | None = None
    eu: bool = False
    pricing: str | None = None
    # Derived prices (a documented rule applied to a published one) answer "what does it cost"
    # but not "what is cheapest": they are left out unless asked for.
    include_derived: bool = False

    def where(self) -> tuple[str, list[Any]]:
        clauses: list[str] = ["TRUE"]
        params: list[Any] = []
        if not self.include_derived:
            clauses.append("price_origin = 'published'")
        if self.gpu:
            clauses.append("(gpu_model ILIKE ? OR gpu_name_raw ILIKE ?)")
            params += [f"%{self.gpu}%", f"%{self.gpu}%"]
        if self.providers:
            clauses.append("list_contains(?, provider)")
            params.append(list(self.providers))
        if self.country:
            clauses.append("(country = upper(?) OR country_name ILIKE ?)")
            params += [self.country, self.country]
        if self.continent:
            clauses.append("continent = upper(?)")
            params.append(self.continent)
        if self.eu:
            clauses.append("is_eu")
        if self.pricing:
            clauses.append("pricing = ?")
            params.append(self.pricing)
        return " AND ".join(clauses), params


def fetch_table(con: duckdb.DuckDBPyConnection, sql: str, params: Any = None) -> Table:
    cursor = con.execute(sql, params) if params is not None else con.execute(sql)
    rows = cursor.fetchall()
    columns = [d[0] for d in cursor.description] if cursor.description else []
    return Table(columns, rows)


def prices(con: duckdb.DuckDBPyConnection, flt: OfferFilter, sort: str, limit: int) -> Table:
    where, params = flt.where()
    sql = f"""
        SELECT {", ".join(PRICE_COLUMNS)}
        FROM (SELECT o.*, r.country_name FROM offers AS o
              LEFT JOIN regions AS r USING (provider, region))
        WHERE {where}
        ORDER BY {PRICE_SORTS[sort]}
        LIMIT ?"""
    return fetch_table(con, sql, [*params, limit])


def history(
    con: duckdb.DuckDBPyConnection,
    flt: OfferFilter,
    region: str | None,
    instance_type: str | None,
    limit: int,
) -> Table:
    where, params = flt.where()
    extra = ""
    if region:
        extra += " AND region = ?"
        params.append(region)
    if instance_type:
        extra += " AND instance_type = ?"
        params.append(instance_type)
    sql = f"""
        SELECT provider, region, instance_type, gpu_model, gpu_count, pricing,
               price_hour_usd, price_gpu_hour_usd, price_origin, valid_from, valid_to, last_seen
        FROM (SELECT h.*, r.country, r.country_name, r.continent, r.is_eu
              FROM price_history AS h LEFT JOIN regions AS r USING (provider, region))
        WHERE {where}{extra}
        ORDER BY provider, region, instance_type, pricing, valid_from DESC
        LIMIT ?"""
    return fetch_table(con, sql, [*params, limit])


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
            FROM core.fetch_runs WHERE status NOT IN ('running', 'skipped')
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
               s.consecutive_failures, r.error AS last_error,
               (SELECT count(*) FROM offers o WHERE o.provider = r.provider) AS offers
        FROM ranked AS r JOIN streak AS s USING (provider)
        WHERE r.n = 1 ORDER BY r.provider""",
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
        GROUP BY ALL ORDER BY quotes DESC""",
    )
