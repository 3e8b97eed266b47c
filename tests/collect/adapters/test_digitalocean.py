from __future__ import annotations

import re
from pathlib import Path

import pytest

from priceadvisor.collect.adapters.base import SourceFormatError
from priceadvisor.collect.adapters.digitalocean import parse_page
from priceadvisor.collect.pages import BROWSER_HEADERS
from priceadvisor.records import RunStatus
from priceadvisor.resources import recordings_dir
from tests.conftest import query
from tests.localserver import fetch_served

HTML = (recordings_dir() / "digitalocean" / "pricing.html").read_text()


def quotes() -> dict[tuple[str, str], tuple[float | None, float | None]]:
    return {
        (q.instance_type, q.pricing): (q.price, q.gpu_count) for q in parse_page(HTML, "u").quotes
    }


def test_eleven_on_demand_and_eight_spot_droplets() -> None:
    found = quotes()
    assert sum(k[1] == "on_demand" for k in found) == 11
    assert sum(k[1] == "spot" for k in found) == 8


def test_prices_are_per_droplet_and_8x_means_eight_gpus() -> None:
    found = quotes()
    assert found[("NVIDIA H100 (8x)", "on_demand")] == (35.28, 8)
    assert found[("NVIDIA H100", "on_demand")] == (4.41, 1)


def test_contract_rows_are_counted_not_offered() -> None:
    page = parse_page(HTML, "u")
    assert page.skipped == {"contract rows": 4}
    assert not any(q.instance_type == "NVIDIA B300" for q in page.quotes)


def test_spot_only_chips_and_cooling_variants_stay_apart() -> None:
    found = quotes()
    assert found[("AMD MI350X (8x)", "spot")] == (32.0, 8)
    assert ("AMD MI350X", "on_demand") not in found
    assert (
        found[("NVIDIA B300, air-cooled", "spot")] == found[("NVIDIA B300, liquid-cooled", "spot")]
    )


def test_a_table_under_an_unknown_heading_fails() -> None:
    with pytest.raises(SourceFormatError, match="unknown heading"):
        parse_page(HTML.replace("Spot GPU Droplet Pricing", "Preview GPU Droplet Pricing"), "u")


@pytest.mark.parametrize(
    ("html", "message"),
    [
        (HTML.replace("$4.41 per hour", "$3,200 per month"), "not an hourly"),
        (HTML.replace("$4.41 per hour", "ask us"), "cannot read a price"),
    ],
)
def test_price_changes_are_format_errors(html: str, message: str) -> None:
    with pytest.raises(SourceFormatError, match=message):
        parse_page(html, "u")


def test_a_missing_on_demand_table_fails_rather_than_closing_its_offers() -> None:
    with pytest.raises(SourceFormatError, match="no on_demand GPU table"):
        parse_page(HTML.replace("<th>GPU</th>", "<th>Model</th>", 1), "u")


def test_fetch_through_a_local_server_maps_every_gpu(db_path: Path) -> None:
    summary, server = fetch_served("digitalocean", db_path)
    assert summary.status is RunStatus.OK and summary.offers_seen == 19
    assert summary.unmapped == 0 and server.accepts == [BROWSER_HEADERS["Accept"]]
    rows = dict(query(db_path, "SELECT instance_type, gpu_model FROM offers"))
    assert rows["NVIDIA RTX 4000"] == "RTX4000ADA-20GB" and rows["NVIDIA L40s"] == "L40S-48GB"
    per_gpu = query(
        db_path, "SELECT price_gpu_hour_usd FROM offers WHERE instance_type = 'NVIDIA H100 (8x)'"
    )
    assert per_gpu == [(4.41,)]


def test_an_unpriced_row_in_a_priced_table_is_counted_not_offered() -> None:
    html = HTML.replace("$4.41 per hour", "Sold out", 1)
    page = parse_page(html, "u")
    assert page.skipped["unpriced rows"] == 1
    assert ("NVIDIA H100", "on_demand") not in {(q.instance_type, q.pricing) for q in page.quotes}


def test_a_price_stated_per_gpu_is_stored_per_gpu() -> None:
    html = HTML.replace("$35.28 per hour", "$4.41 per GPU per hour", 1)
    [h100x8] = [q for q in parse_page(html, "u").quotes if q.instance_type == "NVIDIA H100 (8x)"]
    assert (h100x8.price, h100x8.price_basis, h100x8.gpu_count) == (4.41, "gpu", 8)


@pytest.mark.parametrize("label", ["NVIDIA H100 8x", "NVIDIA H100 x8", "NVIDIA H100 (8 GPUs)"])
def test_a_relabelled_eight_gpu_droplet_keeps_its_eight_gpus(label: str) -> None:
    html = HTML.replace("NVIDIA H100 (8x)", label, 1)
    assert html != HTML
    [quote] = [q for q in parse_page(html, "u").quotes if q.instance_type == label]
    assert (quote.gpu_count, quote.price, quote.gpu_name_raw) == (8, 35.28, "NVIDIA H100")


def test_sections_demoted_to_h3_read_the_same_offers() -> None:
    demoted = re.sub(r"<(/?)h2\b", r"<\1h3", HTML)
    assert demoted != HTML
    assert {(q.instance_type, q.pricing, q.price) for q in parse_page(demoted, "u").quotes} == {
        (q.instance_type, q.pricing, q.price) for q in parse_page(HTML, "u").quotes
    }
