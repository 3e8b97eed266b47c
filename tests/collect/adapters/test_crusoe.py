from __future__ import annotations

from pathlib import Path

import pytest

from priceadvisor.collect.adapters.base import SourceFormatError
from priceadvisor.collect.adapters.crusoe import parse_page
from priceadvisor.collect.pages import BROWSER_HEADERS
from priceadvisor.records import RunStatus
from priceadvisor.resources import recordings_dir
from tests.conftest import query
from tests.localserver import fetch_served

HTML = (recordings_dir() / "crusoe" / "pricing.html").read_text()


def prices() -> dict[tuple[str, str], float | None]:
    return {(q.instance_type, q.pricing): q.price for q in parse_page(HTML, "u").quotes}


def test_six_priced_gpu_rows_per_gpu_hour() -> None:
    assert prices() == {
        ("NVIDIA H200 HGX", "on_demand"): 4.29,
        ("NVIDIA H100 HGX", "on_demand"): 3.90,
        ("NVIDIA A100 SXM", "on_demand"): 2.30,
        ("NVIDIA A100 PCIe", "on_demand"): 2.00,
        ("NVIDIA L40S", "on_demand"): 1.50,
        ("AMD MI300X", "on_demand"): 3.45,
    }


def test_contact_sales_rows_and_spot_column_are_no_offers() -> None:
    keys = prices()
    assert not any(k[1] == "spot" for k in keys)  # every spot cell says "Contact sales"
    assert not any("GB200" in k[0] or "B200" in k[0] or "MI355X" in k[0] for k in keys)


def test_self_serve_cpu_and_token_rows_are_not_gpu_offers() -> None:
    values = set(prices().values())
    assert not values & {5.50, 6.00, 0.04, 0.09, 0.08, 0.50}


def test_a100_form_factors_stay_apart_and_empty_tags_are_skipped() -> None:
    quotes = {q.instance_type: q for q in parse_page(HTML, "u").quotes}
    assert quotes["NVIDIA A100 PCIe"].gpu_name_raw == "NVIDIA A100 PCIe 80GB"
    assert quotes["NVIDIA L40S"].gpu_name_raw == "NVIDIA L40S 48GB"  # empty form-factor tag


def test_a_price_not_per_gpu_hour_is_refused() -> None:
    with pytest.raises(SourceFormatError, match="not per GPU-hour"):
        parse_page(HTML.replace("$3.90/GPU-hr", "$31.20/hr"), "u")


@pytest.mark.parametrize(
    ("html", "message"),
    [
        (HTML.replace("GPU model", "Accelerator"), "found 0"),
        (HTML.replace("GPU instances pricing", "Compute"), "found 0"),
        (HTML.replace('role="listitem"', 'role="row"'), "found 0"),
        (HTML.replace("$4.29/GPU-hr", "Ask us"), "cannot read a price"),
    ],
)
def test_layout_changes_are_format_errors(html: str, message: str) -> None:
    with pytest.raises(SourceFormatError, match=message):
        parse_page(html, "u")


def test_fetch_through_a_local_server_maps_every_gpu(db_path: Path) -> None:
    summary, server = fetch_served("crusoe", db_path)
    assert summary.status is RunStatus.OK and summary.offers_seen == 6
    assert summary.unmapped == 0 and server.requests == ["/cloud/pricing"]
    assert server.accepts == [BROWSER_HEADERS["Accept"]]
    models = dict(query(db_path, "SELECT instance_type, gpu_model FROM offers"))
    assert models["NVIDIA A100 PCIe"] == "A100-PCIE-80GB"
    assert models["NVIDIA A100 SXM"] == "A100-SXM-80GB"


def test_contact_sales_cells_are_counted_not_offered() -> None:
    page = parse_page(HTML, "u")
    assert (
        page.skipped["on_demand cells without a price (contact sales)"] == 3
    )  # GB200, B200, MI355X
    assert page.skipped["spot cells without a price (contact sales)"] == 9  # the whole column


def test_a_floor_price_is_not_a_price() -> None:
    html = HTML.replace("$3.90/GPU-hr", "from $3.90/GPU-hr", 1)
    with pytest.raises(SourceFormatError, match="not per GPU-hour"):
        parse_page(html, "u")
