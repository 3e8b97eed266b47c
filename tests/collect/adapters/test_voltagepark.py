from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from priceadvisor.collect.adapters.base import SourceFormatError
from priceadvisor.collect.adapters.voltagepark import parse_result_page, parse_row
from priceadvisor.records import RunStatus
from priceadvisor.resources import recordings_dir
from tests.conftest import query
from tests.localserver import fetch_locally

RECORDING = recordings_dir() / "voltagepark" / "locations.json"


def location() -> dict[str, Any]:
    [row], _ = parse_result_page(json.loads(RECORDING.read_text()))
    return row


def test_string_prices_are_per_gpu_and_never_multiplied_by_the_node_size() -> None:
    quotes = {q.instance_type: q for q in parse_row(location(), "u")}
    ethernet = quotes["h100-sxm5-80gb x8 ethernet"]
    assert (ethernet.price, ethernet.price_basis, ethernet.gpu_count) == (1.99, "gpu", 8.0)


def test_ethernet_and_infiniband_are_two_offers_of_one_location() -> None:
    quotes = parse_row(location(), "u")
    assert sorted((q.instance_type, q.price) for q in quotes) == [
        ("h100-sxm5-80gb x8 ethernet", 1.99),
        ("h100-sxm5-80gb x8 infiniband", 2.49),
    ]
    assert {q.region for q in quotes} == {"a3111bd4-550a-47d0-838a-0a52bff2ae3f"}


def test_zero_availability_keeps_the_published_price() -> None:
    quotes = {q.instance_type.rsplit(" ", 1)[-1]: q for q in parse_row(location(), "u")}
    assert quotes["infiniband"].available is False and quotes["infiniband"].price == 2.49
    assert quotes["ethernet"].available is True
    assert quotes["infiniband"].stock == "0" and int(quotes["ethernet"].stock or 0) > 0


def test_a_fabric_without_a_price_is_not_sold_and_reserved_counts_are_not_prices() -> None:
    row = location() | {
        "gpu_price_infiniband": None,
        "reserved_gpu_count_infiniband_cluster_one": 64,
    }
    [only] = parse_row(row, "u")
    assert only.instance_type.endswith("ethernet")


@pytest.mark.parametrize(
    "document", [[], {"data": []}, {"results": [{"id": "x"}]}, {"results": "none"}]
)
def test_unexpected_layout_is_a_format_error(document: Any) -> None:
    with pytest.raises(SourceFormatError):
        parse_result_page(document)


def test_end_to_end_through_a_local_server(db_path: Path) -> None:
    summaries = fetch_locally(db_path, "voltagepark")
    assert summaries["voltagepark"].status is RunStatus.OK
    assert summaries["voltagepark"].offers_seen == 2
    rows = query(
        db_path,
        "SELECT instance_type, gpu_model, price_gpu_hour_usd, price_hour_usd, country, available "
        "FROM offers WHERE provider = 'voltagepark' ORDER BY 1",
    )
    assert rows == [
        ("h100-sxm5-80gb x8 ethernet", "H100-SXM-80GB", 1.99, pytest.approx(15.92), "US", True),
        (
            "h100-sxm5-80gb x8 infiniband",
            "H100-SXM-80GB",
            2.49,
            pytest.approx(19.92),
            "US",
            False,
        ),
    ]


def test_a_second_page_is_followed_and_a_repeated_page_fails(db_path: Path) -> None:
    first = json.loads(RECORDING.read_text()) | {"has_next": True, "total_result_count": 2}
    second = {
        "results": [location() | {"id": "b0000000-0000-0000-0000-000000000002"}],
        "has_next": False,
    }

    def pages(path: str, q: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        body = second if q.get("page") == "2" else first
        return 200, {"Content-Type": "application/json"}, json.dumps(body).encode()

    summaries = fetch_locally(db_path, "voltagepark", faults=[pages])
    assert summaries["voltagepark"].offers_seen == 4
    assert summaries["servers"]["voltagepark"].requests[-1].endswith("?page=2")
    second["results"] = first["results"]
    again = fetch_locally(db_path, "voltagepark", faults=[pages])["voltagepark"]
    assert again.status is RunStatus.FAILED and "repeats" in (again.error or "")


def test_pages_that_fall_short_of_the_stated_total_fail(db_path: Path) -> None:
    """has_next false after one row while the source states two: rows are missing."""
    short = json.loads(RECORDING.read_text()) | {"has_next": False, "total_result_count": 2}

    def page(path: str, q: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        return 200, {"Content-Type": "application/json"}, json.dumps(short).encode()

    summary = fetch_locally(db_path, "voltagepark", faults=[page])["voltagepark"]
    assert summary.status is RunStatus.FAILED
    assert summary.error == "the source states 2 locations but its pages held 1"
