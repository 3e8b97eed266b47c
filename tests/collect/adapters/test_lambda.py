from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from priceadvisor.collect.adapters.base import SourceFormatError
from priceadvisor.collect.adapters.lambdalabs import parse_instance_types, parse_pricing_page
from priceadvisor.collect.fetch import run_cycle
from priceadvisor.models import RunStatus
from priceadvisor.resources import recordings_dir
from tests.localserver import local_settings, serving

FOLDER = recordings_dir() / "lambda"
HTML = (FOLDER / "pricing.html").read_text()
API = json.loads((FOLDER / "instance-types.json").read_text())


def test_page_prices_are_per_gpu_by_node_size() -> None:
    quotes = {q.instance_type: q for q in parse_pricing_page(HTML, "u")}
    assert quotes["8x NVIDIA H100 SXM"].price == 2.99
    assert quotes["4x NVIDIA H100 SXM"].price == 3.09
    assert quotes["8x NVIDIA H100 SXM"].gpu_count == 8
    assert all(q.price_basis == "gpu" and q.pricing == "on_demand" for q in quotes.values())


def test_committed_cluster_tables_and_islands_copy_are_not_read() -> None:
    quotes = parse_pricing_page(HTML, "u")
    assert 3.79 not in {q.price for q in quotes} and 2.29 not in {q.price for q in quotes}
    assert len([q for q in quotes if q.instance_type == "8x NVIDIA B200 SXM6"]) == 1


def test_sold_out_row_is_not_an_offer() -> None:
    assert "1x NVIDIA B200 SXM6" not in {q.instance_type for q in parse_pricing_page(HTML, "u")}


@pytest.mark.parametrize(
    ("html", "message"),
    [
        (HTML.replace("data-plan=", "data-sku="), "layout changed"),
        (HTML.replace('data-label="PRICE/GPU/HR*"', 'data-label="Hourly"'), "PRICE/GPU/HR"),
        (HTML.replace('data-w-tab="4x"', 'data-w-tab="four"'), "node size"),
    ],
)
def test_page_layout_changes_are_format_errors(html: str, message: str) -> None:
    with pytest.raises(SourceFormatError, match=message):
        parse_pricing_page(html, "u")


def test_api_prices_are_cents_per_node_with_capacity_regions() -> None:
    quotes = parse_instance_types(API, "u")
    a100 = [q for q in quotes if q.instance_type == "gpu_8x_a100_80gb_sxm4"]
    assert {q.region for q in a100} == {"global", "us-east-1", "us-midwest-1"}
    assert all(q.price == 22.32 and q.gpu_count == 8 for q in a100)  # from "8x …" description
    h100 = [q for q in quotes if q.instance_type == "gpu_8x_h100_sxm5"]
    assert [(q.region, q.available) for q in h100] == [("global", False)]


@pytest.mark.parametrize(
    "document",
    [{"error": {"code": "global/invalid-api-key"}}, {"data": {"x": {"instance": {}}}}, []],
)
def test_api_drift_is_a_format_error(document: Any) -> None:
    with pytest.raises(SourceFormatError):
        parse_instance_types(document, "u")


def test_page_fetch_through_a_local_server(db_path: Path) -> None:
    with serving("lambda") as server:
        [summary] = run_cycle(local_settings(db_path, server), ["lambda"], False, lambda *_: None)
    assert summary.status is RunStatus.OK and summary.offers_seen == 12
    assert summary.unmapped == 0
    con = duckdb.connect(str(db_path), read_only=True)
    h100 = con.execute(
        "SELECT gpu_model, price_hour_usd FROM offers WHERE instance_type = '8x NVIDIA H100 SXM'"
    ).fetchone()
    con.close()
    assert h100 == ("H100-SXM-80GB", pytest.approx(23.92))


def test_api_with_key_sends_bearer_and_never_stores_it(db_path: Path) -> None:
    with serving("lambda") as server:
        settings = local_settings(db_path, server, api_key="sk-live-SECRET")
        [summary] = run_cycle(settings, ["lambda"], False, lambda *_: None)
        server.faults.append(lambda path, q: (401, {}, b'{"error": "bad key sk-live-SECRET"}'))
        [failed] = run_cycle(settings, ["lambda"], False, lambda *_: None)
    assert summary.status is RunStatus.OK and summary.offers_seen == 8  # 4 global + 4 regions
    assert server.authorizations[0] == "Bearer sk-live-SECRET"
    assert failed.status is RunStatus.FAILED and "SECRET" not in (failed.error or "")
    assert b"SECRET" not in db_path.read_bytes()
