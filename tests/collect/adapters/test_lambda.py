from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import duckdb
import pytest

from priceadvisor.collect.adapters.base import SourceFormatError
from priceadvisor.collect.adapters.lambdalabs import (
    committed_rows,
    parse_instance_types,
    parse_pricing_page,
)
from priceadvisor.collect.fetch import run_cycle
from priceadvisor.records import RunStatus
from priceadvisor.resources import recordings_dir
from priceadvisor.service.stores import configured_store
from tests.localserver import local_settings, serving

FOLDER = recordings_dir() / "lambda"
HTML = (FOLDER / "pricing.html").read_text()
API = json.loads((FOLDER / "instance-types.json").read_text())


def page_quotes(html: str = HTML) -> dict[str, Any]:
    return {q.instance_type: q for q in parse_pricing_page(html, "u")}


def test_node_size_is_the_label_of_the_aria_tab_that_names_the_panel() -> None:
    quotes = page_quotes()
    assert quotes["8x NVIDIA H100 SXM 80 GB"].price == 2.99
    assert quotes["4x NVIDIA H100 SXM 80 GB"].price == 3.09
    assert quotes["2x NVIDIA H100 SXM 80 GB"].gpu_count == 2
    assert quotes["1x NVIDIA Quadro RTX 6000 24 GB"].price == 0.5
    assert all(q.price_basis == "gpu" and q.pricing == "on_demand" for q in quotes.values())
    assert len(quotes) == 13


@pytest.mark.parametrize(
    "relink",
    [
        # only aria-controls on the tab
        lambda html: re.sub(r' aria-labelledby="[^"]*"', "", html),
        # only a shared data-* value
        lambda html: (
            re.sub(r'aria-labelledby="tab-(:island-r7:-\d)"', r'data-tab-key="\1"', html)
            .replace('aria-controls="tabpanel-', 'data-tab-key="')
            .replace(' role="tabpanel" id=', ' role="tabpanel" data-x=')
        ),
    ],
)
def test_tab_and_panel_may_be_linked_by_any_attribute(relink: Any) -> None:
    quotes = page_quotes(relink(HTML))
    assert quotes["4x NVIDIA A6000 48 GB"].gpu_count == 4 and len(quotes) == 13


def test_rows_that_differ_only_in_vram_are_two_offers() -> None:
    quotes = page_quotes()
    assert quotes["8x NVIDIA A100 SXM 80 GB"].price == 1.79
    assert quotes["8x NVIDIA A100 SXM 40 GB"].price == 1.29


def test_committed_clusters_are_found_from_the_outline_and_excluded() -> None:
    """The cluster tables sit under their own h3 ("NVIDIA HGX B200"); only the h2 above names
    clusters. Their rows and the script-text copy of a table are not offers."""
    prices = {q.price for q in page_quotes().values()}
    assert prices.isdisjoint({4.49, 3.79, 2.69, 2.29})
    assert committed_rows(HTML) == 4
    assert len([t for t in page_quotes() if t.startswith("8x NVIDIA B200")]) == 1


def test_em_dash_price_cells_are_not_offers() -> None:
    quotes = page_quotes()
    assert "4x NVIDIA A100 PCIe 40 GB" not in quotes and "1x NVIDIA A6000 48 GB" not in quotes


@pytest.mark.parametrize(
    ("html", "message"),
    [
        (HTML.replace("data-plan=", "data-sku="), "layout changed"),
        (HTML.replace('data-label="PRICE/GPU/HR*"', 'data-label="Hourly"'), "PRICE/GPU/HR"),
        (HTML.replace("<span>4x</span>", "<span>Four GPUs</span>"), "not a node size"),
        (re.sub(r' (aria-labelledby|aria-controls)="[^"]*"', "", HTML), "not a node size"),
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
    [
        {"error": {"code": "global/invalid-api-key"}},
        {"data": {"x": {"instance": {}}}},
        [],
        {"data": {"x": {"instance_type": ["gpu_1x_a100"]}}},
        {"data": {"x": {"instance_type": {"price_cents_per_hour": 199, "specs": [1]}}}},
        {
            "data": {
                "x": {
                    "instance_type": {"price_cents_per_hour": 199},
                    "regions_with_capacity_available": ["us-east-1"],
                }
            }
        },
    ],
)
def test_api_drift_is_a_format_error(document: Any) -> None:
    with pytest.raises(SourceFormatError):
        parse_instance_types(document, "u")


def test_page_fetch_through_a_local_server(db_path: Path) -> None:
    with serving("lambda") as server:
        local = local_settings(db_path, server)
        [summary] = run_cycle(local, configured_store(local), ["lambda"], False, lambda *_: None)
    assert summary.status is RunStatus.OK and summary.offers_seen == 13
    assert (summary.unmapped, summary.offers_duplicate) == (0, 0)
    con = duckdb.connect(str(db_path), read_only=True)
    models = dict(
        con.execute(
            "SELECT instance_type, gpu_model FROM offers WHERE instance_type LIKE '8x%A100%'"
        ).fetchall()
    )
    h100 = con.execute(
        "SELECT gpu_model, price_hour_usd FROM offers "
        "WHERE instance_type = '8x NVIDIA H100 SXM 80 GB'"
    ).fetchone()
    con.close()
    assert h100 == ("H100-SXM-80GB", pytest.approx(23.92))
    assert models == {
        "8x NVIDIA A100 SXM 80 GB": "A100-SXM-80GB",
        "8x NVIDIA A100 SXM 40 GB": "A100-SXM-40GB",
    }


def test_api_with_key_sends_bearer_and_never_stores_it(db_path: Path) -> None:
    with serving("lambda") as server:
        settings = local_settings(db_path, server, api_key="sk-live-SECRET")
        [summary] = run_cycle(
            settings, configured_store(settings), ["lambda"], False, lambda *_: None
        )
        server.faults.append(lambda path, q: (401, {}, b'{"error": "bad key sk-live-SECRET"}'))
        [failed] = run_cycle(
            settings, configured_store(settings), ["lambda"], False, lambda *_: None
        )
    assert summary.status is RunStatus.OK and summary.offers_seen == 8  # 4 global + 4 regions
    assert server.authorizations[0] == "Bearer sk-live-SECRET"
    assert failed.status is RunStatus.FAILED and "SECRET" not in (failed.error or "")
    assert b"SECRET" not in db_path.read_bytes()


def test_an_api_answer_that_is_not_json_fails_the_run_with_the_reason(db_path: Path) -> None:
    with serving("lambda") as server:
        settings = local_settings(db_path, server, api_key="sk-live-SECRET")
        server.faults.append(lambda path, q: (200, {}, b"<html>maintenance</html>"))
        [failed] = run_cycle(
            settings, configured_store(settings), ["lambda"], False, lambda *_: None
        )
    assert failed.status is RunStatus.FAILED and "invalid JSON" in (failed.error or "")
