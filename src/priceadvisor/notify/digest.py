"""The weekly digest: what changed, what is cheapest, what moved, what is healthy.

Built from the views with set-based SQL (one statement per section), rendered three ways from the
same data: HTML email (templates/digest.html.j2, autoescaped), text email (digest.txt.j2) and
Slack Block Kit (built here, mrkdwn-escaped, split to Slack's limits).
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass, field
from typing import Any

import duckdb

from priceadvisor.collect import health
from priceadvisor.config import Settings
from priceadvisor.notify import Message, list_vs_effective
from priceadvisor.notify import slack as blocks
from priceadvisor.notify.chart import CID as price_chart_cid
from priceadvisor.notify.chart import ChartUnavailable, price_chart
from priceadvisor.notify.render import counted, figure, money
from priceadvisor.sizing import apicompare
from priceadvisor.store import reads
from priceadvisor.store.freshness import EXCLUDED_AFTER_HOURS
from priceadvisor.store.handle import Store

log = logging.getLogger(__name__)

WEEKS = 8
GPU_ROWS = 12
SPARK = "▁▂▃▄▅▆▇█"

# A price its provider has not confirmed for longer than the exclusion limit (a week: its
# fetches fail) is no price of now, as advice and alerts read it; at each weekly point alike.
# Every point at one exchange rate, today's (as the movers): an open interval's USD price follows
# the latest rate, a closed one keeps the rate it closed with, so a euro price that held would
# otherwise change the weekly minimum where a stock change closed an interval.
GPU_PRICES_SQL = f"""
WITH points AS (
    SELECT w, $now - INTERVAL (7 * w) DAY AS at FROM range({WEEKS}) AS r(w)
),
rates AS (  -- each provider's rate of now per currency, as its current prices carry it
    SELECT provider, currency, any_value(price_hour_usd / price_hour_original) AS usd_per_unit
    FROM offers WHERE currency <> 'USD' AND price_hour_original > 0 GROUP BY ALL
),
weekly AS (
    SELECT h.gpu_model, h.pricing, p.w,
        min(CASE WHEN h.valid_to IS NOT NULL AND r.usd_per_unit IS NOT NULL
                      AND h.price_hour_original > 0
                 THEN h.price_hour_original * r.usd_per_unit / h.gpu_count
                 ELSE h.price_gpu_hour_usd END) AS price
    FROM points AS p
    JOIN price_history AS h
      ON h.valid_from <= p.at AND coalesce(h.valid_to, 'infinity'::TIMESTAMP) > p.at
    LEFT JOIN rates AS r ON r.provider = h.provider AND r.currency = h.currency
    WHERE h.gpu_model IS NOT NULL AND h.price_gpu_hour_usd IS NOT NULL
      AND h.pricing IN ('on_demand', 'spot')  -- no market averages, no commitments
      AND h.price_origin = 'published' AND h.flag IS NULL  -- flagged: never "cheapest"
      AND h.last_seen > p.at - INTERVAL {EXCLUDED_AFTER_HOURS} HOUR  -- a price of that week
    GROUP BY ALL
)
SELECT gpu_model, pricing,
    min(price) FILTER (WHERE w = 0) AS now_price,
    min(price) FILTER (WHERE w = 1) AS week_ago,
    list({{'w': w, 'price': price}}) AS series,
    any_value(c.provider) AS provider, any_value(c.region) AS region,
    any_value(c.offers) AS offers, any_value(c.source_url) AS source_url,
    any_value(c.fetched_at) AS fetched_at, any_value(c.price_origin) AS price_origin
