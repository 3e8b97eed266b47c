from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path
from typing import Any

import pytest

from priceadvisor.collect.adapters.base import SourceFormatError
from priceadvisor.collect.adapters.gpuai import (
    REPLAYED,
    GpuAiAdapter,
    parse_page,
    parse_row,
    parse_rows,
)
from priceadvisor.manifest import manifest
from priceadvisor.records import RawQuote, RunStatus
from priceadvisor.resources import recordings_dir
from tests.conftest import query
from tests.localserver import fetch_served

FOLDER = recordings_dir() / "gpuai"
PAGE1 = json.loads((FOLDER / "pricing-page1.json").read_text())
PAGE2 = json.loads((FOLDER / "pricing-page2.json").read_text())


def offers(*documents: dict[str, Any]) -> dict[tuple[str, str], RawQuote]:
    pages = [parse_page(d)[0] for d in documents or (PAGE1, PAGE2)]
    return {(q.region, q.instance_type): q for q in parse_rows(pages, "u").quotes}


def row(offering_id: str) -> dict[str, Any]:
    return copy.deepcopy(next(r for r in PAGE1["data"] if r["offering_id"] == offering_id))


def test_the_price_is_for_the_whole_configuration() -> None:
    b300 = offers()["ca-central", "b300 x8 secure vm"]
    assert (b300.price, b300.price_basis, b300.gpu_count) == (50.62, "node", 8.0)
    assert (b300.vcpus, b300.ram_gb, b300.gpu_name_raw) == (224.0, 1920.0, "b300")
    odd = offers()["eu-west", "rtx_3090 x7 community container"]
    assert (odd.price, odd.gpu_count) == (1.5, 7.0)


def test_the_cursor_walk_reads_both_pages_and_counts_replayed_rows() -> None:
    rows, cursor = parse_page(PAGE1)
    assert (len(rows), cursor) == (13, PAGE1["next_cursor"])
    assert parse_page(PAGE2)[1] is None
    parsed = parse_rows([rows, parse_page(PAGE2)[0]], "u")
    assert parsed.skipped == {REPLAYED: 2}
    assert len(parsed.quotes) == 15


def test_offerings_of_one_market_fold_into_the_cheapest() -> None:
    rtx = offers()["us-east", "rtx_5090 x1 community container"]
    assert (rtx.price, rtx.offer_count, rtx.price_median) == (0.62, 2, pytest.approx(0.655))
    b200 = {t: q.price for (r, t), q in offers().items() if t.startswith("b200")}
    # community and secure, 1x and 8x stay apart
    assert b200 == {
        "b200 x1 community container": 5.32,
        "b200 x1 secure container": 6.79,
        "b200 x8 community container": 57.02,
    }


def test_an_empty_capacity_class_falls_back_to_the_community_flag() -> None:
    assert ("eu-west", "rtx_pro_6000 x1 secure container") in offers()
    community = row("f7f05346e1a3") | {"capacity_class": ""}
    assert parse_row(community, "u").instance_type == "h100_nvl x1 community container"


def test_availability_counts_and_the_spot_tier() -> None:
    assert parse_row(row("7ea6d8fdc2a7"), "u").available is True  # 92 available
    assert parse_row(row("7ea6d8fdc2a7") | {"available": 0}, "u").available is False
    spot = row("57886581e01b") | {"tier": "spot", "offering_id": "s", "price_per_hour": 0.42}
    quotes = parse_rows([PAGE1["data"] + [spot]], "u").quotes
    a100 = {q.pricing: q.price for q in quotes if q.gpu_name_raw == "a100_40gb"}
    assert a100 == {"on_demand": 0.6, "spot": 0.42}  # a spot tier is its own offer


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"data": []}, "lacks 'data' or 'next_cursor'"),
        ({"items": [], "next_cursor": None}, "lacks 'data' or 'next_cursor'"),
        ({"data": [{"gpu_type": "h100_sxm"}], "next_cursor": None}, "lacks offering_id"),
        ({"data": [], "next_cursor": 7}, "next_cursor is not a string"),
        (
            {"data": [PAGE1["data"][0] | {"tier": "reserved"}], "next_cursor": None},
            "unknown tier 'reserved'",
        ),
    ],
)
def test_unexpected_pages_fail_loudly(document: Any, message: str) -> None:
    with pytest.raises(SourceFormatError, match=message):
        parse_page(document)


def test_end_to_end_through_a_local_server(db_path: Path) -> None:
    summary, server = fetch_served("gpuai", db_path)
    assert summary.status is RunStatus.OK and summary.offers_seen == 15
    assert (summary.unmapped, summary.offers_rejected) == (0, 0)
    assert len(server.requests) == 2 and "cursor=" in server.requests[1]
    assert all("limit=200" in r for r in server.requests)
    [(per_gpu,)] = query(
        db_path, "SELECT price_gpu_hour_usd FROM offers WHERE instance_type = 'b300 x8 secure vm'"
    )
    assert per_gpu == pytest.approx(6.3275)
    assert query(db_path, "SELECT count(*) FROM offers WHERE gpu_model IS NULL") == [(0,)]


class LoopingSource:
    """A source whose every page points at the same next page."""

    async def get_json(self, url: str, params: dict[str, str] | None = None) -> Any:
        return PAGE1


def test_a_cursor_that_repeats_fails_the_run() -> None:
    adapter = GpuAiAdapter(manifest("gpuai"), {"pricing": "https://x/v1/pricing"})
    with pytest.raises(SourceFormatError, match="repeats an earlier cursor"):
        asyncio.run(adapter.fetch(LoopingSource(), lambda _: None))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("count", "available"), [("0", False), ("92", True), (" 1 ", True), ("N/A", None), ("", None)]
)
def test_a_quoted_available_count_is_read_as_its_number(count: str, available: bool) -> None:
    """A quoted "0" is sold out, as 0 is; a word that is no count says nothing."""
    assert parse_row(row("7ea6d8fdc2a7") | {"available": count}, "u").available is available
