"""CloudRift: built from the documented shape (no capture yet); the recording is in that shape."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from priceadvisor.collect.adapters.base import SourceFormatError
from priceadvisor.collect.adapters.cloudrift import (
    parse_instance_types,
    parse_variants,
    variant_quotes,
)
from priceadvisor.config import load_settings
from priceadvisor.records import RunStatus
from priceadvisor.resources import recordings_dir
from tests.conftest import query
from tests.localserver import fetch_served

FOLDER = recordings_dir() / "cloudrift"
URL = "https://api.cloudrift.ai/api/v1/instance-types/list"


def load() -> Any:
    return json.loads((FOLDER / "instance-types.json").read_text())


def quotes(document: Any) -> dict[tuple[str, str], Any]:
    return {
        (q.instance_type, q.region): q
        for kind in parse_instance_types(document)
        for variant in parse_variants(kind)
        for q in variant_quotes(kind, variant, URL)
    }


def test_one_offer_per_variant_and_datacenter_with_nodes() -> None:
    found = quotes(load())
    assert set(found) == {
        ("rtx49-8c-nr.1", "us-east-nc-nr-1"),
        ("rtx49-8c-nr.1", "eu-central-it-gv-1"),
        ("rtx49-8c-nr.1", "ap_northeast_kr_se_1"),
        ("rtx49-64c-nr.8", "us-east-nc-nr-1"),
        ("pro6k-16c-nr.1", "ustx1a_a01"),
    }  # the MI350X type lists no datacenter and no nodes: no offer


def test_cost_per_hour_is_cents_per_node_and_sizes_are_bytes() -> None:
    pro = quotes(load())["pro6k-16c-nr.1", "ustx1a_a01"]
    assert pro.price == 1.3936 and pro.price_basis == "node"  # 139.36 cents
    assert (pro.gpu_name_raw, pro.gpu_count, pro.gpu_memory_gb) == ("RTX PRO 6000", 1, 96)
    assert (pro.vcpus, pro.ram_gb) == (32, 120)  # logical CPUs, GiB of DRAM
    eight = quotes(load())["rtx49-64c-nr.8", "us-east-nc-nr-1"]
    assert eight.price == 3.1408 and eight.gpu_count == 8


def test_stock_comes_from_free_nodes_per_datacenter() -> None:
    found = quotes(load())
    assert found["rtx49-8c-nr.1", "us-east-nc-nr-1"].available is True
    assert found["rtx49-8c-nr.1", "eu-central-it-gv-1"].available is False  # nodes, none free
    assert found["rtx49-64c-nr.8", "us-east-nc-nr-1"].available is False


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ("Unauthorized: token required", "answered with a message"),
        ({"version": "2025-01-29", "data": {}}, "no data.instance_types"),
        ({"data": {"instance_types": [{"name": "x", "brand_short": "RTX 4090"}]}}, "lacks"),
    ],
)
def test_format_changes_are_format_errors(document: Any, message: str) -> None:
    with pytest.raises(SourceFormatError, match=message):
        quotes(document)


def test_a_renamed_price_or_a_bad_count_is_refused() -> None:
    renamed = load()
    variant = renamed["data"]["instance_types"][0]["variants"][0]
    variant["price_per_hour"] = variant.pop("cost_per_hour")
    with pytest.raises(SourceFormatError, match="cost_per_hour"):
        quotes(renamed)
    for count in ("five", "", "-1", "1.5", True):
        bad = load()
        bad["data"]["instance_types"][0]["variants"][0]["nodes_per_dc"]["us-east-nc-nr-1"] = count
        with pytest.raises(SourceFormatError, match="not a count"):
            quotes(bad)


def test_quoted_node_counts_are_read_as_their_numbers() -> None:
    """A quoted "0" free is sold out, as 0 is; it once failed the run as no number."""
    document = load()
    variant = document["data"]["instance_types"][0]["variants"][0]
    variant["nodes_per_dc"] = {k: str(v) for k, v in variant["nodes_per_dc"].items()}
    variant["available_nodes_per_dc"] = {k: "0" for k in variant["available_nodes_per_dc"]}
    found = quotes(document)
    assert len([t for t, _ in found if t == "rtx49-8c-nr.1"]) == 3  # "5", "3", "2" nodes
    assert found["rtx49-8c-nr.1", "us-east-nc-nr-1"].available is False
    assert found["rtx49-8c-nr.1", "eu-central-it-gv-1"].available is False


def test_disabled_by_default_until_a_response_is_recorded() -> None:
    settings = load_settings(providers={})
    assert settings.provider("cloudrift").enabled is False
    assert settings.provider("aws").enabled is True
    enabled = load_settings(providers={"cloudrift": {"enabled": True}})
    assert enabled.provider("cloudrift").enabled is True
    tuned = load_settings(providers={"cloudrift": {"deadline": "60s"}})
    assert tuned.provider("cloudrift").enabled is False  # other keys keep the default


def test_fetch_through_a_local_server(db_path: Path) -> None:
    summary, server = fetch_served("cloudrift", db_path)
    assert summary.status is RunStatus.OK and summary.unmapped == 0
    assert server.requests == ["/api/v1/instance-types/list"]
    rows = query(
        db_path,
        "SELECT gpu_model, count(*) FROM offers WHERE provider = 'cloudrift' GROUP BY 1 ORDER BY 1",
    )
    assert rows == [("RTX4090-24GB", 4), ("RTXPRO6000-96GB", 1)]
