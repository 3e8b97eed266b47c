"""The digest's cheapest prices are prices of now: an offer its provider has not confirmed for
longer than the exclusion limit (a week: its fetches fail) is left out of "cheapest now", as
advice and alerts leave it out, and at each weekly point alike."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from priceadvisor.config import Settings
from priceadvisor.manifest import manifest
from priceadvisor.notify import digest
from priceadvisor.records import FetchResult, RawQuote, RunStatus, utcnow
from priceadvisor.store import connections
from priceadvisor.store.freshness import EXCLUDED_AFTER_HOURS
from priceadvisor.store.ingest import ingest
from priceadvisor.store.runs import start_run
from tests.notify.test_digest_basis import h100


def fetched(db: Path, provider: str, quotes: list[RawQuote], at: dt.datetime) -> None:
    """A run of `provider` observed at `at` (its last successful fetch)."""
    with connections.writer(db) as con:
        run_id = start_run(con, provider)
        result = FetchResult(provider, RunStatus.OK, quotes, finished_at=at)
        ingest(con, run_id, result, manifest(provider))


def test_a_price_not_seen_for_over_a_week_is_not_the_cheapest_now(db_path: Path) -> None:
    now = utcnow()
    silent = now - dt.timedelta(hours=EXCLUDED_AFTER_HOURS + 24)  # its fetches fail since
    fetched(db_path, "lambda", [h100("us-east-1", 1.29)], silent)
    fetched(db_path, "runpod", [h100("secure", 2.69)], now - dt.timedelta(days=14))
    fetched(db_path, "runpod", [h100("secure", 2.69)], now)
    with connections.reader(db_path) as con:
        built = digest.build(con, Settings(), now)
        last_seen = con.execute("SELECT last_seen FROM offers WHERE provider = 'lambda'")
        assert last_seen.fetchone() == (silent,)
    [row] = built.gpu_prices
    assert (row["provider"], row["now_price"], row["offers"]) == ("runpod", 2.69, 1)
    # a week ago Lambda's price had been seen a day before: then it was the cheapest
    assert row["week_ago"] == 1.29
