from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from priceadvisor.collect.adapters.base import SourceFormatError
from priceadvisor.collect.adapters.packetai import (
    NOT_LAUNCHED,
    parse_price_list,
    region_code,
)
from priceadvisor.records import RawQuote, RunStatus
from priceadvisor.resources import recordings_dir
from tests.conftest import query
from tests.localserver import fetch_served

PRICE_LIST = json.loads((recordings_dir() / "packetai" / "product_detail.json").read_text())


def offers(document: dict[str, Any] | None = None) -> dict[tuple[str, str], RawQuote]:
    quotes = parse_price_list(document or PRICE_LIST, "u").quotes
    return {(q.region, q.instance_type): q for q in quotes if q.pricing == "on_demand"}


def edited(gpu_type: str, **fields: Any) -> dict[str, Any]:
    """The price list with every on-demand row of one GPU type changed."""
    document = copy.deepcopy(PRICE_LIST)
    for row in document["on_demand"]:
        if row["gpu_type"] == gpu_type:
            row.update(fields)
    return document


def test_prices_labelled_per_gpu_are_stored_per_instance() -> None:
    b200 = {t: (q.price, q.gpu_count) for (r, t), q in offers().items() if "B200" in t}
    assert b200 == {
        "NVIDIA B200 x1 dynamic": (3.75, 1.0),
        "NVIDIA B200 x1 dedicated": (6.99, 1.0),
        "NVIDIA B200 x2 dedicated": (13.98, 2.0),
        "NVIDIA B200 x4 dedicated": (27.96, 4.0),
        "NVIDIA B200 x8 dedicated": (55.92, 8.0),
    }
    two = offers()["LA-1", "NVIDIA B200 x2 dedicated"]
    assert (two.price_basis, two.gpu_memory_gb, two.vcpus) == ("node", 180.0, 48.0)


def test_per_gpu_prices_under_the_same_name_fail_the_run() -> None:
    """If 2x B200 cost what 1x costs, the field would have become per GPU: refuse to guess."""
    document = copy.deepcopy(PRICE_LIST)
    for row in document["on_demand"]:
        if row["gpu_type"] == "NVIDIA B200" and row["plan_type"] == "dedicated":
            row["price_per_gpu_hour_usd"] = 6.99
    with pytest.raises(SourceFormatError, match="no longer looks per instance"):
        parse_price_list(document, "u")


def monthly(document: dict[str, Any] | None = None) -> dict[tuple[str, str], RawQuote]:
    quotes = parse_price_list(document or PRICE_LIST, "u").quotes
    return {(q.region, q.instance_type): q for q in quotes if q.pricing == "reserved"}


def test_launching_soon_rows_are_counted_not_offered() -> None:
    parsed = parse_price_list(PRICE_LIST, "u")
    assert parsed.skipped == {NOT_LAUNCHED: 3}
    assert len(parsed.quotes) == 15 + 4  # on-demand + monthly plans
    assert not any("H100" in q.instance_type or "5090" in q.instance_type for q in parsed.quotes)
    assert all(q.price is not None for q in parsed.quotes)
    # a monthly effective hourly price (6.90 for 1x B200 dedicated) is never the on-demand one
    assert offers()["LA-1", "NVIDIA B200 x1 dedicated"].price == 6.99


def test_monthly_plans_are_one_month_commitments_per_instance() -> None:
    found = monthly()
    assert len(found) == 4
    b200 = found["LA-1", "NVIDIA B200 x1 dedicated"]
    assert (b200.term_months, b200.price, b200.monthly, b200.price_basis) == (1, 6.9, 5037, "node")
    l40s = found["UK-1", "NVIDIA L40S x2 dedicated"]  # per instance: 1142 / 730 = 1.56
    assert (l40s.gpu_count, l40s.price, l40s.monthly) == (2, 1.56, 1142)


def test_a_monthly_price_that_is_not_a_month_of_its_hourly_price_fails_the_run() -> None:
    document = copy.deepcopy(PRICE_LIST)
    document["monthly"][3]["effective_hourly_usd"] = 0.78  # per GPU instead of per instance
    with pytest.raises(SourceFormatError, match="not price_per_month_usd 1142 over a month"):
        parse_price_list(document, "u")


def test_stock_status_is_availability_and_plans_and_regions_stay_apart() -> None:
    found = offers()
    assert found["LA-1", "NVIDIA B200 x8 dedicated"].available is False
    assert found["LA-1", "NVIDIA B200 x1 dedicated"].available is True
    assert ("UK-3", "NVIDIA A100 PCIe x1 dedicated") in found
    assert ("UK-4", "NVIDIA A100 PCIe x1 dedicated") in found
    assert found["LA-1", "NVIDIA B200 x1 dynamic"].price == 3.75  # cheaper, shared plan


def test_region_codes_come_from_the_parenthesis() -> None:
    assert region_code("Los Angeles, US (LA-1)") == "LA-1"
    assert region_code("Dallas, US (Texas)") == "Texas"
    assert region_code("Frankfurt, DE") == "Frankfurt, DE"


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"instances": []}, "no 'on_demand' list"),
        (PRICE_LIST | {"reserved": []}, r"unknown section\(s\).*'reserved'"),
        (PRICE_LIST | {"monthly": {}}, "monthly rows are not a JSON list"),
        (edited("NVIDIA L40S", stock_status="limited"), "unknown stock_status 'limited'"),
        (edited("NVIDIA L40S", plan_type="spot"), "unknown plan_type 'spot'"),
        ({"on_demand": [{"gpu_type": "NVIDIA L40S"}]}, "an on-demand row lacks gpu_count"),
    ],
)
def test_unexpected_price_lists_fail_loudly(document: Any, message: str) -> None:
    with pytest.raises(SourceFormatError, match=message):
        parse_price_list(document, "u")


def test_end_to_end_through_a_local_server(db_path: Path) -> None:
    summary, _ = fetch_served("packetai", db_path)
    assert summary.status is RunStatus.OK and summary.offers_seen == 15 + 4
    assert query(db_path, "SELECT count(*) FROM offers WHERE pricing = 'reserved'") == [(4,)]
    assert (summary.unmapped, summary.offers_rejected) == (0, 0)
    rows = query(
        db_path,
        "SELECT price_gpu_hour_usd, gpu_model, country FROM offers "
        "WHERE instance_type = 'NVIDIA B200 x4 dedicated'",
    )
    assert rows == [(pytest.approx(6.99), "B200-180GB", "US")]
    assert query(db_path, "SELECT count(*) FROM offers WHERE country IS NULL") == [(0,)]
