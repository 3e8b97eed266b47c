from __future__ import annotations

import copy
import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pytest

from priceadvisor.collect.adapters.base import SourceFormatError
from priceadvisor.collect.adapters.openrouter import parse_listing
from priceadvisor.collect.fetch import run_cycle
from priceadvisor.manifest import manifest
from priceadvisor.records import FetchResult, RunStatus
from priceadvisor.resources import recordings_dir
from priceadvisor.service.stores import configured_store
from priceadvisor.store import runs
from priceadvisor.store.api_prices import model_id_for
from priceadvisor.store.ingest import ingest
from tests.localserver import local_settings, serving

LISTING: dict[str, Any] = json.loads(
    (recordings_dir() / "openrouter" / "models.json").read_text(encoding="utf-8")
)


def _by_id(document: Any) -> dict[str, Any]:
    return {p.api_model_id: p for p in parse_listing(document)}


def test_prices_are_exact_per_token_decimals_from_strings() -> None:
    prices = _by_id(LISTING)
    llama = prices["meta-llama/llama-3.1-70b-instruct"]
    assert llama.input_per_token == Decimal("0.00000052")
    assert llama.output_per_token == Decimal("0.00000075")
    assert llama.cached_input_per_token is None  # this capture predates input_cache_read
    assert prices["perplexity/llama-3.1-sonar-small-128k-online"].request_fee == Decimal("0.005")
    assert len(prices) == 14


def test_router_sentinel_and_free_tier_pass_through_as_stated() -> None:
    prices = _by_id(LISTING)
    assert prices["openrouter/auto"].input_per_token == Decimal(-1)
    free = prices["meta-llama/llama-3.1-8b-instruct:free"]
    assert (free.input_per_token, free.output_per_token) == (Decimal(0), Decimal(0))


def test_cached_input_price_is_read_when_the_listing_has_it() -> None:
    doc = copy.deepcopy(LISTING)
    doc["data"][3]["pricing"]["input_cache_read"] = "0.00000013"
    assert _by_id(doc)["meta-llama/llama-3.1-70b-instruct"].cached_input_per_token == Decimal(
        "0.00000013"
    )


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ([], "no 'data' list"),
        ({"data": {}}, "not a JSON list"),
        ({"data": []}, "empty"),
        ({"data": [{"id": "x/y"}]}, "lacks pricing"),
    ],
)
def test_bad_listings_are_format_errors(doc: Any, message: str) -> None:
    with pytest.raises(SourceFormatError, match=message):
        parse_listing(doc)


@pytest.mark.parametrize(
    ("api_id", "expected"),
    [
        ("meta-llama/llama-3.1-8b-instruct", "llama-3.1-8b"),
        ("meta-llama/llama-3.1-8b-instruct:free", "llama-3.1-8b"),
        ("google/gemma-2-27b-it", "gemma-2-27b"),
        ("meta-llama/llama-2-70b-chat", "llama-2-70b"),
        ("cognitivecomputations/dolphin-llama-3-70b", None),  # a fine-tune is not the base
        ("perplexity/llama-3.1-sonar-small-128k-online", None),
        ("meta-llama/llama-2-13b-chat", None),  # not in the catalog: never a nearest match
        ("openrouter/auto", None),
    ],
)
def test_api_ids_map_to_the_catalog_exactly_or_not_at_all(api_id: str, expected: str) -> None:
    assert model_id_for(api_id) == expected


def test_offline_fetch_counts_mapped_unmapped_and_rejected(db_path: Path) -> None:
    with serving("openrouter") as server:
        settings = local_settings(db_path, server)
        [summary] = run_cycle(
            settings, configured_store(settings), ["openrouter"], False, lambda *_: None
        )
    assert summary.status is RunStatus.OK
    assert (summary.offers_seen, summary.offers_rejected, summary.unmapped) == (13, 1, 7)
    con = duckdb.connect(str(db_path), read_only=True)
    rows = con.execute(
        "SELECT api_provider, model_id, input_usd_per_mtok, output_usd_per_mtok, is_free "
        "FROM api_prices WHERE api_model_id LIKE 'meta-llama/llama-3.1-8b%' ORDER BY 5"
    ).fetchall()
    router = con.execute("SELECT count(*) FROM api_prices WHERE api_model_id = 'openrouter/auto'")
    assert router.fetchone() == (0,)
    con.close()
    assert rows == [
        ("openrouter", "llama-3.1-8b", pytest.approx(0.06), pytest.approx(0.06), False),
        ("openrouter", "llama-3.1-8b", 0.0, 0.0, True),
    ]