FROM weekly
LEFT JOIN (
    -- who offers it cheapest now, and where (ties: alphabetical, so the digest is stable)
    SELECT gpu_model, pricing, count(*) AS offers,
        arg_min(provider, (price_gpu_hour_usd, provider, region)) AS provider,
        arg_min(region, (price_gpu_hour_usd, provider, region)) AS region,
        arg_min(source_url, (price_gpu_hour_usd, provider, region)) AS source_url,
        arg_min(last_seen, (price_gpu_hour_usd, provider, region)) AS fetched_at,
        arg_min(price_origin, (price_gpu_hour_usd, provider, region)) AS price_origin
    FROM offers WHERE gpu_model IS NOT NULL AND price_gpu_hour_usd IS NOT NULL
        AND price_origin = 'published' AND flag IS NULL  -- the prices `weekly` reads
        AND last_seen > $now - INTERVAL {EXCLUDED_AFTER_HOURS} HOUR
    GROUP BY ALL
) AS c USING (gpu_model, pricing)
GROUP BY ALL
HAVING now_price IS NOT NULL
ORDER BY gpu_model, pricing
"""

# Before this, the database has no history: the digest summarises instead of listing changes.
HISTORY_START_SQL = "SELECT min(valid_from) FROM price_history"

MARKET_SQL = """
SELECT count(*) AS offers, count(DISTINCT provider) AS providers,
    count(DISTINCT gpu_model) AS gpu_models
FROM offers
"""

# A week-ago price the offer guard flagged (a glitch kept in the history with its `price_jump`
# flag) was no offer: no basis for a change, here as in the GPU table's weekly prices.
# Both ends at one exchange rate: an open interval's USD price follows the latest rate, a closed
# one keeps the rate it closed with, so a euro price that held would "move" with the rate only
# where a stock change closed an interval in the week. Compared in the source's currency, the
# week-ago price is shown at today's rate.
WEEK_AGO_AT_TODAYS_RATE = """
CASE WHEN {now}.currency IS NOT DISTINCT FROM {then}.currency AND {now}.price_hour_original > 0
     THEN CASE WHEN {then}.price_hour_original = {now}.price_hour_original
               THEN {now}.price_hour_usd
               ELSE {then}.price_hour_original * {now}.price_hour_usd / {now}.price_hour_original
          END
     ELSE {then}.price_hour_usd
END"""

MOVERS_SQL = f"""
WITH earlier AS (
    SELECT provider, region, zone, instance_type, pricing, price_hour_usd, price_hour_original,
        currency
    FROM price_history
    WHERE valid_from <= $week_ago AND coalesce(valid_to, 'infinity'::TIMESTAMP) > $week_ago
      AND flag IS NULL
),
compared AS (
    SELECT o.*, {WEEK_AGO_AT_TODAYS_RATE.format(now="o", then="t")} AS before
    FROM offers AS o JOIN earlier AS t USING (provider, region, instance_type, pricing)
    WHERE coalesce(o.zone, '') = coalesce(t.zone, '')
      AND o.pricing IN ('on_demand', 'spot') AND o.flag IS NULL
)
SELECT provider, region, instance_type, gpu_model, pricing, price_origin,
    source_url, last_seen AS fetched_at, before,
    price_hour_usd AS now, (price_hour_usd - before) / before AS change
FROM compared WHERE price_hour_usd <> before
ORDER BY abs(change) DESC, provider, region, zone NULLS FIRST, instance_type, pricing
LIMIT $limit
"""

NEW_SQL = """
SELECT provider, gpu_model, count(*) AS offers, min(price_gpu_hour_usd) AS cheapest,
    list(DISTINCT region ORDER BY region)[1:4] AS regions
FROM offers WHERE first_seen > $week_ago AND gpu_model IS NOT NULL
  AND pricing IN ('on_demand', 'spot')
  AND price_origin = 'published' AND flag IS NULL
GROUP BY ALL ORDER BY offers DESC, provider, gpu_model LIMIT $limit
"""

# An offer is gone once, whatever number of intervals (price, availability or stock changes) its
# history has in the week: its last interval says what it was, and what "new" leaves out
# (commitments, market averages, derived prices, flagged offers) is no "gone" news either.
VANISHED_SQL = """
WITH gone AS (
    SELECT h.* FROM price_history AS h
    WHERE h.valid_to > $week_ago AND NOT EXISTS (
        SELECT 1 FROM offers o WHERE o.provider = h.provider AND o.region = h.region
          AND o.zone IS NOT DISTINCT FROM h.zone
          AND o.instance_type = h.instance_type AND o.pricing = h.pricing
          AND o.term_months IS NOT DISTINCT FROM h.term_months)
    QUALIFY row_number() OVER (
        PARTITION BY provider, region, zone, instance_type, pricing, term_months
        ORDER BY valid_to DESC) = 1
)
SELECT provider, gpu_model, count(*) AS offers,
    list(DISTINCT region ORDER BY region)[1:4] AS regions
