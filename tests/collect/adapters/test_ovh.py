from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from priceadvisor.collect.adapters.base import SourceFormatError
from priceadvisor.collect.adapters.ovh import (
    hourly_price,
    is_hourly_gpu_flavour,
    parse_addon,
    parse_catalog,
)
from priceadvisor.records import RunStatus
from priceadvisor.resources import recordings_dir
from tests.conftest import query
from tests.localserver import fetch_locally

RECORDING = recordings_dir() / "ovh" / "catalog-fr.json"


def addons() -> dict[str, dict[str, Any]]:
    _, listing = parse_catalog(json.loads(RECORDING.read_text()), "FR")
    return {a["planCode"]: a for a in listing}


def test_1e8_units_convert_exactly_per_flavour() -> None:
    quote = parse_addon(addons()["h200-1920.consumption"], "EUR", "u")
    assert (quote.price, quote.currency, quote.price_basis) == (42.0, "EUR", "node")
    assert (quote.gpu_count, quote.gpu_memory_gb, quote.instance_type) == (8.0, 141.0, "h200-1920")
    assert (
        hourly_price({"pricings": [{"price": 155819000, "formattedPrice": "$1.56 USD"}]}) == 1.55819
    )


def test_monthly_commitments_windows_ai_and_cpu_addons_are_not_hourly_gpu_offers() -> None:
    kept = {plan for plan, addon in addons().items() if is_hourly_gpu_flavour(addon)}
    assert "h100-380.consumption" in kept and "t1-le-45.consumption" in kept
    assert not kept & {
        "h100-380.monthly.postpaid",
        "win-t1-45.consumption",
        "ai-deploy-l4.consumption",
        "b3-8.consumption",
    }
    assert len(kept) == 12


def test_a_price_that_disagrees_with_its_display_is_unusable() -> None:
    addon = addons()["h100-380.consumption"]
    assert hourly_price(addon) == 2.8
    pricing = addon["pricings"][0]
    assert hourly_price(addon | {"pricings": [pricing | {"formattedPrice": "3.80 €"}]}) is None
    assert hourly_price(addon | {"pricings": [pricing, pricing]}) is None  # two phases


def test_coming_soon_is_stored_as_not_available_and_not_offered() -> None:
    coming = parse_addon(addons()["a10-45.consumption"], "EUR", "u")
    assert coming.available is False and "coming_soon" in (coming.not_offered_reason or "")
    ordinary = parse_addon(addons()["l4-90.consumption"], "EUR", "u")
    assert ordinary.available is True and ordinary.not_offered_reason is None


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"plans": []}, "addons"),
        ({"addons": [], "locale": {"subsidiary": "US", "currencyCode": "USD"}}, "subsidiary"),
        ({"addons": [], "locale": {"subsidiary": "FR"}}, "currency"),
    ],
)
def test_unexpected_catalog_is_a_format_error(document: Any, message: str) -> None:
    with pytest.raises(SourceFormatError, match=message):
        parse_catalog(document, "FR")


def test_end_to_end_in_euros_through_the_ecb_rate(db_path: Path) -> None:
    summaries = fetch_locally(db_path, "ovh", "ecb")
    summary = summaries["ovh"]
    assert summary.status is RunStatus.OK and summary.offers_seen == 12 and summary.unmapped == 0
    assert summaries["servers"]["ovh"].requests == [
        "/1.0/order/catalog/public/cloud?ovhSubsidiary=FR"
    ]
    [(rate,)] = query(db_path, "SELECT usd_per_unit FROM fx_rates WHERE currency = 'EUR'")
    [(original, usd, per_gpu, model)] = query(
        db_path,
        "SELECT price_hour_original, price_hour_usd, price_gpu_hour_usd, gpu_model FROM offers "
        "WHERE instance_type = 'h100-1520'",
    )
    assert (original, model) == (11.2, "H100-SXM-80GB")
    assert usd == pytest.approx(11.2 * rate) and per_gpu == pytest.approx(usd / 4)
    assert query(db_path, "SELECT gpu_model FROM offers WHERE instance_type = 't2-45'") == [
        ("V100-PCIE-32GB",)
    ]
    assert query(db_path, "SELECT count(*) FROM offers WHERE pricing <> 'on_demand'") == [(0,)]


def test_an_addon_that_is_not_an_object_fails_the_run() -> None:
    document = json.loads(RECORDING.read_text())
    document["addons"].append("h100-380.consumption")
    with pytest.raises(SourceFormatError, match="not a JSON object"):
        parse_catalog(document, "FR")


def test_a_pricing_without_its_display_copy_keeps_its_exact_price() -> None:
    addon = json.loads(json.dumps(addons()["h100-380.consumption"]))
    del addon["pricings"][0]["formattedPrice"]
    assert hourly_price(addon) == 2.8
    addon["pricings"][0]["formattedPrice"] = "3.80 €"
    assert hourly_price(addon) is None  # present and disagreeing: unusable
