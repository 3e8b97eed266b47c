from __future__ import annotations

import json
from pathlib import Path

import pytest

from priceadvisor.collect.adapters.base import SourceFormatError
from priceadvisor.collect.adapters.sesterce import parse_page
from priceadvisor.collect.pages import BROWSER_HEADERS
from priceadvisor.records import RunStatus
from priceadvisor.resources import recordings_dir
from tests.collect.adapters.page_variants import rename_classes, reorder_columns, wrap
from tests.conftest import query
from tests.localserver import fetch_served

HTML = (recordings_dir() / "sesterce" / "home.html").read_text()


def offers(html: str = HTML) -> dict[str, tuple[float | None, bool | None]]:
    return {q.instance_type: (q.price, q.available) for q in parse_page(html, "u").quotes}


def test_single_form_factor_rows_are_on_demand_per_gpu_hour() -> None:
    assert offers() == {
        "B300 SXM6": (8.48, False),  # "Limited", 0/7 live regions: priced but not available
        "B200 SXM6": (4.11, False),
        "H200 SXM5": (2.48, True),
        "L40S PCIe": (0.76, True),
    }
    quotes = parse_page(HTML, "u").quotes
    assert {(q.pricing, q.price_basis, q.gpu_count, q.region) for q in quotes} == {
        ("on_demand", "gpu", 1, "global")
    }


def test_available_now_is_the_stock_and_zero_free_is_not_available() -> None:
    stock = {q.instance_type: q.stock for q in parse_page(HTML, "u").quotes}
    assert stock == {
        "B300 SXM6": "limited",
        "B200 SXM6": "limited",
        "H200 SXM5": "9",
        "L40S PCIe": "16",
    }
    none_free = HTML.replace('<span class="bbg-up">9 GPUs</span>', "<span>0 GPUs</span>")
    assert offers(none_free)["H200 SXM5"] == (2.48, False)  # 3/31 regions, but none free now
    sold_out = HTML.replace('<span class="bbg-up">9 GPUs</span>', "<span>Sold out</span>")
    assert offers(sold_out)["H200 SXM5"] == (2.48, False)


def test_an_unknown_available_now_word_fails() -> None:
    odd = HTML.replace('<span class="bbg-up">9 GPUs</span>', "<span>Ask us</span>")
    with pytest.raises(SourceFormatError, match="Available now"):
        parse_page(odd, "u")


def test_rows_blending_sxm_and_pcie_are_counted_and_left_out() -> None:
    page = parse_page(HTML, "u")
    assert page.skipped == {"rows blending two form factors": 2}
    assert {1.83, 1.49}.isdisjoint(q.price for q in page.quotes)  # H100, A100 floors


def test_the_ticker_copies_are_never_read() -> None:
    # The marquee repeats every price twice; with the table gone nothing is left to read.
    soup_less = HTML.replace("<table", "<div").replace("</table>", "</div>")
    with pytest.raises(SourceFormatError, match="expected one live-offers table, found 0"):
        parse_page(soup_less, "u")


def test_flight_data_copies_with_escaped_dollars_are_not_read() -> None:
    cell = json.dumps(json.dumps(["$", "td", None, {"children": "$$1.83"}]))
    flight = f"<script>self.__next_f.push([1,{cell}])</script>"
    assert offers(HTML.replace("</main>", flight + "</main>")) == offers()


def test_markup_variants_read_the_same_offers() -> None:
    reordered = reorder_columns(HTML, "table", [4, 2, 0, 3, 1, 5])
    assert reordered != HTML and offers(reordered) == offers()
    wrapped = wrap(HTML, "table", "section")
    assert offers(wrapped) == offers()
    renamed = rename_classes(HTML, "bbg-price", "terminal-price")
    assert offers(renamed) == offers()


@pytest.mark.parametrize(
    ("html", "message"),
    [
        (HTML.replace('id="pricing"', 'id="rates"'), "no section with id 'pricing'"),
        (
            HTML.replace("ON-DEMAND", "RESERVED").replace("on-demand", "reserved"),
            "no longer says its prices are on-demand",
        ),
        (HTML.replace("From / GPU / hr", "From / GPU / month"), "not per GPU-hour"),
        (HTML.replace(">$2.48</span></td>", ">ask us</span></td>"), "cannot read a price"),
        (HTML.replace("3/31 regions", "several"), "cannot read live regions"),
    ],
)
def test_layout_changes_are_format_errors(html: str, message: str) -> None:
    with pytest.raises(SourceFormatError, match=message):
        parse_page(html, "u")


def test_fetch_through_a_local_server_maps_every_gpu(db_path: Path) -> None:
    summary, server = fetch_served("sesterce", db_path)
    assert summary.status is RunStatus.OK and summary.offers_seen == 4
    assert summary.unmapped == 0 and server.requests == ["/"]
    assert server.accepts == [BROWSER_HEADERS["Accept"]]
    models = dict(query(db_path, "SELECT instance_type, gpu_model FROM offers"))
    assert models == {
        "B300 SXM6": "B300-288GB",
        "B200 SXM6": "B200-180GB",
        "H200 SXM5": "H200-141GB",
        "L40S PCIe": "L40S-48GB",
    }