FROM gone WHERE gpu_model IS NOT NULL AND pricing IN ('on_demand', 'spot')
  AND price_origin = 'published' AND flag IS NULL
GROUP BY ALL ORDER BY offers DESC, provider, gpu_model LIMIT $limit
"""

BEST_SQL = f"""
SELECT a.workload, a.task, a.rank, a.provider, a.region, a.instance_type, a.gpu_model,
    a.gpu_count, a.pricing, a.price_hour_usd, coalesce(a.cost_usd, a.usd_per_mtok) AS cost,
    a.list_cost_usd AS list_cost, coalesce(a.terms_applied, []) AS terms, a.rank_reason,
    a.binding, a.tokens_per_s, a.hours, a.tpot_ms,
    {WEEK_AGO_AT_TODAYS_RATE.format(now="o", then="h")} AS price_week_ago,
    a.source_url, a.fetched_at, a.price_origin, a.freshness,
    {reads.no_sla("a")} AS marketplace
FROM advice AS a
LEFT JOIN price_history AS h
  ON h.provider = a.provider AND h.region = a.region AND h.zone IS NOT DISTINCT FROM a.zone
  AND h.instance_type = a.instance_type AND h.pricing = a.pricing AND h.valid_from <= $week_ago
  AND coalesce(h.valid_to, 'infinity'::TIMESTAMP) > $week_ago AND h.flag IS NULL
LEFT JOIN offers AS o  -- the offer now: today's exchange rate
  ON o.provider = a.provider AND o.region = a.region AND o.zone IS NOT DISTINCT FROM a.zone
  AND o.instance_type = a.instance_type AND o.pricing = a.pricing AND o.term_months IS NULL
