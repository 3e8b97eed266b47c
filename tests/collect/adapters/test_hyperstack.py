from __future__ import annotations

from pathlib import Path

import pytest

from priceadvisor.collect.adapters.base import SourceFormatError
from priceadvisor.collect.adapters.hyperstack import parse_page
from priceadvisor.collect.pages import BROWSER_HEADERS
from priceadvisor.records import RunStatus
from priceadvisor.resources import recordings_dir
from tests.conftest import query
from tests.localserver import fetch_served

HTML = (recordings_dir() / "hyperstack" / "pricing.html").read_text()


def prices() -> dict[tuple[str, str], float | None]:
    return {(q.instance_type, q.pricing): q.price for q in parse_page(HTML, "u").quotes}


def test_thirteen_on_demand_and_five_spot_prices_per_gpu_hour() -> None:
    found = prices()
    assert sum(k[1] == "on_demand" for k in found) == 13
    assert sum(k[1] == "spot" for k in found) == 5
    assert found[("NVIDIA H100 SXM", "on_demand")] == 3.20


def test_reservation_floors_are_counted_never_stored() -> None:
    page = parse_page(HTML, "u")
    assert page.skipped == {"reservation floors": 12}
    assert 2.72 not in {q.price for q in page.quotes}  # H100 SXM "Starting from"


def test_a_sold_out_row_is_counted_not_dropped_silently() -> None:
    sold_out = HTML.replace("<span>$3.99</span>", "<span>Sold out</span>", 1)
    page = parse_page(sold_out, "u")
    assert page.skipped["GPU rows without a price (sold out, contact us)"] == 1
    assert "NVIDIA H200 SXM" not in {q.instance_type for q in page.quotes}
    assert len(page.quotes) == 17


def test_nbsp_and_leading_space_prices_parse() -> None:
    found = prices()
    assert found[("NVIDIA H100 PCIe", "spot")] == 2.00
    assert found[("NVIDIA L40", "spot")] == 0.80


def test_cpu_storage_and_menu_rows_are_not_gpu_offers() -> None:
    names = {k[0] for k in prices()}
    assert all(n.startswith("NVIDIA ") for n in names)  # no n1-cpu-*, storage or IP rows
    assert not any("GB200" in n or "GB300" in n for n in names)  # menu links, no price


def test_memory_comes_from_the_vram_column() -> None:
    quotes = {(q.instance_type, q.pricing): q for q in parse_page(HTML, "u").quotes}
    assert quotes[("NVIDIA B300", "on_demand")].gpu_memory_gb == 288
    assert quotes[("NVIDIA H100 PCIe", "spot")].gpu_memory_gb is None


@pytest.mark.parametrize(
    ("html", "message"),
    [
        (HTML.replace("Spot VM</span>", "Preemptible</span>"), "one spot GPU card, found 0"),
        (HTML.replace("Pricing Per Hour", "Hourly", 1), "one on_demand GPU card, found 0"),
        (HTML.replace("<span>$3.99</span>", "<span>$3.99 per GB per hour</span>"), "GPU-hour"),
        (HTML.replace("<span>$3.99</span>", "<span>Call us</span>"), "cannot read a price"),
    ],
)
def test_layout_changes_are_format_errors(html: str, message: str) -> None:
    with pytest.raises(SourceFormatError, match=message):
        parse_page(html, "u")


def test_fetch_through_a_local_server_maps_every_gpu(db_path: Path) -> None:
    summary, server = fetch_served("hyperstack", db_path)
    assert summary.status is RunStatus.OK and summary.offers_seen == 18
    assert summary.unmapped == 0 and server.accepts == [BROWSER_HEADERS["Accept"]]
    rows = dict(query(db_path, "SELECT instance_type || '|' || pricing, gpu_model FROM offers"))
    assert rows["NVIDIA H100|on_demand"] == rows["NVIDIA H100 PCIe|spot"] == "H100-PCIE-80GB"
    assert rows["NVIDIA H100 SXM|on_demand"] == "H100-SXM-80GB"
    assert rows["NVIDIA RTX Pro 6000 SE|spot"] == "RTXPRO6000-96GB"
