from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from priceadvisor.collect.adapters.akash import NO_BIDS, memory_gb, parse_models
from priceadvisor.collect.adapters.base import SourceFormatError
from priceadvisor.records import RunStatus, utcnow
from priceadvisor.resources import recordings_dir
from tests.conftest import query
from tests.localserver import fetch_served

MODELS = json.loads((recordings_dir() / "akash" / "gpu-prices.json").read_text())
H100 = MODELS["models"][0]


def with_models(*models: dict[str, Any]) -> dict[str, Any]:
    return {"models": [copy.deepcopy(H100), *models]}


def test_the_median_bid_is_stored_as_a_market_statistic_of_the_day() -> None:
    [quote] = parse_models(MODELS, "2026-09-28", "u").quotes
    assert (quote.pricing, quote.price, quote.price_basis, quote.currency) == (
        "market",
        2.56,  # med; min 2.04, avg 2.58 and weightedAverage 2.72 are not stored
        "gpu",
        "USD",
    )
    assert (quote.price_date, quote.offer_count, quote.region) == ("2026-09-28", 3089, "global")
    assert (quote.instance_type, quote.gpu_name_raw, quote.gpu_memory_gb) == (
        "nvidia h100 SXM5 80Gi",
        "nvidia h100 SXM5",
        80.0,
    )


def test_a_model_without_bids_is_counted_and_left_out() -> None:
    no_bids = copy.deepcopy(H100) | {"model": "a100", "price": None}
    parsed = parse_models(with_models(no_bids), "d", "u")
    assert parsed.skipped == {NO_BIDS: 1}
    assert [q.gpu_name_raw for q in parsed.quotes] == ["nvidia h100 SXM5"]


def test_interface_and_memory_keep_models_apart_whatever_the_label_case() -> None:
    pcie = copy.deepcopy(H100) | {"interface": "pcie", "ram": "80Gi"}
    nvl = copy.deepcopy(H100) | {"interface": "sxm5", "ram": "94Gi"}
    quotes = parse_models(with_models(pcie, nvl), "d", "u").quotes
    assert [q.instance_type for q in quotes] == [
        "nvidia h100 SXM5 80Gi",
        "nvidia h100 PCIE 80Gi",
        "nvidia h100 SXM5 94Gi",
    ]
    assert (memory_gb("80Gi"), memory_gb("24 GB"), memory_gb("lots")) == (80.0, 24.0, None)


def test_free_gpus_say_whether_the_statistic_is_available() -> None:
    full = copy.deepcopy(H100) | {"availability": {"total": 68, "available": 0}}
    assert parse_models({"models": [full]}, "d", "u").quotes[0].available is False
    assert parse_models(MODELS, "d", "u").quotes[0].available is True  # 15 of 68 free


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"data": []}, "no 'models'"),
        ({"models": {"h100": {}}}, "GPU models are not a JSON list"),
        ({"models": [{"vendor": "nvidia", "model": "h100"}]}, "lacks ram, interface"),
        ({"models": [H100 | {"price": {"currency": "USD", "avg": 2.5}}]}, "price is not"),
        ({"models": [H100 | {"price": 2.56}]}, "price is not"),
    ],
)
def test_unexpected_documents_fail_loudly(document: Any, message: str) -> None:
    with pytest.raises(SourceFormatError, match=message):
        parse_models(document, "d", "u")


def test_end_to_end_the_statistic_is_market_priced_not_rentable(db_path: Path) -> None:
    before = utcnow().date().isoformat()
    summary, server = fetch_served("akash", db_path)
    days = {before, utcnow().date().isoformat()}  # the fetch may straddle midnight
    assert summary.status is RunStatus.OK and summary.offers_seen == 1
    assert (summary.unmapped, summary.offers_rejected) == (0, 0)
    assert server.requests == ["/v1/gpu-prices"]  # never the undocumented ?debug=true
    [(model, pricing, day)] = query(
        db_path, "SELECT gpu_model, pricing, price_date FROM offers WHERE provider = 'akash'"
    )
    assert (model, pricing) == ("H100-SXM-80GB", "market") and str(day) in days


def test_quoted_free_gpus_and_bid_counts_are_read_as_their_numbers() -> None:
    sold_out = copy.deepcopy(H100) | {"availability": {"total": "68", "available": "0"}}
    [quote] = parse_models({"models": [sold_out | {"bidCount": "3089"}]}, "d", "u").quotes
    assert (quote.available, quote.offer_count) == (False, 3089)
    vague = copy.deepcopy(H100) | {"availability": {"available": "many"}, "bidCount": True}
    [quote] = parse_models({"models": [vague]}, "d", "u").quotes
    assert (quote.available, quote.offer_count) == (None, None)