WHERE a.rank <= $top
ORDER BY a.workload, a.rank
"""


@dataclass(slots=True)
class Digest:
    generated_at: dt.datetime
    week_ago: dt.datetime
    gpu_prices: list[dict[str, Any]] = field(default_factory=list)
    movers: list[dict[str, Any]] = field(default_factory=list)
    first_week: bool = False  # no history before last week: summarise, do not list changes
    market: dict[str, Any] = field(default_factory=dict)
    reader_gpus: list[str] = field(default_factory=list)
    dashboard_url: str | None = None
    new_offers: list[dict[str, Any]] = field(default_factory=list)
    vanished: list[dict[str, Any]] = field(default_factory=list)
    workloads: list[dict[str, Any]] = field(default_factory=list)
    # one line per serve workload: the cheapest API for its model beside its best rented offer
    api_comparisons: list[str] = field(default_factory=list)
    health: list[dict[str, Any]] = field(default_factory=list)
    healthy: bool = True
    problems: list[str] = field(default_factory=list)  # the health report's, one line each

    @property
    def key(self) -> str:
        """One digest per ISO week: the outbox key that makes sending it idempotent."""
        year, week, _ = self.generated_at.isocalendar()
        return f"digest:{year}-W{week:02d}"


def _records(
    con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, Any]
) -> list[dict[str, Any]]:
    cursor = con.execute(sql, {k: v for k, v in params.items() if f"${k}" in sql})
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def build(con: duckdb.DuckDBPyConnection, settings: Settings, now: dt.datetime) -> Digest:
    week_ago = now - dt.timedelta(days=7)
    params = {"now": now, "week_ago": week_ago, "limit": 10, "top": settings.digest.top}
    digest = Digest(now, week_ago)
    digest.gpu_prices = _records(con, GPU_PRICES_SQL, params)
    for row in digest.gpu_prices:
        weekly: list[float | None] = [None] * WEEKS
        for point in row["series"]:
            weekly[WEEKS - 1 - point["w"]] = point["price"]  # oldest first
        row["series"] = weekly
        row["spark"] = sparkline(weekly)
        row["change"] = _change(row["now_price"], row["week_ago"])
    digest.movers = _records(con, MOVERS_SQL, params)
    digest.workloads = _records(con, BEST_SQL, params)
    for row in digest.workloads:
        row["change"] = _change(row["price_hour_usd"], row["price_week_ago"])
        row["effective_note"] = list_vs_effective(row)
    best = apicompare.best_per_workload(con, list(settings.workloads))
    digest.api_comparisons = [f"{name}: {c.sentence()}" for name, c in best.items()]
    start = con.execute(HISTORY_START_SQL).fetchone()
    digest.first_week = start is None or start[0] is None or start[0] > week_ago
    digest.market = _records(con, MARKET_SQL, params)[0]
    if not digest.first_week:  # in week one every offer is "new": the summary says so once
        digest.new_offers = _records(con, NEW_SQL, params)
        digest.vanished = _records(con, VANISHED_SQL, params)
    digest.reader_gpus = reader_gpus(settings, digest.workloads)
    digest.gpu_prices = _shown_gpu_prices(digest)
    digest.dashboard_url = settings.daemon.public_url
    return digest


def reader_gpus(settings: Settings, workloads: list[dict[str, Any]]) -> list[str]:
    """The GPUs this reader cares about: configured, else those of their workloads' options
    and alert rules, in that order."""
    if settings.digest.gpus:
        return list(settings.digest.gpus)
    found = [r["gpu_model"] for r in workloads] + [
        r.gpu_model for r in settings.alerts.rules if r.gpu_model
    ]
    return list(dict.fromkeys(found))


def _shown_gpu_prices(digest: Digest) -> list[dict[str, Any]]:
    """The reader's GPUs first, then the biggest week-over-week changes (in week one: the
    cheapest), at most `GPU_ROWS` rows: never the whole market."""
    mine = [r for r in digest.gpu_prices if r["gpu_model"] in digest.reader_gpus]
    others = [r for r in digest.gpu_prices if r["gpu_model"] not in digest.reader_gpus]
    moved = sorted((r for r in others if r["change"]), key=lambda r: -abs(r["change"]))
    rest = moved or sorted(others, key=lambda r: r["now_price"])
    order = {gpu: i for i, gpu in enumerate(digest.reader_gpus)}
    mine.sort(key=lambda r: (order[r["gpu_model"]], r["pricing"]))
    return (mine + rest)[: max(GPU_ROWS, len(mine))]


def headline(digest: Digest) -> str:
    """What changed, for the subject line: the reader's GPU whose cheapest price moved most,
    else any GPU's, else the biggest single offer move."""
    if digest.first_week:
        return (
            f"First GPU price digest: {counted(digest.market.get('offers', 0), 'offer')} from "
            f"{counted(digest.market.get('providers', 0), 'provider')}"
        )
    moved = [r for r in digest.gpu_prices if r["change"]]
    mine = [r for r in moved if r["gpu_model"] in digest.reader_gpus]
    if moved:
        top = max(mine or moved, key=lambda r: abs(r["change"]))
        return (
            f"{top['gpu_model']} {_kind(top['pricing'])} {_pct(top['change'])} to "
            f"{money(top['now_price'])}/GPU-h ({top['provider']}, {top['region']})"
        )
    if digest.movers:
        m = digest.movers[0]
        return (
            f"{m['gpu_model'] or m['instance_type']} at {m['provider']} {m['region']} "
            f"{_pct(m['change'])} to {money(m['now'])}/h"
            + (" (derived)" if m["price_origin"] == "derived" else "")
        )
    mine = [r for r in digest.gpu_prices if r["gpu_model"] in digest.reader_gpus]
    if mine:
        cheapest = min(mine, key=lambda r: r["now_price"])
        return (
            f"No price changes; {cheapest['gpu_model']} from {money(cheapest['now_price'])}/GPU-h "
            f"({cheapest['provider']}, {cheapest['region']})"
        )
    return "No price changes"


