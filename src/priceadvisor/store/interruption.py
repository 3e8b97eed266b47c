"""Spot interruption rates measured from the project's own history, per provider and GPU model.

Only AWS publishes an interruption figure (its Spot Instance Advisor). For every other spot
market the rate is measured here, where the history holds enough of it:

- a *sighting* is a complete (`ok`) fetch of the provider that saw a spot offer rentable
  (`available` not false) for the GPU model;
- a sighting is *interrupted* when, within an hour after it, that offer's interval ended in a
  loss: the offer vanished (no interval follows, or the next one starts later: it was gone in
  between), the source said it was no longer rentable, or its price rose (a bid at the old
  price is outbid);
- the rate is interrupted sightings / sightings, over the MEASURE_DAYS before now; a sighting
  less than an hour old is not judged yet.

A rate is used only where its sightings span at least MIN_SPAN_DAYS and number at least
MIN_SIGHTINGS; elsewhere advice falls back to the assumed rate. Limits: a listing that vanishes
may simply have been rented by someone else (which interrupts nobody), and a fetch interval
longer than an hour sees several changes as one; so the figure is an upper bound on what a
running instance sees, at the resolution of the provider's fetch interval (docs/sql.md).
"""

from __future__ import annotations

import datetime as dt

import duckdb

from priceadvisor.store.literals import inline

MEASURE_DAYS = 30
MIN_SPAN_DAYS = 7
MIN_SIGHTINGS = 100
LOSS_WINDOW_HOURS = 1
# Providers with a published interruption figure: theirs is used, never a measured one.
PUBLISHED = ("aws",)

# The complete fetches a sighting can be judged at (old enough for its hour to have passed).
_JUDGED_RUNS = f"""
    SELECT provider, observed_at AS seen_at FROM core.fetch_runs
    WHERE status = 'ok' AND observed_at > $since
      AND observed_at <= $now - INTERVAL {LOSS_WINDOW_HOURS} HOUR
"""
# Providers whose judged fetches span MIN_SPAN_DAYS: a rate's sightings are some of its
# provider's fetches, so their span is never longer, and no other provider's rate is usable.
# The measure (a window over every spot interval, ~10-16 ms at 50k offers) runs for these
# alone: a history shorter than MIN_SPAN_DAYS (a new install, every benchmark) costs ~1 ms.
SPANNING_SQL = f"""
SELECT provider FROM ({_JUDGED_RUNS})
WHERE NOT list_contains($published, provider)
GROUP BY provider HAVING epoch(max(seen_at) - min(seen_at)) / 86400 >= {MIN_SPAN_DAYS}
ORDER BY provider
"""
MEASURED_SQL = f"""
CREATE OR REPLACE TEMP TABLE _measured_interruption AS
WITH runs AS (
    SELECT * FROM ({_JUDGED_RUNS}) WHERE list_contains($providers, provider)
),
spot AS (
    SELECT provider, gpu_model, available, price_hour_usd, valid_from, valid_to, last_seen,
        lead(valid_from) OVER w AS next_from, lead(available) OVER w AS next_available,
        lead(price_hour_usd) OVER w AS next_price
    FROM core.price_intervals
    WHERE pricing = 'spot' AND gpu_model IS NOT NULL AND list_contains($providers, provider)
      AND coalesce(valid_to, last_seen) > $since
    WINDOW w AS (PARTITION BY provider, region, zone, instance_type ORDER BY valid_from)
),
rentable AS (
    SELECT *, valid_to IS NOT NULL AND (
            next_from IS NULL OR next_from > valid_to OR next_available = false
            OR next_price > price_hour_usd) AS lost
    FROM spot WHERE available IS NOT FALSE
),
sightings AS (
    SELECT s.provider, s.gpu_model, r.seen_at,
        s.lost AND s.valid_to <= r.seen_at + INTERVAL {LOSS_WINDOW_HOURS} HOUR AS interrupted
    FROM rentable AS s JOIN runs AS r
        ON r.provider = s.provider AND r.seen_at >= s.valid_from AND r.seen_at <= s.last_seen
)
SELECT provider, gpu_model, count(*) AS sightings,
    count(*) FILTER (WHERE interrupted) AS interrupted,
    count(*) FILTER (WHERE interrupted) / count(*) AS rate,
    epoch(max(seen_at) - min(seen_at)) / 86400 AS span_days
FROM sightings GROUP BY provider, gpu_model
"""


EMPTY_SQL = """
CREATE OR REPLACE TEMP TABLE _measured_interruption (provider VARCHAR, gpu_model VARCHAR,
    sightings BIGINT, interrupted BIGINT, rate DOUBLE, span_days DOUBLE)
"""


def measure(con: duckdb.DuckDBPyConnection, now: dt.datetime) -> None:
    """Every (provider, GPU model) with spot sightings whose provider's fetches span
    MIN_SPAN_DAYS (no other rate can be usable), as the temp table
    _measured_interruption(provider, gpu_model, sightings, interrupted, rate, span_days);
    `usable` (the SQL condition USABLE) says which rates are enough to use."""
    since = now - dt.timedelta(days=MEASURE_DAYS)
    window = {"since": since, "now": now}
    spanning = con.execute(inline(SPANNING_SQL, {**window, "published": PUBLISHED})).fetchall()
    if not spanning:
        con.execute(EMPTY_SQL)
        return
    providers = [str(provider) for (provider,) in spanning]
    con.execute(inline(MEASURED_SQL, {**window, "providers": providers}))


# Whether a measured row (aliased m) holds enough history to be used.
USABLE = f"(m.sightings >= {MIN_SIGHTINGS} AND m.span_days >= {MIN_SPAN_DAYS})"


def measured_rates(
    con: duckdb.DuckDBPyConnection, now: dt.datetime
) -> dict[tuple[str, str], float]:
    """The usable measured rates, by (provider, GPU model)."""
    measure(con, now)
    rows = con.execute(
        f"SELECT provider, gpu_model, rate FROM _measured_interruption AS m WHERE {USABLE}"
    ).fetchall()
    return {(provider, gpu): float(rate) for provider, gpu, rate in rows}


def rate_sql(offer: str, measured: str, default: float) -> str:
    """A spot offer's interruption rate (NULL for any other pricing): the published one the
    offer carries (AWS's), else the usable measured one (the `measured` row, joined on USABLE),
    else `default`."""
    return (
        f"CASE WHEN {offer}.pricing = 'spot' THEN coalesce(\n"
        f"                    {offer}.interruption_rate, {measured}.rate, {default}) END"
    )


def source_sql(offer: str, measured: str) -> str:
    """Where rate_sql's rate comes from: 'aws-advisor', 'measured' or 'assumed' (NULL off spot)."""
    return (
        f"CASE WHEN {offer}.pricing <> 'spot' THEN NULL\n"
        f"                 WHEN {offer}.interruption_rate IS NOT NULL THEN 'aws-advisor'\n"
        f"                 WHEN {measured}.rate IS NOT NULL THEN 'measured'\n"
        "                 ELSE 'assumed' END"
    )
