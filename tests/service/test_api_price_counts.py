"""An LLM API listing's fetch counts (store.api_prices, as fetch_runs records them): a model
listed twice is one duplicate, not also a rejection.

(Here because this audit may add tests only under tests/service; it belongs beside the other
store tests.)"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from priceadvisor.manifest import manifest
from priceadvisor.records import ApiPrice, FetchResult, RunStatus, utcnow
from priceadvisor.store import connections, runs
from priceadvisor.store.ingest import ingest


def _price(model: str, output: str) -> ApiPrice:
    per_token = Decimal(output) / 1_000_000
    return ApiPrice(model, model, per_token / 4, per_token)


def test_a_model_listed_twice_is_a_duplicate_not_a_rejection(db_path: Path) -> None:
    listing = [
        _price("meta-llama/llama-3.1-8b-instruct", "0.05"),
        _price("meta-llama/llama-3.1-70b-instruct", "0.75"),
        _price("meta-llama/llama-3.1-70b-instruct", "0.75"),  # listed twice
        ApiPrice("openrouter/auto", "Auto Router", None, None),  # the router's sentinel
    ]
    result = FetchResult("openrouter", RunStatus.OK, api_prices=listing, finished_at=utcnow())
    with connections.writer(db_path) as con:
        [run_id] = runs.start_runs(con, ["openrouter"], "live")
        ingest(con, run_id, result, manifest("openrouter"))
        counts = con.execute(
            "SELECT offers_seen, offers_rejected, offers_duplicate FROM fetch_runs"
        ).fetchone()
    assert counts == (2, 1, 1)