def with_health(digest: Digest, settings: Settings, store: Store) -> Digest:
    report = health.check(settings, store)
    digest.health = [
        dict(zip(report.providers.columns, r, strict=True)) for r in report.providers.rows
    ]
    digest.healthy = report.healthy
    digest.problems = list(report.problems)
    return digest


def _change(now: float | None, before: float | None) -> float | None:
    if not now or not before:
        return None
    # a week-ago price converted at today's rate can differ from today's in the last bits only
    return 0.0 if abs(now - before) < 1e-9 else (now - before) / before


def sparkline(values: list[float | None]) -> str:
    """Eight weekly minima as block characters (oldest first); a gap where there was no price."""
    known = [v for v in values if v is not None]
    if not known:
        return ""
    low, high = min(known), max(known)
    span = (high - low) or 1.0
    return "".join(" " if v is None else SPARK[round((v - low) / span * 7)] for v in values)


def render(digest: Digest, chart: bool = False) -> Message:
    from priceadvisor.notify.render import render as template  # noqa: PLC0415 - Jinja on demand

    charted = chart_rows(digest)
    images = {price_chart_cid: price_chart(charted)} if chart and charted else {}
    context = {"d": digest, "chart_cid": price_chart_cid if images else None}
    subject = (
        f"{headline(digest)} · GPU prices {digest.week_ago:%d %b} – {digest.generated_at:%d %b}"
    )
    return Message(
        key=digest.key,
        subject=subject,
        text=template("digest.txt.j2", subject=subject, **context),
        html=template("digest.html.j2", subject=subject, **context),
        slack=slack_payloads(digest, subject),
        images=images,
    )


def chart_rows(digest: Digest) -> list[dict[str, Any]]:
    """The reader's GPUs (spot and on-demand) with at least two weekly points: a chart appears
    only when there is history to draw."""
    drawable = [r for r in digest.gpu_prices if sum(v is not None for v in r["series"]) >= 2]
    mine = [r for r in drawable if r["gpu_model"] in digest.reader_gpus]
    return mine or drawable


def render_for(digest: Digest, settings: Settings) -> Message:
    """Render with the PNG chart when email asks for it and matplotlib is there."""
    wanted = settings.notify.email is not None and settings.notify.email.chart
    try:
        return render(digest, chart=wanted)
    except ChartUnavailable as exc:
        log.warning("digest without chart: %s", exc)
        return render(digest)


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:+.1%}"


def slack_payloads(digest: Digest, subject: str) -> list[dict[str, Any]]:
    """A compact summary: no columns to align in a proportional font, every price with who and
    where, at most a handful of lines per section; the full tables are in the email."""
    content: list[dict[str, Any]] = [blocks.header(subject)]
    for text in _slack_lines(digest):  # a section over Slack's limit goes on in the next one
        content += blocks.sections(text.split("\n"))
    return blocks.paginate(content, subject)


