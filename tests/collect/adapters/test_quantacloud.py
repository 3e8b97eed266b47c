"""QuantaCloud: built from the documented shape (no capture yet); the recording is in that
shape."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from priceadvisor.collect.adapters.base import SourceFormatError
from priceadvisor.collect.adapters.quantacloud import (
    is_mig,
    parse_families,
    parse_offer,
    parse_page,
)
from priceadvisor.records import RunStatus
from priceadvisor.resources import recordings_dir
from tests.conftest import query
from tests.localserver import fetch_locally, fetch_served

FOLDER = recordings_dir() / "quantacloud"
URL = "https://core.quantacloud.net/api/v1/offers"


def load(name: str = "offers-page0.json") -> Any:
    return json.loads((FOLDER / name).read_text())


def offers(document: Any) -> list[Any]:
    listed, _total = parse_page(document)
    return [parse_offer(o, URL) for o in listed if not is_mig(o)]


def test_box_prices_per_node_and_string_prices() -> None:
    found = {q.instance_type: q for q in offers(load())}
    assert set(found) == {
        "h100-sxm-80gb x8 128vcpu 1024gb",
        "h100-sxm-80gb x1 16vcpu 128gb",
        "rtx-pro-6000-blackwell x1 12vcpu 96gb",
        "rtx-pro-6000-blackwell x4 48vcpu 384gb",
    }
    eight = found["h100-sxm-80gb x8 128vcpu 1024gb"]
    assert (eight.price, eight.price_basis, eight.gpu_count) == (17.92, "node", 8)  # not 2.24
    assert found["h100-sxm-80gb x1 16vcpu 128gb"].price == 2.49  # "2.49" as a string
    assert eight.region == "us-east-1" and eight.available is True


def test_mig_slices_are_never_whole_gpus() -> None:
    listed, _total = parse_page(load())
    migs = [o["gpu"]["slug"] for o in listed if is_mig(o)]
    assert migs == ["rtx-pro-6000-blackwell-mig-48gb"]
    assert all("mig" not in (q.gpu_name_raw or "") for q in offers(load()))


def test_a_per_gpu_price_that_disagrees_makes_the_price_unreadable() -> None:
    document = load()
    document["offers"][0]["pricePerGpu"] = 17.92  # the box price in the per-GPU field
    assert offers(document)[0].price is None  # the core rejects and counts it


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([], "no offers list"),
        ({"offers": []}, "no totalElements"),
        ({"offers": [{"gpu": {"slug": "h100-sxm-80gb"}}], "totalElements": 1}, "lacks"),
        (
            {
                "offers": [
                    {"gpu": {"slug": "x"}, "priceHourly": 1, "region": "r", "isAvailable": True}
                ],
                "totalElements": 1,
            },
            "slug or count",
        ),
    ],
)
def test_format_changes_are_format_errors(document: Any, message: str) -> None:
    with pytest.raises(SourceFormatError, match=message):
        parse_page(document)


def test_fetch_through_a_local_server(db_path: Path) -> None:
    summary, server = fetch_served("quantacloud", db_path)
    assert summary.status is RunStatus.OK and summary.unmapped == 0
    assert server.requests == ["/api/v1/offers?page=0&size=100"]  # a short page ends the walk
    [(h100,)] = query(
        db_path,
        "SELECT price_gpu_hour_usd FROM offers WHERE instance_type LIKE 'h100-sxm-80gb x8%'",
    )
    assert h100 == pytest.approx(2.24)


def _page(number: int, size: int, total: int) -> bytes:
    offer = load()["offers"][0]
    batch = [dict(offer, region=f"us-east-{number}-{i}") for i in range(size)]
    return json.dumps({"offers": batch, "totalElements": total}).encode()


def test_pages_are_walked_until_a_short_one(db_path: Path) -> None:
    def pages(path: str, q: dict[str, str]) -> tuple[int, dict[str, str], bytes] | None:
        if path.endswith("/offers"):
            page = int(q["page"])
            return (
                200,
                {"Content-Type": "application/json"},
                _page(page, 100 if page < 2 else 7, 207),
            )
        return None

    result = fetch_locally(db_path, "quantacloud", faults=[pages])
    server = result["servers"]["quantacloud"]
    assert [r.split("?")[1] for r in server.requests] == [
        "page=0&size=100",
        "page=1&size=100",
        "page=2&size=100",
    ]
    [(count,)] = query(db_path, "SELECT count(*) FROM offers WHERE provider = 'quantacloud'")
    assert count == 207


def test_empty_listing_while_families_report_stock_fails(db_path: Path) -> None:
    def empty(path: str, q: dict[str, str]) -> tuple[int, dict[str, str], bytes] | None:
        if path.endswith("/offers"):
            body = json.dumps({"offers": [], "totalElements": 0}).encode()
            return 200, {"Content-Type": "application/json"}, body
        return None

    result = fetch_locally(db_path, "quantacloud", faults=[empty])
    summary = result["quantacloud"]
    assert summary.status is RunStatus.FAILED
    assert "gpu-families reports 15 GPUs available" in (summary.error or "")


def test_quoted_family_counts_are_read_and_unreadable_ones_fail() -> None:
    """An unreadable count read as 0 would pass an empty listing as "sold out"."""
    families = load("gpu-families.json")
    for family in families["data"]:
        family["availableCount"] = str(family["availableCount"])
    assert parse_families(families) == 15
    for count in (None, "many", "", "-1", True):
        families["data"][0]["availableCount"] = count
        with pytest.raises(SourceFormatError, match="availableCount"):
            parse_families(families)
