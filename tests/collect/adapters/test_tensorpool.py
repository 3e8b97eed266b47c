from __future__ import annotations

from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from priceadvisor.collect.adapters.base import SourceFormatError
from priceadvisor.collect.adapters.tensorpool import parse_page
from priceadvisor.collect.pages import BROWSER_HEADERS
from priceadvisor.records import RunStatus
from priceadvisor.resources import recordings_dir
from tests.collect.adapters.page_variants import rename_classes, wrap
from tests.conftest import query
from tests.localserver import fetch_served

HTML = (recordings_dir() / "tensorpool" / "pricing.html").read_text()
OWN = "bg-[#B8E7F5]"


def prices(html: str = HTML) -> dict[str, float | None]:
    return {q.instance_type: q.price for q in parse_page(html, "u").quotes}


def test_tensorpool_column_is_on_demand_per_gpu_hour() -> None:
    assert prices() == {
        "B200 SXM": 4.99,
        "H200 SXM": 2.99,
        "B300 SXM": 5.49,
        "H100 SXM": 1.99,
        "L40S": 1.49,
    }
    quotes = parse_page(HTML, "u").quotes
    assert {(q.pricing, q.price_basis, q.gpu_count) for q in quotes} == {("on_demand", "gpu", 1)}


def test_competitor_columns_are_never_offers() -> None:
    # Lambda's H100 $3.29 and the hyperscalers' $14 and $18 are on the same rows.
    assert {3.29, 14.0, 18.0, 10.0, 3.0}.isdisjoint(prices().values())


def test_cpu_row_is_counted_and_left_out() -> None:
    page = parse_page(HTML, "u")
    assert page.skipped == {"CPU rows": 1}
    assert 0.015 not in {q.price for q in page.quotes}


def test_na_cells_and_commitment_blocks_are_not_offers() -> None:
    unlisted = HTML.replace(f'{OWN} border-t border-[#e0e0e0]">$2.99/hr', f'{OWN} border-t">N/A')
    assert "H200 SXM" not in prices(unlisted)
    assert parse_page(unlisted, "u").skipped["cells without a price (n/a)"] == 1
    sold_out = HTML.replace(
        f'{OWN} border-t border-[#e0e0e0]">$2.99/hr', f'{OWN} border-t">Sold out'
    )
    assert parse_page(sold_out, "u").skipped == {
        "CPU rows": 1,
        "cells without a price (sold out)": 1,
    }
    reserved = HTML.replace(">ON-DEMAND<", ">1-YEAR RESERVED<")
    page = parse_page(reserved, "u")
    assert page.quotes == [] and page.skipped["rows under '1-YEAR RESERVED'"] == 6


def swap_columns(html: str, first: int, second: int, width: int = 5) -> str:
    """The flat grid with two columns' cells (header included) exchanged in every row."""
    soup = BeautifulSoup(html, "html.parser")
    grid = soup.select_one("div.md\\:grid")
    assert grid is not None
    cells = grid.find_all(True, recursive=False)
    for start in range(0, len(cells), width):
        a, b = cells[start + first], cells[start + second]
        marker = soup.new_tag("i")
        a.replace_with(marker)
        b.replace_with(a)
        marker.replace_with(b)
    return str(soup)


def test_mobile_cards_repeating_the_prices_are_not_read() -> None:
    # Illustrative card markup (the capture cut the real one): the same chips and prices
    # without "/hr", shown below the md breakpoint.
    cards = "".join(
        f'<div class="md:hidden"><div>{gpu}</div><div>TensorPool</div><div>{price}</div></div>'
        for gpu, price in [("B200 SXM", "$4.99"), ("H100 SXM", "$1.99"), ("H100 SXM", "$3.29")]
    )
    assert prices(HTML.replace("</main>", cards + "</main>")) == prices()


def test_markup_variants_read_the_same_prices() -> None:
    assert prices(swap_columns(HTML, 2, 3)) == prices()  # the header, not the place, decides
    assert prices(wrap(HTML, "div.md\\:grid")) == prices()
    assert prices(rename_classes(HTML, OWN, "bg-[#C0FFEE]")) == prices()
    grid = HTML[HTML.index('<div class="hidden') : HTML.index("</main>")]
    doubled = HTML.replace("</main>", grid + "</main>")
    assert prices(doubled) == prices()
    assert parse_page(doubled, "u").skipped["duplicate grid copies"] == 1


def test_headers_that_no_longer_line_up_with_their_cells_fail() -> None:
    # "TensorPool" now heads Lambda's cells while its highlighted cells sit under "Lambda Labs".
    shifted = HTML.replace(">Lambda Labs<", ">TEMP<").replace(">TensorPool<", ">Lambda Labs<")
    shifted = shifted.replace(">TEMP<", ">TensorPool<")
    with pytest.raises(SourceFormatError, match="highlighted column is headed 'Lambda Labs'"):
        parse_page(shifted, "u")


@pytest.mark.parametrize(
    ("html", "message"),
    [
        (HTML.replace(">TensorPool<", ">Our price<"), "expected one TensorPool price grid"),
        (HTML.replace("grid-cols-[200px_200px_1fr_1fr_1fr]", "grid"), "column count"),
        (HTML.replace("$1.99/hr", "$1.99/mo"), "not an hourly list price"),
        (HTML.replace("$5.49/hr", "from $5.49/hr"), "not an hourly list price"),
        (HTML.replace("$1.49/hr", "ask us"), "cannot read a price"),
    ],
)
def test_layout_changes_are_format_errors(html: str, message: str) -> None:
    with pytest.raises(SourceFormatError, match=message):
        parse_page(html, "u")


def test_fetch_through_a_local_server_maps_every_gpu(db_path: Path) -> None:
    summary, server = fetch_served("tensorpool", db_path)
    assert summary.status is RunStatus.OK and summary.offers_seen == 5
    assert summary.unmapped == 0 and server.requests == ["/pricing"]
    assert server.accepts == [BROWSER_HEADERS["Accept"]]
    models = dict(query(db_path, "SELECT instance_type, gpu_model FROM offers"))
    assert models == {
        "B200 SXM": "B200-180GB",
        "H200 SXM": "H200-141GB",
        "B300 SXM": "B300-288GB",
        "H100 SXM": "H100-SXM-80GB",
        "L40S": "L40S-48GB",
    }
