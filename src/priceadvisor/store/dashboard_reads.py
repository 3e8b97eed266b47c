"""Read queries behind the web dashboard and its JSON API.

Only the public views are read, every value is a bound parameter, and sorting goes through a
whitelist: no page or API call can run SQL of its caller's choosing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from priceadvisor.records import RENTABLE, utcnow
from priceadvisor.store.reads import OFFER_KEY, Table, fetch_table, no_sla

OFFER_COLUMNS = (
    "provider",
    "region",
    "zone",  # where the source prices each location of a region apart (TensorDock, Lium)
    "country",
    "instance_type",
    "gpu_model",
    "gpu_count",
    "gpu_memory_gb",
    "pricing",
    "term_months",  # a commitment's term (pricing=reserved); empty for every other row
    "price_hour_usd",
    "price_gpu_hour_usd",
    "available",
    "offer_count",
    "price_origin",
    # the offer guard's verdict (store.guard): listed and marked, never "cheapest"
    "flag",
    "flag_reason",
)
# URL value -> ORDER BY clause; the only way a caller influences the ORDER BY.
OFFER_SORTS = {
    "gpu-hour": "price_gpu_hour_usd NULLS LAST, price_hour_usd",
    "hour": "price_hour_usd, price_gpu_hour_usd NULLS LAST",
    "vram": "gpu_memory_gb DESC NULLS LAST, price_gpu_hour_usd NULLS LAST",
    "provider": "provider, region, price_gpu_hour_usd NULLS LAST",
    "gpu": "gpu_model NULLS LAST, price_gpu_hour_usd NULLS LAST",
}
PRICINGS = ("on_demand", "spot", "market", "reserved")
PAGE_SIZES = (25, 50, 100, 200)


@dataclass(slots=True)
class OfferQuery:
    """What the Prices page and /api/offers filter by (all optional)."""

    gpu: str | None = None  # a GPU model id or a family name (H100, A100, ...)
    vram_min: float | None = None
    gpu_count: float | None = None
    pricing: str | None = None
    providers: list[str] = field(default_factory=list)
    country: str | None = None
    continent: str | None = None
    eu: bool = False
    available_only: bool = False
    # Derived prices (a documented rule applied to a published one) are left out unless asked.
    include_derived: bool = False
    sort: str = "gpu-hour"
    page: int = 1
    per_page: int = 50

    def where(self) -> tuple[str, list[Any]]:
        clauses, params = ["TRUE"], []
        for clause, values in self._conditions():
            clauses.append(clause)
            params += values
        return " AND ".join(clauses), params

    def _conditions(self) -> list[tuple[str, list[Any]]]:
        """(clause, parameters) for each filter given; the price kind always applies."""
        optional: list[tuple[Any, str, list[Any]]] = [
            (self.gpu, "(o.gpu_model = ? OR g.family = ?)", [self.gpu, self.gpu]),
            (self.vram_min is not None, "o.gpu_memory_gb >= ?", [self.vram_min]),
            (self.gpu_count is not None, "o.gpu_count = ?", [self.gpu_count]),
            (self.providers, "list_contains(?, o.provider)", [list(self.providers)]),
            (self.country, "o.country = upper(?)", [self.country]),
            (self.continent, "o.continent = upper(?)", [self.continent]),
            (self.eu, "o.is_eu", []),
            (self.available_only, "o.available IS NOT FALSE", []),
            (not self.include_derived, "o.price_origin = 'published'", []),
        ]
        found = [(clause, values) for wanted, clause, values in optional if wanted]
        if self.pricing:
            return [*found, ("o.pricing = ?", [self.pricing])]
        # market averages and commitments are shown only when asked for
        return [*found, ("list_contains(?, o.pricing)", [[str(p) for p in RENTABLE]])]


_FILTERED = """
    SELECT o.* FROM offers AS o LEFT JOIN gpus AS g ON g.gpu_model = o.gpu_model
    WHERE {where}"""


def _page_query(q: OfferQuery, with_total: bool = False) -> tuple[str, list[Any]]:
    where, params = q.where()
    total = ", count(*) OVER () AS total" if with_total else ""
    sql = f"""
        SELECT {", ".join(OFFER_COLUMNS)}{total} FROM ({_FILTERED.format(where=where)})
        ORDER BY {OFFER_SORTS[q.sort]}, {OFFER_KEY}
        LIMIT ? OFFSET ?"""
    return sql, [*params, q.per_page, (q.page - 1) * q.per_page]


def offers_page(con: duckdb.DuckDBPyConnection, q: OfferQuery) -> tuple[Table, int]:
    """One page of offers and how many match in all (one scan: the total rides along as a
    window column; only a page past the end needs a second query)."""
    table = fetch_table(con, *_page_query(q, with_total=True))
    if table.rows:
        total = int(table.rows[0][-1])
        return Table(table.columns[:-1], [row[:-1] for row in table.rows]), total
    where, params = q.where()
    row = con.execute(f"SELECT count(*) FROM ({_FILTERED.format(where=where)})", params).fetchone()
    return table if not table.columns else Table(table.columns[:-1], []), int(row[0]) if row else 0


def offers_page_parquet(con: duckdb.DuckDBPyConnection, q: OfferQuery, target: Path) -> None:
    """The same page written as a Parquet file (the path is ours, never the caller's)."""
    sql, params = _page_query(q)
    quoted = str(target).replace("'", "''")
    con.execute(f"COPY ({sql}) TO '{quoted}' (FORMAT parquet)", params)


def cheapest_per_model(con: duckdb.DuckDBPyConnection, q: OfferQuery) -> Table:
    """Under the same filters: each GPU model's cheapest offer per GPU-hour, who and where (the
    zone too where the source prices each apart, and a commitment's term: each is an offer of its
    own), cheapest model first.
    (arg_min in one aggregation: a third of the time of a window over every offer.)"""
    where, params = q.where()
    sql = f"""
        SELECT gpu_model, best.provider, best.region, best.zone, best.country, best.pricing,
               best.term_months, price_gpu_hour_usd
        FROM (SELECT gpu_model, min(price_gpu_hour_usd) AS price_gpu_hour_usd,
                     arg_min({{'provider': provider, 'region': region, 'zone': zone,
                              'country': country, 'pricing': pricing,
                              'term_months': term_months}},
                             (price_gpu_hour_usd, provider, region, coalesce(zone, ''),
                              instance_type, pricing, coalesce(term_months, 0)))
                         AS best
              FROM ({_FILTERED.format(where=where)})
              WHERE gpu_model IS NOT NULL AND price_gpu_hour_usd IS NOT NULL AND flag IS NULL
              GROUP BY gpu_model)
        ORDER BY price_gpu_hour_usd, gpu_model"""
    return fetch_table(con, sql, params)


def filter_choices(con: duckdb.DuckDBPyConnection) -> dict[str, list[Any]]:
    """The values the filter controls offer, only those present in current offers (one scan)."""
    row = con.execute(
        """
        SELECT list(DISTINCT o.provider ORDER BY o.provider),
               list(DISTINCT o.gpu_model ORDER BY o.gpu_model) FILTER (o.gpu_model IS NOT NULL),
               list(DISTINCT g.family ORDER BY g.family) FILTER (g.family IS NOT NULL),
               list(DISTINCT o.country ORDER BY o.country) FILTER (o.country IS NOT NULL),
               list(DISTINCT o.continent ORDER BY o.continent) FILTER (o.continent IS NOT NULL),
               list(DISTINCT o.gpu_count ORDER BY o.gpu_count) FILTER (o.gpu_count >= 1)
        FROM offers o LEFT JOIN gpus g USING (gpu_model)"""
    ).fetchone()
    names = ("providers", "gpus", "families", "countries", "continents", "counts")
    return {name: list(values or []) for name, values in zip(names, row or [], strict=False)}


def gpu_specs(con: duckdb.DuckDBPyConnection, model: str) -> dict[str, Any] | None:
    table = fetch_table(con, "SELECT * FROM gpus WHERE gpu_model = ?", [model])
    if not table.rows:
        return None
    return {k: v for k, v in zip(table.columns, table.rows[0], strict=True) if v is not None}


def gpu_daily_cheapest(con: duckdb.DuckDBPyConnection, model: str, days: int = 90) -> Table:
    """Per UTC day, provider and pricing (on-demand or spot): the cheapest published
    $/GPU-hour of any unflagged interval alive that day (the prices the page's "cheapest now"
    compares). Now is UTC from Python: DuckDB's now()::TIMESTAMP and current_date are in the
    host's zone, and a day boundary there would add a day not begun yet or drop today."""
    return fetch_table(
        con,
        """
        WITH span AS (
            SELECT provider, pricing, price_gpu_hour_usd,
                   CAST(valid_from AS DATE) AS first_day,
                   CAST(coalesce(valid_to, $now) AS DATE) AS last_day
            FROM price_history
            WHERE gpu_model = $model AND price_gpu_hour_usd IS NOT NULL
              AND flag IS NULL  -- a flagged price (placeholder, glitch) is no day's cheapest
              AND pricing IN ('on_demand', 'spot')  -- nor a market average or a commitment
              AND price_origin = 'published'  -- nor a price derived by a rule
              AND coalesce(valid_to, $now) >= $now - to_days($days)
        )
        SELECT CAST(d.day AS DATE) AS day, provider, pricing,
               round(min(price_gpu_hour_usd), 4) AS usd
        FROM span,
             generate_series(greatest(first_day, CAST($now AS DATE) - to_days($days)),
                             last_day, INTERVAL 1 DAY) AS d(day)
        GROUP BY ALL ORDER BY provider, pricing, day""",
        {"model": model, "days": days, "now": utcnow()},
    )


def gpu_offers(con: duckdb.DuckDBPyConnection, model: str, limit: int = 200) -> Table:
    """A GPU's current offers, cheapest first, at most `limit` (`total`: how many there are
    when the limit cut some); commitments are on the Prices page (pricing=reserved), not among
    what can be rented by the hour."""
    found = fetch_table(
        con,
        f"""SELECT {", ".join(OFFER_COLUMNS)}, count(*) OVER () AS total FROM offers
            WHERE gpu_model = ? AND pricing <> 'reserved'
            ORDER BY price_gpu_hour_usd NULLS LAST, {OFFER_KEY} LIMIT ?""",
        [model, limit],
    )
    total = int(found.rows[0][-1]) if found.rows else 0
    rows = [row[:-1] for row in found.rows]
    return Table(found.columns[:-1], rows, total if total > len(rows) else None)


def workloads(con: duckdb.DuckDBPyConnection, top: int = 10) -> Table:
    """The latest ranking of every workload (top N), with the offer's last different price
    before the ranked one (a closed interval may differ in availability only), whether it comes
    from a host with no SLA (a marketplace), where each price came from, and its list cost,
    billing terms and why its rank differs from its rank by list cost."""
    return fetch_table(
        con,
        f"""
        SELECT a.workload, a.task, a.rank, a.provider, a.region, a.zone, a.instance_type,
               a.gpu_model,
               a.gpu_count, a.pricing, a.price_hour_usd, a.cost_usd, a.usd_per_mtok,
               a.monthly_usd, a.replicas, a.tokens_per_s, a.hours, a.ttft_ms, a.tpot_ms,
               a.binding, a.low, a.high, a.computed_at, {no_sla("a")} AS no_sla,
               a.freshness, a.source_url, a.fetched_at, a.price_origin,
               a.interruption_source, a.interruption_rate, a.available,
               a.list_cost_usd, a.effective_cost_usd, a.terms_applied, a.list_rank,
               a.rank_reason,
               (SELECT h.price_hour_usd FROM price_history h
                 WHERE h.provider = a.provider AND h.region = a.region
                   AND h.zone IS NOT DISTINCT FROM a.zone
                   AND h.instance_type = a.instance_type AND h.pricing = a.pricing
                   AND h.valid_to IS NOT NULL AND h.price_hour_usd <> a.price_hour_usd
                   -- before the ranked price: an interval that ended after the ranking last
                   -- saw it came later (the ranking may be several fetches old)
                   AND h.valid_to <= coalesce(a.fetched_at, a.computed_at)
                 ORDER BY h.valid_to DESC LIMIT 1) AS previous_price_hour_usd
        FROM advice a WHERE a.rank <= ? ORDER BY a.workload, a.rank""",
        [top],
    )


def providers(con: duckdb.DuckDBPyConnection) -> Table:
    """Per provider: last run, its status and error, last success and whether the prices it
    brought were live or replayed recordings (the last run's source when none succeeded),
    offers, unmapped names, and its rentable kinds' offers (on-demand and spot) with how many
    of them the source lists but says cannot be rented now, or says nothing of.

    `offers` counts every current offer, which no one Prices view lists; the page links these
    counts instead, each the rows of its own Prices view (flagged offers are listed in each):
    `published_offers` (on-demand and spot at published prices: the Prices page's default),
    `with_derived` (the same with prices derived by a rule: derived=1), `commitments`
    (pricing=reserved) and `market_averages` (pricing=market), the last two of either origin."""
    return fetch_table(
        con,
        """
        WITH last AS (
            SELECT * FROM fetch_runs WHERE status NOT IN ('running', 'skipped')
            QUALIFY row_number() OVER (PARTITION BY provider ORDER BY run_id DESC) = 1
        ),
        -- the prices shown are the last success's: whether they are live or recorded is its
        -- source, not that of a later run that failed
        ok AS (SELECT provider, max(finished_at) AS last_success,
                      arg_max_null(source, run_id) AS source
               FROM fetch_runs WHERE status IN ('ok', 'partial') GROUP BY provider),
        counts AS (SELECT provider, count(*) AS offers,
                          count(*) FILTER (WHERE gpu_model IS NULL) AS unmapped_offers,
                          list(DISTINCT gpu_name_raw ORDER BY gpu_name_raw)
                              FILTER (WHERE gpu_model IS NULL)[1:5] AS unmapped_names,
                          max(last_seen) AS last_seen,
                          -- the kinds OfferQuery lists by default, as its links lead there
                          count(*) FILTER (WHERE list_contains($rentable, pricing)
                              AND price_origin = 'published') AS published_offers,
                          count(*) FILTER (WHERE list_contains($rentable, pricing))
                              AS with_derived,
                          count(*) FILTER (WHERE pricing = 'reserved') AS commitments,
                          count(*) FILTER (WHERE pricing = 'market') AS market_averages,
                          count(*) FILTER (WHERE pricing IN ('on_demand', 'spot'))
                              AS rentable_listed,
                          count(*) FILTER (WHERE pricing IN ('on_demand', 'spot')
                              AND available = false) AS not_rentable,
                          count(*) FILTER (WHERE pricing IN ('on_demand', 'spot')
                              AND available IS NULL) AS availability_unknown
                   FROM offers GROUP BY provider)
        SELECT last.provider,
               CASE WHEN ok.provider IS NULL THEN last.source ELSE ok.source END AS source,
               last.status AS last_status,
               last.finished_at AS last_run,
               ok.last_success, last.error AS last_error,
               coalesce(counts.offers, 0) AS offers,
               coalesce(counts.published_offers, 0) AS published_offers,
               coalesce(counts.with_derived, 0) AS with_derived,
               coalesce(counts.commitments, 0) AS commitments,
               coalesce(counts.market_averages, 0) AS market_averages,
               coalesce(counts.unmapped_offers, 0) AS unmapped_offers, counts.unmapped_names,
               counts.last_seen,
               counts.rentable_listed, counts.not_rentable, counts.availability_unknown
        FROM last LEFT JOIN ok USING (provider) LEFT JOIN counts USING (provider)
        ORDER BY last.provider""",
        {"rentable": [str(p) for p in RENTABLE]},
    )


def alert_states(con: duckdb.DuckDBPyConnection) -> Table:
    """Alert states; `task` is the watched workload's (a 'cheaper' rule's amounts are per run
    for training, per 1M tokens for serving), else null."""
    return fetch_table(
        con,
        """
        SELECT rule, labels, firing, pending, reference, value, last_notified_at, updated_at,
               (SELECT any_value(v.task) FROM advice AS v
                 WHERE v.workload = (alerts.labels ->> 'workload')) AS task
        FROM alerts ORDER BY firing DESC, updated_at DESC, fingerprint LIMIT 200""",
    )


def recent_notifications(con: duckdb.DuckDBPyConnection, limit: int = 50) -> Table:
    return fetch_table(
        con,
        "SELECT kind, channel, key, created_at, sent_at, status, attempts, last_error "
        "FROM notifications ORDER BY created_at DESC, id DESC LIMIT ?",
        [limit],
    )


def silences(con: duckdb.DuckDBPyConnection) -> Table:
    """Silences, active first. Active is judged against UTC now from Python, as the alerts that
    honour them judge it: the view's `active` compares with DuckDB's now()::TIMESTAMP, which is
    in the host's zone, so off UTC it calls a live silence expired or an expired one live."""
    return fetch_table(
        con,
        "SELECT id, matchers, comment, created_at, expires_at, expires_at > ? AS active "
        "FROM silences ORDER BY active DESC, expires_at DESC, id DESC LIMIT 200",
        [utcnow()],
    )
