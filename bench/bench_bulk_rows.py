"""Rows from Python into DuckDB: executemany (the old way) against Arrow columns (the way
store.api_prices and store.http_cache write now), in the same run on the same data.

Usage: python bench/bench_bulk_rows.py [--models 300] [--pages 30] [--advice 60] [--repeat 5]

- API prices: `--models` OpenRouter-like prices (11 values a row) into the temporary table a
  fetch merges from (store.api_prices._apply), in a migrated DuckDB file.
- HTTP validators: `--pages` cached pages of 20 kB bodies (6 values a row;
  store.http_cache.save_validators as it was and as it is).
- Advice ranked from Python (`PriceData.advice(rank=True)`): `--advice` rows with the columns
  and types of core.advice, into the result table (api.advice._insert).

Each is timed `--repeat` times; the median is reported. DuckDB probes every Python parameter of
executemany for pandas types, which is what the Arrow path avoids.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))

import duckdb

from priceadvisor.api import advice
from priceadvisor.records import ApiPrice, CachedBody, utcnow
from priceadvisor.store import api_prices, connections, transactions
from priceadvisor.store.http_cache import StoredValidatorCache, save_validators


def _median_ms(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def _prices(n: int) -> list[tuple[object, ...]]:
    prices = [
        ApiPrice(
            f"vendor/model-{i}",
            f"Model {i}",
            Decimal(i + 1) / 10**8,
            Decimal(i + 3) / 10**8,
            context_length=8192 * (1 + i % 16),
        )
        for i in range(n)
    ]
    return [api_prices._row("openrouter", p, 1) for p in prices]


def bench_api_prices(db: Path, n: int, repeat: int) -> tuple[float, float]:
    rows = _prices(n)
    marks = ", ".join("?" * 11)
    with connections.writer(db) as con:

        def old() -> None:
            con.execute("CREATE OR REPLACE TEMP TABLE _old AS FROM core.api_prices LIMIT 0")
            con.execute("ALTER TABLE _old DROP valid_from")
            con.execute("ALTER TABLE _old DROP valid_to")
            con.executemany(f"INSERT INTO _old VALUES ({marks})", rows)

        def new() -> None:
            con.execute("BEGIN")
            api_prices._apply(con, "openrouter", rows, utcnow())
            con.execute("ROLLBACK")

        return _median_ms(old, repeat), _median_ms(new, repeat)


def bench_validators(db: Path, pages: int, repeat: int) -> tuple[float, float]:
    body = os.urandom(20_000)  # Vast.ai's pages: ~19 kB each (26 requests, 501 kB)
    entries = {f"https://x/page/{i}": CachedBody(body, f'"e{i}"', None) for i in range(pages)}
    with connections.writer(db) as con:

        def old() -> None:  # save_validators as it was
            rows = [
                ("vast", url, b.etag, b.last_modified, zlib.compress(b.content), utcnow())
                for url, b in sorted(entries.items())
            ]
            con.execute("BEGIN")
            con.execute("CREATE OR REPLACE TEMP TABLE _old AS FROM core.http_validators LIMIT 0")
            con.executemany("INSERT INTO _old VALUES (?, ?, ?, ?, ?, ?)", rows)
            transactions.replace_rows(con, "core.http_validators", ["provider", "url"], "_old")
            con.execute("ROLLBACK")

        def new() -> None:
            cache = StoredValidatorCache("vast", dict(entries), set(entries))
            con.execute("BEGIN")
            save_validators(con, cache)
            con.execute("ROLLBACK")

        return _median_ms(old, repeat), _median_ms(new, repeat)


_SAMPLE = {
    "VARCHAR": "vast",
    "DOUBLE": 1.25,
    "INTEGER": 3,
    "BIGINT": 7,
    "BOOLEAN": True,
    "TIMESTAMP": dt.datetime(2026, 11, 27, 10, 0, 0, 123456),
    "VARCHAR[]": ["storage", "egress"],
}


def bench_advice(db: Path, n: int, repeat: int) -> tuple[float, float]:
    with connections.writer(db) as con:
        types = [t for _, t, *_ in con.execute("DESCRIBE core.advice").fetchall()]
    rows = [tuple(_SAMPLE[t] for t in types) for _ in range(n)]
    declared = ", ".join(f"c{i} {t}" for i, t in enumerate(types))
    scratch = duckdb.connect()

    def table() -> None:
        scratch.execute(f"CREATE OR REPLACE TABLE ranked ({declared})")

    def old() -> None:
        table()
        scratch.executemany(f"INSERT INTO ranked VALUES ({', '.join('?' * len(types))})", rows)

    def new() -> None:
        table()
        advice._insert(scratch, types, rows)

    return _median_ms(old, repeat), _median_ms(new, repeat)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", type=int, default=300)
    parser.add_argument("--pages", type=int, default=30)
    parser.add_argument("--advice", type=int, default=60)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "bench.duckdb"
        old, new = bench_api_prices(db, args.models, args.repeat)
        print(
            f"API prices, {args.models} rows: executemany {old:.1f} ms, Arrow {new:.1f} ms "
            "(the whole merge)"
        )
        old, new = bench_validators(db, args.pages, args.repeat)
        print(
            f"validators, {args.pages} rows: executemany {old:.1f} ms, Arrow {new:.1f} ms "
            "(each: compression and the merge)"
        )
        old, new = bench_advice(db, args.advice, args.repeat)
        print(f"advice, {args.advice} rows: executemany {old:.1f} ms, Arrow {new:.1f} ms")


if __name__ == "__main__":
    main()
