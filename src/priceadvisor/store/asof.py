"""Prices as of a past moment, on either store, through the same `offers` view name.

- A lake answers from its own snapshots: the reader attaches it at SNAPSHOT_TIME, so every
  table and view is exactly as it was committed then (see store.lake). A snapshot taken before
  a migration that added columns to a public view lacks them: pad_snapshot_views shows such a
  view with today's columns, the missing ones NULL (as the migrations' defaults read: no
  term, no flag, no per-offer billing terms), so today's queries run on it.
- A DuckDB file keeps no snapshots; it answers from the change log instead: a temporary
  `offers` view (which shadows main.offers on that connection) lists the price intervals open
  at that moment. The log is the same data, so both answers agree for what the log records;
  what it does not record (a row rewritten in place, e.g. a price_rule backfill) shows as it
  is now.
"""

from __future__ import annotations

import datetime as dt
from functools import cache

import duckdb

# The columns of db/views/offers.sql, from the intervals valid at $as_of instead of the open ones.
_OFFERS_AS_OF = """
CREATE OR REPLACE TEMP VIEW offers AS
SELECT
    p.provider, p.region, NULLIF(p.zone, '') AS zone, r.city, r.country, r.continent, r.is_eu,
    p.instance_type, p.gpu_model, p.gpu_name_raw, p.gpu_count, p.gpu_memory_gb, p.vcpus,
    p.ram_gb, p.pricing, NULLIF(p.term_months, 0) AS term_months, p.upfront_usd,
    p.monthly_usd, p.price_hour_usd, p.price_gpu_hour_usd, p.currency,
    p.price_hour_original, p.price_origin, p.price_rule, p.available, p.stock, p.interruption_rate,
    p.disk_usd_gb_month, p.egress_usd_gb, p.offer_count, p.price_hour_median_usd, p.price_date,
    p.first_seen,
    least(p.last_seen, TIMESTAMP '{as_of}') AS last_seen, p.source_url, p.flag, p.flag_reason
FROM core.price_intervals AS p
LEFT JOIN core.regions AS r ON r.provider = p.provider AND r.region = p.region
WHERE p.valid_from <= TIMESTAMP '{as_of}'
  AND (p.valid_to IS NULL OR p.valid_to > TIMESTAMP '{as_of}')
"""


AS_OF_FORMAT = "an ISO 8601 time such as 2026-11-20T08:00 (UTC) or 2026-11-20T09:00+01:00"


def parse_moment(text: str) -> dt.datetime | None:
    """An as-of moment as users write it (AS_OF_FORMAT), or None when it is not one."""
    try:
        return dt.datetime.fromisoformat(text.strip())
    except ValueError:
        return None


def naive_utc(moment: dt.datetime) -> dt.datetime:
    """The store's timestamps are naive UTC: an aware time is converted, a naive one is UTC."""
    if moment.tzinfo is None:
        return moment
    return moment.astimezone(dt.UTC).replace(tzinfo=None)


def shadow_offers(con: duckdb.DuckDBPyConnection, as_of: dt.datetime) -> None:
    """On a DuckDB file: `offers` as of `as_of`, for the rest of this connection."""
    con.execute(_OFFERS_AS_OF.format(as_of=naive_utc(as_of).isoformat(sep=" ")))


def pad_snapshot_views(con: duckdb.DuckDBPyConnection, catalog: str) -> None:
    """On a lake attached at a snapshot (as `catalog`): each public view that lacks columns the
    current schema's view has is shadowed by a temporary view with them, NULL; a view the
    snapshot does not have yet answers no rows."""
    from priceadvisor.store import schema  # noqa: PLC0415 - as-of on a lake only

    row = con.execute("SELECT max(version) FROM core.schema_migrations").fetchone()
    if row and row[0] == schema.latest_version():
        return  # a snapshot of today's schema: nothing to pad (and no schema to build)
    present = _view_columns(con, catalog)
    for view, columns in _current_view_columns().items():
        have = present.get(view)
        if have is not None and all(name in have for name, _ in columns):
            continue
        select = ", ".join(
            f'"{name}"' if have and name in have else f'CAST(NULL AS {kind}) AS "{name}"'
            for name, kind in columns
        )
        source = f'{catalog}.main."{view}"' if have else "(SELECT 1) WHERE false"
        con.execute(f'CREATE OR REPLACE TEMP VIEW "{view}" AS SELECT {select} FROM {source}')


_COLUMNS_SQL = """
SELECT c.table_name, c.column_name, c.data_type
FROM duckdb_columns() AS c JOIN duckdb_views() AS v
  ON v.database_name = c.database_name AND v.schema_name = c.schema_name
 AND v.view_name = c.table_name
WHERE c.database_name = ? AND c.schema_name = 'main' AND NOT v.internal
ORDER BY c.table_name, c.column_index
"""


def _view_columns(con: duckdb.DuckDBPyConnection, catalog: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for view, name, _ in con.execute(_COLUMNS_SQL, [catalog]).fetchall():
        found.setdefault(view, []).append(name)
    return found


@cache
def _current_view_columns() -> dict[str, list[tuple[str, str]]]:
    """The public views' columns as this version's migrations and views define them: read
    from an empty in-memory database built from them (~0.1 s, once per process)."""
    from priceadvisor.store import schema  # noqa: PLC0415 - as-of on an old snapshot only

    con = duckdb.connect()
    try:
        schema.migrate(con)
        schema.create_views(con)
        found: dict[str, list[tuple[str, str]]] = {}
        for view, name, kind in con.execute(_COLUMNS_SQL, ["memory"]).fetchall():
            found.setdefault(view, []).append((name, kind))
        return found
    finally:
        con.close()
