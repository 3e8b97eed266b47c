from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from priceadvisor.collect.adapters.base import SourceFormatError
from priceadvisor.collect.adapters.tensordock import country_code, offers, parse_locations
from priceadvisor.manifest import manifest
from priceadvisor.records import RunStatus
from priceadvisor.resources import recordings_dir
from tests.conftest import query
from tests.localserver import fetch_locally

RECORDING = recordings_dir() / "tensordock" / "locations.json"
SHAPE = manifest("tensordock").source


def gpu_at(city: str) -> tuple[dict[str, Any], dict[str, Any]]:
    locations = parse_locations(json.loads(RECORDING.read_text()))
    location = next(loc for loc in locations if loc["city"] == city)
    return location, location["gpus"][0]


def test_per_gpu_price_plus_vcpu_and_ram_components_per_node() -> None:
    location, h100 = gpu_at("Austin")
    by_count = {q.gpu_count: q for q in offers(location, h100, SHAPE, "u")}
    one, eight = by_count[1.0], by_count[8.0]
    assert (one.vcpus, one.ram_gb, one.price) == (8.0, 32.0, 2.288)  # 2.20 + 8×0.003 + 32×0.002
    assert (eight.vcpus, eight.ram_gb, eight.price) == (64.0, 256.0, 18.304)
    assert eight.price_basis == "node"  # the per-GPU part is multiplied once, here, exactly


def test_vcpus_and_ram_are_capped_at_what_the_host_offers() -> None:
    location, _ = gpu_at("Austin")
    rtx4090 = location["gpus"][1]
    eight = next(q for q in offers(location, rtx4090, SHAPE, "u") if q.gpu_count == 8)
    assert (eight.vcpus, eight.ram_gb) == (32.0, 96.0)


def test_max_count_is_availability_and_the_region_is_the_country() -> None:
    location, l40s = gpu_at("Toronto")
    quotes = offers(location, l40s, SHAPE, "u")
    assert {q.available for q in quotes} == {False}
    assert {(q.region, q.zone) for q in quotes} == {("CA", location["id"])}
    assert country_code("United States") == "US" and country_code("Atlantis") == "unknown"


@pytest.mark.parametrize(
    "document",
    [
        {"locations": []},
        {"data": {"locations": [{"id": "x"}]}},
        {"data": {"locations": [{"gpus": []}]}},
    ],
)
def test_unexpected_layout_is_a_format_error(document: Any) -> None:
    with pytest.raises(SourceFormatError):
        parse_locations(document)


def test_end_to_end_through_a_local_server_with_a_key(db_path: Path) -> None:
    summaries = fetch_locally(db_path, "tensordock", api_key="td-secret")
    summary = summaries["tensordock"]
    assert summary.status is RunStatus.OK and summary.offers_seen == 16 and summary.unmapped == 0
    assert summaries["servers"]["tensordock"].authorizations == ["Bearer td-secret"]
    [(per_gpu, country, eu)] = query(
        db_path,
        "SELECT price_gpu_hour_usd, country, is_eu FROM offers WHERE instance_type = "
        "'a100-sxm4-80gb x1'",
    )
    assert (per_gpu, country, eu) == (pytest.approx(1.1 + 8 * 0.0025 + 32 * 0.0015), "DE", True)


def test_a_401_without_a_key_says_to_set_it(db_path: Path) -> None:
    def refuse(path: str, q: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        return 401, {}, b'{"error": "unauthorized"}'

    summary = fetch_locally(db_path, "tensordock", faults=[refuse])["tensordock"]
    assert summary.status is RunStatus.FAILED
    assert "HTTP 401" in (summary.error or "") and "TENSORDOCK_API_KEY" in (summary.error or "")


def test_an_answer_that_is_not_json_fails_the_run_with_the_reason(db_path: Path) -> None:
    def maintenance(path: str, q: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        return 200, {}, b"<html>maintenance</html>"

    summary = fetch_locally(db_path, "tensordock", faults=[maintenance])["tensordock"]
    assert summary.status is RunStatus.FAILED and "invalid JSON" in (summary.error or "")


@pytest.mark.parametrize(("count", "free"), [("0", set()), ("2", {1, 2}), ("N/A", None)])
def test_a_quoted_max_count_is_read_as_its_number(count: str, free: set[int] | None) -> None:
    location, h100 = gpu_at("Austin")
    quotes = offers(location, h100 | {"max_count": count}, SHAPE, "u")
    if free is None:
        assert {(q.available, q.stock) for q in quotes} == {(None, None)}
    else:
        assert {q.gpu_count for q in quotes if q.available} == free
        assert {q.stock for q in quotes} == {count}
