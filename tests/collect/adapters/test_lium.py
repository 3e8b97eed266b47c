from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from priceadvisor.collect.adapters.base import SourceFormatError
from priceadvisor.collect.adapters.lium import NO_TIER, NOT_RENTABLE, UNLISTED, parse_feed
from priceadvisor.records import RawQuote, RunStatus
from priceadvisor.resources import recordings_dir
from tests.conftest import query
from tests.localserver import fetch_served

FEED = json.loads((recordings_dir() / "lium" / "nodes.json").read_text())


def feed(**changes: Any) -> dict[str, Any]:
    """The recording with node fields changed: {node index: {field: value}}."""
    document = copy.deepcopy(FEED)
    for index, fields in changes.items():
        document["nodes"][int(index.removeprefix("n"))].update(fields)
    return document


def offers(document: dict[str, Any] | None = None) -> dict[tuple[str, str, str], RawQuote]:
    parsed = parse_feed(document or FEED, "u")
    return {(q.zone, q.instance_type, q.pricing): q for q in parsed.quotes}


def test_every_rentable_count_of_each_node_is_an_offer_per_gpu() -> None:
    found = offers()
    assert {key: q.price for key, q in found.items()} == {
        ("JP-13", "RTX 5090 x8", "on_demand"): 0.5,
        ("US-MS", "H200 x1", "on_demand"): 3.99,
        ("US-MS", "H200 x2", "on_demand"): 3.99,
        ("US-MS", "H200 x4", "on_demand"): 3.99,
        ("US-MN", "RTX 5090 x1", "spot"): 0.5,
        ("US-VA", "A100-SXM4-80GB x8", "on_demand"): 1.23,
    }
    h200 = found["US-MS", "H200 x4", "on_demand"]
    assert (h200.region, h200.price_basis, h200.gpu_count, h200.gpu_memory_gb) == (
        "US",
        "gpu",
        4,
        140.0,
    )


def test_a_whole_node_minimum_is_never_offered_as_fewer_gpus() -> None:
    japan = [key for key in offers() if key[0] == "JP-13"]
    assert japan == [("JP-13", "RTX 5090 x8", "on_demand")]


def test_a_node_with_fewer_free_gpus_than_its_minimum_is_counted_not_offered() -> None:
    parsed = parse_feed(FEED, "u")
    assert parsed.skipped == {NOT_RENTABLE: 1}  # Helsinki: 3 of 8 free, minimum 8
    assert not any(q.region == "FI" for q in parsed.quotes)
    rented = parse_feed(feed(n1={"available_gpu_count": 0}), "u")
    assert rented.skipped[NOT_RENTABLE] == 2
    assert not any(q.gpu_name_raw == "H200" for q in rented.quotes)


def test_a_wholly_free_node_of_an_odd_size_is_offered_whole() -> None:
    found = offers(feed(n1={"gpu_count": 6, "available_gpu_count": 6, "min_rentable_gpu_count": 2}))
    h200 = sorted(t for z, t, p in found if t.startswith("H200"))
    assert h200 == ["H200 x2", "H200 x4", "H200 x6"]


def test_nodes_of_one_market_fold_into_the_cheapest_with_their_count() -> None:
    twin = copy.deepcopy(FEED["nodes"][1]) | {"id": "twin", "price_per_gpu_hour": 3.5}
    document = copy.deepcopy(FEED) | {"count": FEED["count"] + 1}
    document["nodes"].append(twin)
    h200 = offers(document)["US-MS", "H200 x1", "on_demand"]
    assert (h200.price, h200.offer_count, h200.price_median) == (3.5, 2, pytest.approx(3.745))


def test_unreadable_counts_and_prices_are_passed_on_for_the_core_to_reject() -> None:
    found = offers(feed(n2={"gpu_count": None}, n3={"price_per_gpu_hour": None}))
    assert found["US-MN", "RTX 5090 x?", "spot"].gpu_count is None
    assert found["US-VA", "A100-SXM4-80GB x8", "on_demand"].price is None


def test_a_node_without_a_country_is_kept_as_unknown() -> None:
    found = offers(feed(n2={"country_code": None, "region": None}))
    assert found["", "RTX 5090 x1", "spot"].region == "unknown"


def test_nodes_without_a_tier_and_unlisted_nodes_are_counted() -> None:
    parsed = parse_feed(feed(n2={"tier": None}) | {"count": 7}, "u")
    assert parsed.skipped == {NOT_RENTABLE: 1, NO_TIER: 1, UNLISTED: 2}
    assert not any(q.pricing == "spot" for q in parsed.quotes)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"data": []}, "no 'nodes'"),
        (feed(n0={"tier": "community"}), "unknown tier 'community'"),
        ({"count": 1, "nodes": [{"id": "x"}]}, "a node lacks gpu_model"),
    ],
)
def test_unexpected_feeds_fail_loudly(document: Any, message: str) -> None:
    with pytest.raises(SourceFormatError, match=message):
        parse_feed(document, "u")


def test_end_to_end_through_a_local_server(db_path: Path) -> None:
    summary, server = fetch_served("lium", db_path)
    assert summary.status is RunStatus.OK and summary.offers_seen == 6
    assert (summary.unmapped, summary.offers_rejected) == (0, 0)
    assert server.requests == ["/api/public/v1/nodes"]
    rows = dict(
        query(db_path, "SELECT gpu_model, count(*) FROM offers WHERE provider = 'lium' GROUP BY 1")
    )
    assert rows == {"RTX5090-32GB": 2, "H200-141GB": 3, "A100-SXM-80GB": 1}
    [(country, continent)] = query(
        db_path, "SELECT DISTINCT country, continent FROM offers WHERE zone = 'US-MS'"
    )
    assert (country, continent) == ("US", "NA")


def test_quoted_gpu_counts_are_read_as_their_numbers() -> None:
    quoted = {"gpu_count": "8", "available_gpu_count": "4", "min_rentable_gpu_count": "1"}
    h200 = sorted(t for z, t, p in offers(feed(n1=quoted)) if t.startswith("H200"))
    assert h200 == ["H200 x1", "H200 x2", "H200 x4"]
    rented = parse_feed(feed(n1={"available_gpu_count": "0"}), "u")
    assert rented.skipped[NOT_RENTABLE] == 2
    assert not any(q.gpu_name_raw == "H200" for q in rented.quotes)