def _slack_lines(digest: Digest) -> list[str]:
    e = blocks.escape
    lines = []
    if digest.first_week:
        lines.append(
            f"First week of data: {counted(digest.market.get('offers', 0), 'offer')} of "
            f"{counted(digest.market.get('gpu_models', 0), 'GPU model')} from "
            f"{counted(digest.market.get('providers', 0), 'provider')}. "
            "Changes appear from next week."
        )
    best = [r for r in digest.workloads if r["rank"] == 1]
    if best:
        lines.append("*Your workloads*\n" + "\n".join(_slack_workload(r) for r in best))
    if digest.api_comparisons:
        lines.append(
            "*Self-host or call an API*\n" + "\n".join(e(x) for x in digest.api_comparisons)
        )
    mine = [r for r in digest.gpu_prices if r["gpu_model"] in digest.reader_gpus][:SLACK_ROWS]
    if mine:
        lines.append("*Your GPUs*\n" + "\n".join(_slack_price(r, digest) for r in mine))
    if digest.movers:
        lines.append(
            "*Top movers*\n"
            + "\n".join(
                f"{_pct(r['change'])} {e(r['provider'])} {e(r['region'])} "
                f"`{e(r['instance_type'])}` {_kind(r['pricing'])}"
                f"{' (derived)' if r['price_origin'] == 'derived' else ''}: "
                f"{money(r['before'])} → {money(r['now'])}/h"
                for r in digest.movers[:SLACK_ROWS]
            )
        )
    if digest.new_offers or digest.vanished:
        lines.append(_slack_new_gone(digest))
    # the health report's "n/m (p%)": a provider with none listed but not rentable is not one
    unrentable = [
        h
        for h in digest.health
        if h.get("not_rentable") not in (None, "unknown")
        and not str(h["not_rentable"]).startswith("0/")
    ]
    if unrentable:
        lines.append(
            "*Listed but not rentable*: "
            + ", ".join(f"{e(str(h['provider']))} {e(str(h['not_rentable']))}" for h in unrentable)
        )
    if not digest.healthy:  # what the health report counts as problems, nothing else
        lines.append("*Data health*: " + ", ".join(e(p) for p in digest.problems))
    if digest.dashboard_url:
        lines.append(f"<{blocks.escape(digest.dashboard_url)}|Open the dashboard>")
    return lines


SLACK_ROWS = 5


def _kind(pricing: str) -> str:
    return "spot" if pricing == "spot" else "on-demand"


def _slack_workload(r: dict[str, Any]) -> str:
    e = blocks.escape
    unit = "per run" if r["task"] not in ("serve", "batch") else "per 1M output tokens"
    measure = (  # as the email gives it: a run of minutes is not "0.0 h"
        f"{figure(r['hours'])} h" if r["hours"] is not None else f"{r['tokens_per_s']:,.0f} tok/s"
    )
    market = " (marketplace, no SLA)" if r["marketplace"] else ""
    return (
        f"{e(r['workload'])}: {money(r['cost'])} {unit}{e(list_vs_effective(r))} "
        f"on {e(r['provider'])} {e(r['region'])}"
        f"{market}, {r['gpu_count']:g}× {e(r['gpu_model'])} {_kind(r['pricing'])}, "
        f"{e(r['binding'])}-bound, {measure} ({e(_source(r))})"
    )


def _source(r: dict[str, Any]) -> str:
    """Where a digest line's price came from: published or derived, and when it was fetched."""
    fetched = r["fetched_at"]
    when = f", fetched {fetched:%Y-%m-%d %H:%M} UTC" if fetched is not None else ""
    return f"{r['price_origin'] or 'published'}{when}"


def _slack_price(r: dict[str, Any], digest: Digest) -> str:
    e = blocks.escape
    name = e(r["gpu_model"])
    if digest.dashboard_url:
        name = f"<{e(digest.dashboard_url.rstrip('/'))}/gpu/{e(r['gpu_model'])}|{name}>"
    change = "" if digest.first_week else f" ({_pct(r['change'])} w/w)"
    return (
        f"{name} {_kind(r['pricing'])}: {money(r['now_price'])}/GPU-h at "
        f"{e(r['provider'] or '?')} {e(r['region'] or '')}{change}"
    )


def _slack_new_gone(digest: Digest) -> str:
    e = blocks.escape
    new = [
        f"new: {e(r['provider'])} {e(r['gpu_model'])}, {r['offers']} offer(s) from "
        f"{money(r['cheapest'])}/GPU-h in {e(', '.join(r['regions']))}"
        for r in digest.new_offers[:SLACK_ROWS]
    ]
    gone = [
        f"gone: {e(r['provider'])} {e(r['gpu_model'])}, {r['offers']} offer(s) in "
        f"{e(', '.join(r['regions']))}"
        for r in digest.vanished[:SLACK_ROWS]
    ]
    return "*New and vanished*\n" + "\n".join(new + gone)