def _ingest(db_path: Path, doc: Any, at: dt.datetime) -> None:
    store = configured_store(local_settings(db_path))
    result = FetchResult("openrouter", RunStatus.OK, api_prices=parse_listing(doc), finished_at=at)
    with store.writer() as con:
        [run_id] = runs.start_runs(con, ["openrouter"], "live")
        ingest(con, run_id, result, manifest("openrouter"))


def test_price_history_is_kept_like_gpu_prices(db_path: Path) -> None:
    first = dt.datetime(2026, 11, 1, 12)
    second = first + dt.timedelta(hours=6)
    _ingest(db_path, LISTING, first)
    changed = copy.deepcopy(LISTING)
    changed["data"][3]["pricing"]["completion"] = "0.0000006"  # llama-3.1-70b output drops
    del changed["data"][12]  # llama-2-70b leaves the listing
    _ingest(db_path, changed, second)
    con = duckdb.connect(str(db_path), read_only=True)
    history = con.execute(
        "SELECT api_model_id, output_usd_per_mtok, valid_from, valid_to FROM api_prices "
        "WHERE model_id IN ('llama-3.1-70b', 'llama-2-70b') ORDER BY api_model_id, valid_from"
    ).fetchall()
    current = con.execute("SELECT count(*) FROM api_prices WHERE valid_to IS NULL").fetchone()
    con.close()
    assert history == [
        ("meta-llama/llama-2-70b-chat", pytest.approx(0.81), first, second),
        ("meta-llama/llama-3.1-70b-instruct", pytest.approx(0.75), first, second),
        ("meta-llama/llama-3.1-70b-instruct", pytest.approx(0.6), second, None),
    ]
    assert current == (12,)


def test_unreadable_prices_are_rejected_and_counted_never_stored(db_path: Path) -> None:
    doc = copy.deepcopy(LISTING)
    doc["data"][4]["pricing"]["completion"] = "n/a"  # llama-3.1-8b
    del doc["data"][5]["pricing"]["prompt"]  # llama-3.1-405b
    _ingest(db_path, doc, dt.datetime(2026, 11, 1, 12))
    con = duckdb.connect(str(db_path), read_only=True)
    run = con.execute("SELECT status, offers_rejected, unmapped FROM fetch_runs").fetchone()
    stored = con.execute(
        "SELECT count(*) FROM api_prices WHERE api_model_id IN "
        "('meta-llama/llama-3.1-8b-instruct', 'meta-llama/llama-3.1-405b-instruct')"
    ).fetchone()
    con.close()
    assert run == ("ok", 3, 7)  # the router and the two unreadable prices
    assert stored == (0,)


def test_a_price_past_any_real_listing_is_rejected_and_counted(db_path: Path) -> None:
    doc = copy.deepcopy(LISTING)
    doc["data"][4]["pricing"]["completion"] = "0.01"  # llama-3.1-8b at $10,000 per 1M tokens
    _ingest(db_path, doc, dt.datetime(2026, 11, 1, 12))
    con = duckdb.connect(str(db_path), read_only=True)
    run = con.execute("SELECT status, offers_rejected FROM fetch_runs").fetchone()
    stored = con.execute(
        "SELECT count(*) FROM api_prices WHERE api_model_id = 'meta-llama/llama-3.1-8b-instruct'"
    ).fetchone()
    con.close()
    assert run == ("ok", 2) and stored == (0,)  # the router and the implausible price


def test_a_listing_of_mostly_free_models_fails_and_changes_nothing(db_path: Path) -> None:
    first = dt.datetime(2026, 11, 1, 12)
    _ingest(db_path, LISTING, first)
    doc = copy.deepcopy(LISTING)
    for model in doc["data"]:
        model["pricing"] |= {"prompt": "0", "completion": "0"}
    _ingest(db_path, doc, first + dt.timedelta(hours=6))
    con = duckdb.connect(str(db_path), read_only=True)
    status, error = con.execute(
        "SELECT status, error FROM fetch_runs ORDER BY run_id DESC LIMIT 1"
    ).fetchone() or (None, None)
    closed = con.execute("SELECT count(*) FROM api_prices WHERE valid_to IS NOT NULL").fetchone()
    con.close()
    assert status == "failed" and "14 of 14 API models are priced 0" in str(error)
    assert closed == (0,)
