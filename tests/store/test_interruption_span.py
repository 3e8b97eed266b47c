"""The measured interruption rates run only for providers whose fetches span MIN_SPAN_DAYS:
on random histories their usable rates are those of the measure over every provider (the
statement as it was before that gate, kept here as the definition), row for row."""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

import duckdb

from priceadvisor.manifest import manifest
from priceadvisor.records import FetchResult, RawQuote, RunStatus, utcnow
from priceadvisor.store import connections as store
from priceadvisor.store import interruption
from priceadvisor.store.ingest import ingest
from priceadvisor.store.runs import start_run

# Every (provider, GPU model) with spot sightings, whatever its provider's span: the
# statement before the gate.
EVERY_PROVIDER_SQL = f"""
WITH runs AS (
    SELECT provider, observed_at AS seen_at FROM core.fetch_runs
    WHERE status = 'ok' AND observed_at > $since
      AND observed_at <= $now - INTERVAL {interruption.LOSS_WINDOW_HOURS} HOUR
),
spot AS (
    SELECT provider, gpu_model, available, price_hour_usd, valid_from, valid_to, last_seen,
        lead(valid_from) OVER w AS next_from, lead(available) OVER w AS next_available,
        lead(price_hour_usd) OVER w AS next_price
    FROM core.price_intervals
    WHERE pricing = 'spot' AND gpu_model IS NOT NULL AND NOT list_contains($published, provider)
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
        s.lost AND s.valid_to <= r.seen_at + INTERVAL {interruption.LOSS_WINDOW_HOURS} HOUR
            AS interrupted
    FROM rentable AS s JOIN runs AS r
        ON r.provider = s.provider AND r.seen_at >= s.valid_from AND r.seen_at <= s.last_seen
)
SELECT provider, gpu_model, count(*) AS sightings,
    count(*) FILTER (WHERE interrupted) AS interrupted,
    count(*) FILTER (WHERE interrupted) / count(*) AS rate,
    epoch(max(seen_at) - min(seen_at)) / 86400 AS span_days
FROM sightings GROUP BY provider, gpu_model
"""
ROWS = "SELECT * FROM ({}) AS m {} ORDER BY provider, gpu_model"


def quote(key: int, gpu: str, rng: random.Random) -> RawQuote:
    return RawQuote(
        region="US",
        instance_type=f"{gpu} x1 host{key}",
        pricing="spot",
        price=rng.choice([0.30, 0.40, 0.50]),
        gpu_name_raw=gpu,
        gpu_count=1.0,
        available=rng.random() > 0.1,
        source_url="https://vast.example/bundles",
    )


def history(con: duckdb.DuckDBPyConnection, now: dt.datetime, rng: random.Random) -> None:
    """Daily-ish fetches of ~30 spot offers of two GPU models over a random span (2-12
    days); offers vanish, come back, change price and availability between fetches."""
    days = rng.uniform(2, 12)
    fetches = rng.randint(6, 14)
    times = sorted(now - dt.timedelta(days=rng.uniform(0, days)) for _ in range(fetches))
    for at in times:
        keys = [k for k in range(30) if rng.random() > 0.15]
        quotes = [quote(k, "RTX 4090" if k % 3 else "RTX 3090", rng) for k in keys]
        run_id = start_run(con, "vast")
        ingest(
            con, run_id, FetchResult("vast", RunStatus.OK, quotes, finished_at=at), manifest("vast")
        )


def compare(con: duckdb.DuckDBPyConnection, now: dt.datetime) -> tuple[int, int]:
    since = now - dt.timedelta(days=interruption.MEASURE_DAYS)
    window = {"since": since, "now": now, "published": list(interruption.PUBLISHED)}
    interruption.measure(con, now)
    usable = f"WHERE {interruption.USABLE}"
    expected = con.execute(ROWS.format(EVERY_PROVIDER_SQL, usable), window).fetchall()
    got = con.execute(ROWS.format("SELECT * FROM _measured_interruption", usable)).fetchall()
    assert got == expected
    every = con.execute(ROWS.format(EVERY_PROVIDER_SQL, ""), window).fetchall()
    kept = con.execute(ROWS.format("SELECT * FROM _measured_interruption", "")).fetchall()
    # The gate keeps a provider's rows whole or drops them all.
    assert kept in ([], every)
    return len(expected), len(every)


def test_the_gate_keeps_every_usable_rate(tmp_path: Path) -> None:
    """Eight random histories, some with usable rates, some spanning too short a time for
    any (what the gate skips)."""
    seen = set()
    for seed in range(8):
        rng = random.Random(seed)
        now = utcnow()
        with store.writer(tmp_path / f"{seed}.duckdb") as con:
            history(con, now, rng)
            usable, every = compare(con, now)
        seen.add((usable > 0, every > 0))
    assert (True, True) in seen and (False, True) in seen
