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
from priceadvisor.notify import Message
from priceadvisor.notify import slack as blocks
from priceadvisor.notify.chart import CID as price_chart_cid
from priceadvisor.notify.chart import ChartUnavailable, price_chart

log = logging.getLogger(__name__)

WEEKS = 8
SPARK = "▁▂▃▄▅▆▇█"

GPU_PRICES_SQL = f"""
WITH points AS (
    SELECT w, $now - INTERVAL (7 * w) DAY AS at FROM range({WEEKS}) AS r(w)
),
weekly AS (
    SELECT h.gpu_model, h.pricing, p.w, min(h.price_gpu_hour_usd) AS price
    FROM points AS p
    JOIN price_history AS h
      ON h.valid_from <= p.at AND coalesce(h.valid_to, 'infinity'::TIMESTAMP) > p.at
    WHERE h.gpu_model IS NOT NULL AND h.price_gpu_hour_usd IS NOT NULL AND h.pricing <> 'market'
      AND h.price_origin = 'published'
    GROUP BY ALL
)
SELECT gpu_model, pricing,
    min(price) FILTER (WHERE w = 0) AS now_price,
    min(price) FILTER (WHERE w = 1) AS week_ago,
    list({{'w': w, 'price': price}}) AS series
FROM weekly GROUP BY ALL
HAVING now_price IS NOT NULL
ORDER BY gpu_model, pricing
"""

MOVERS_SQL = """
WITH earlier AS (
    SELECT provider, region, zone, instance_type, pricing, price_hour_usd AS before
    FROM price_history
    WHERE valid_from <= $week_ago AND coalesce(valid_to, 'infinity'::TIMESTAMP) > $week_ago
)
SELECT o.provider, o.region, o.instance_type, o.gpu_model, o.pricing, o.price_origin, t.before,
    o.price_hour_usd AS now, (o.price_hour_usd - t.before) / t.before AS change
FROM offers AS o JOIN earlier AS t USING (provider, region, instance_type, pricing)
WHERE coalesce(o.zone, '') = coalesce(t.zone, '') AND o.price_hour_usd <> t.before
  AND o.pricing <> 'market'
ORDER BY abs(change) DESC, o.provider, o.region, o.instance_type LIMIT $limit
"""

NEW_SQL = """
SELECT provider, gpu_model, count(*) AS offers, min(price_gpu_hour_usd) AS cheapest,
    list(DISTINCT region ORDER BY region)[1:4] AS regions
FROM offers WHERE first_seen > $week_ago AND gpu_model IS NOT NULL AND pricing <> 'market'
  AND price_origin = 'published'
GROUP BY ALL ORDER BY offers DESC, provider, gpu_model LIMIT $limit
"""

VANISHED_SQL = """
SELECT h.provider, h.gpu_model, count(*) AS offers,
    list(DISTINCT h.region ORDER BY h.region)[1:4] AS regions
FROM price_history AS h
WHERE h.valid_to > $week_ago AND h.gpu_model IS NOT NULL AND NOT EXISTS (
    SELECT 1 FROM offers o WHERE o.provider = h.provider AND o.region = h.region
      AND o.instance_type = h.instance_type AND o.pricing = h.pricing)
GROUP BY ALL ORDER BY offers DESC, h.provider, h.gpu_model LIMIT $limit
"""

BEST_SQL = """
SELECT a.workload, a.task, a.rank, a.provider, a.region, a.instance_type, a.gpu_model,
    a.gpu_count, a.pricing, a.price_hour_usd, coalesce(a.cost_usd, a.usd_per_mtok) AS cost,
    a.binding, h.price_hour_usd AS price_week_ago
FROM advice AS a
LEFT JOIN price_history AS h
  ON h.provider = a.provider AND h.region = a.region AND h.instance_type = a.instance_type
  AND h.pricing = a.pricing AND h.valid_from <= $week_ago
  AND coalesce(h.valid_to, 'infinity'::TIMESTAMP) > $week_ago
WHERE a.rank <= $top
ORDER BY a.workload, a.rank
"""


