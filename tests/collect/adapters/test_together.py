from __future__ import annotations

from pathlib import Path

import pytest

from priceadvisor.collect.adapters.base import SourceFormatError
from priceadvisor.collect.adapters.together import parse_page
from priceadvisor.collect.pages import BROWSER_HEADERS
from priceadvisor.records import RunStatus
from priceadvisor.resources import recordings_dir
from tests.conftest import query
from tests.localserver import fetch_served

HTML = (recordings_dir() / "together" / "pricing.html").read_text()


def test_gpu_cluster_on_demand_prices_per_gpu_hour() -> None:
    page = parse_page(HTML, "u")
    assert {(q.instance_type, q.pricing): q.price for q in page.quotes} == {
        ("NVIDIA HGX H100", "on_demand"): 3.99,
        ("NVIDIA HGX H200", "on_demand"): 5.99,
        ("NVIDIA HGX B200", "on_demand"): 8.19,
    }
    assert all(q.price_basis == "gpu" and q.gpu_count == 1 for q in page.quotes)


def test_reserved_tenors_are_counted_never_stored() -> None:
    page = parse_page(HTML, "u")
    assert page.skipped["reserved-tenor prices"] == 9  # 3 chips x 3 priced tenors
    assert not {3.69, 3.45, 3.19} & {q.price for q in page.quotes}


def test_rows_without_an_on_demand_price_are_counted() -> None:
    """GB200 NVL72, GB300 NVL72 and HGX B300 show an em-dash on demand: no offer, counted."""
    page = parse_page(HTML, "u")
    assert page.skipped["rows without an on-demand price (dash, contact us)"] == 3
    assert not any("NVL72" in q.instance_type or "B300" in q.instance_type for q in page.quotes)


def test_dedicated_inference_and_the_hidden_duplicate_are_left_out() -> None:
    prices = [q.price for q in parse_page(HTML, "u").quotes]
    assert 5.49 not in prices and 8.99 not in prices  # Dedicated Inference
    assert len(prices) == 3  # the hidden on-demand copy adds nothing
    unhidden = HTML.replace('<div class="hide"><div class="u-mb-64">', '<div><div class="u-mb-64">')
    assert unhidden != HTML
    # shown, its "Hardware | Hourly" header still does not read as the on-demand cluster table
    assert len(parse_page(unhidden, "u").quotes) == 3


def test_em_dash_rows_are_not_offered() -> None:
    names = {q.instance_type for q in parse_page(HTML, "u").quotes}
    assert not any("GB200" in n or "GB300" in n or "B300" in n for n in names)


@pytest.mark.parametrize(
    ("html", "message"),
    [
        (HTML.replace(">GPU Clusters<", ">Clusters<"), "found 0"),
        (HTML.replace("ON-Demand", "Hourly rate"), "found 0"),
        (HTML.replace("per GPU per hour.", "per node per hour."), "per GPU per hour"),
        (HTML.replace("$5.99", "Ask"), "cannot read a price"),
        (HTML.replace("$8.19", "$65.52/mo"), "not an hourly price"),
    ],
)
def test_layout_changes_are_format_errors(html: str, message: str) -> None:
    with pytest.raises(SourceFormatError, match=message):
        parse_page(html, "u")


def test_fetch_through_a_local_server_maps_every_gpu(db_path: Path) -> None:
    summary, server = fetch_served("together", db_path)
    assert summary.status is RunStatus.OK and summary.offers_seen == 3
    assert summary.unmapped == 0 and server.requests == ["/pricing"]
    assert server.accepts == [BROWSER_HEADERS["Accept"]]
    rows = query(db_path, "SELECT gpu_model, price_gpu_hour_usd FROM offers ORDER BY 1")
    assert rows == [("B200-180GB", 8.19), ("H100-SXM-80GB", 3.99), ("H200-141GB", 5.99)]