@dataclass(slots=True)
class Digest:
    generated_at: dt.datetime
    week_ago: dt.datetime
    gpu_prices: list[dict[str, Any]] = field(default_factory=list)
    movers: list[dict[str, Any]] = field(default_factory=list)
    new_offers: list[dict[str, Any]] = field(default_factory=list)
    vanished: list[dict[str, Any]] = field(default_factory=list)
    workloads: list[dict[str, Any]] = field(default_factory=list)
    health: list[dict[str, Any]] = field(default_factory=list)
    healthy: bool = True

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
    digest.new_offers = _records(con, NEW_SQL, params)
    digest.vanished = _records(con, VANISHED_SQL, params)
    digest.workloads = _records(con, BEST_SQL, params)
    for row in digest.workloads:
        row["change"] = _change(row["price_hour_usd"], row["price_week_ago"])
    return digest


def with_health(digest: Digest, settings: Settings) -> Digest:
    report = health.check(settings)
    digest.health = [
        dict(zip(report.providers.columns, r, strict=True)) for r in report.providers.rows
    ]
    digest.healthy = report.healthy
    return digest


def _change(now: float | None, before: float | None) -> float | None:
    return None if not now or not before else (now - before) / before


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

    images = {price_chart_cid: price_chart(digest.gpu_prices)} if chart else {}
    context = {"d": digest, "chart_cid": price_chart_cid if images else None}
    subject = f"GPU prices, week of {digest.week_ago:%d %b} – {digest.generated_at:%d %b %Y}"
    return Message(
        key=digest.key,
        subject=subject,
        text=template("digest.txt.j2", subject=subject, **context),
        html=template("digest.html.j2", subject=subject, **context),
        slack=slack_payloads(digest, subject),
        images=images,
    )


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
    e = blocks.escape
    content: list[dict[str, Any]] = [blocks.header(subject)]
    if digest.workloads:
        content.append(blocks.header("Your workloads: best options now"))
        content += blocks.sections(
            [
                f"*{e(r['workload'])}* #{r['rank']}: {e(r['provider'])} {e(r['region'])} "
                f"`{e(r['instance_type'])}` {e(r['pricing'])} — ${r['cost']:,.4g} "
                f"({'per run' if r['task'] not in ('serve', 'batch') else 'per 1M tokens'}), "
                f"price {_pct(r['change'])} w/w"
                for r in digest.workloads
            ]
        )
    content.append(blocks.header("Cheapest $/GPU-hour"))
    content += blocks.sections(
        [
            f"`{r['spark']}` *{e(r['gpu_model'])}* {e(r['pricing'])}: ${r['now_price']:.3f} "
            f"({_pct(r['change'])} w/w)"
            for r in digest.gpu_prices
        ]
    )
    if digest.movers:
        content.append(blocks.header("Biggest movers"))
        content += blocks.sections(
            [
                f"{e(r['provider'])} {e(r['region'])} `{e(r['instance_type'])}` {e(r['pricing'])}"
                f"{' (derived)' if r['price_origin'] == 'derived' else ''}: "
                f"${r['before']:.2f} → ${r['now']:.2f} ({_pct(r['change'])})"
                for r in digest.movers
            ]
        )
    if digest.new_offers or digest.vanished:
        content.append(blocks.header("New and vanished offers"))
        content += blocks.sections(
            [
                f"new: {e(r['provider'])} {e(r['gpu_model'])} ×{r['offers']}"
                for r in digest.new_offers
            ]
            + [
                f"gone: {e(r['provider'])} {e(r['gpu_model'])} ×{r['offers']}"
                for r in digest.vanished
            ]
        )
    content.append(
        blocks.section(
            "Data health: "
            + (
                "all providers fresh"
                if digest.healthy
                else ", ".join(
                    f"{e(str(h['provider']))}: {e(str(h['state']))}"
                    for h in digest.health
                    if h["state"] not in ("fresh", "disabled")
                )
            )
        )
    )
    return blocks.paginate(content, subject)
