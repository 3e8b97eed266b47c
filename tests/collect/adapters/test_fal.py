from __future__ import annotations

from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from priceadvisor.collect.adapters.base import SourceFormatError
from priceadvisor.collect.adapters.fal import parse_page
from priceadvisor.collect.pages import BROWSER_HEADERS
from priceadvisor.records import RunStatus
from priceadvisor.resources import recordings_dir
from tests.collect.adapters.page_variants import rename_classes, reorder_columns, wrap
from tests.conftest import query
from tests.localserver import fetch_served

HTML = (recordings_dir() / "fal" / "pricing.html").read_text()
TABLE = HTML[HTML.index("<table") : HTML.index("</table>") + len("</table>")]


def prices(html: str = HTML) -> dict[str, float | None]:
    return {q.instance_type: q.price for q in parse_page(html, "u").quotes}


def test_list_prices_are_on_demand_per_gpu_hour() -> None:
    assert prices() == {
        "B300": 8.50,
        "B200": 6.25,
        "H200": 4.50,
        "H100": 4.50,
        "RTX PRO 6000": 2.99,
    }
    quotes = parse_page(HTML, "u").quotes
    assert {(q.pricing, q.price_basis, q.gpu_count) for q in quotes} == {("on_demand", "gpu", 1)}
    assert [q.gpu_memory_gb for q in quotes] == [288, 180, 141, 80, 96]


def test_as_low_as_floors_are_counted_and_never_the_price() -> None:
    page = parse_page(HTML, "u")
    assert page.skipped == {"'as low as' contact-sales floors": 5}
    assert {4.49, 3.49, 2.10, 1.89, 1.10}.isdisjoint(prices().values())


def test_model_api_lookalikes_and_a_second_copy_are_not_offers() -> None:
    api = (
        TABLE.replace(">GPU<", ">Model<")
        .replace(">VRAM<", ">Unit<")
        .replace(">List Price<", ">Price<")
        .replace(">As low as<", ">Output per $1<")
    )
    html = HTML.replace("</main>", api + TABLE + "</main>")
    assert prices(html) == prices()
    assert parse_page(html, "u").skipped["duplicate copies of the GPU table"] == 1


def test_unpriced_list_cells_are_no_offer() -> None:
    html = HTML.replace("$2.99/h", "Contact sales", 1)
    assert "RTX PRO 6000" not in prices(html) and len(prices(html)) == 4


def test_markup_variants_read_the_same_prices() -> None:
    assert prices(reorder_columns(HTML, "table", [3, 1, 2, 0])) == prices()
    assert prices(wrap(HTML, "table")) == prices()
    assert prices(rename_classes(HTML, "ml-4", "gpu-name")) == prices()


@pytest.mark.parametrize(
    ("html", "message"),
    [
        (HTML.replace(">List Price<", ">Price<"), "expected one GPU | VRAM | List Price table"),
        (HTML.replace("$4.50/h", "$4.50/mo", 1), "list price not per hour"),
        (HTML.replace("$6.25/h", "from $6.25/h"), "list price not per hour"),
        (HTML.replace(">288GB<", ">lots<"), "cannot read the GPU or its VRAM"),
        (HTML.replace("$8.50/h", "ask"), "cannot read a price"),
    ],
)
def test_layout_changes_are_format_errors(html: str, message: str) -> None:
    with pytest.raises(SourceFormatError, match=message):
        parse_page(html, "u")


def test_fetch_through_a_local_server_maps_every_gpu(db_path: Path) -> None:
    summary, server = fetch_served("fal", db_path)
    assert summary.status is RunStatus.OK and summary.offers_seen == 5
    assert summary.unmapped == 0 and server.requests == ["/pricing"]
    assert server.accepts == [BROWSER_HEADERS["Accept"]]
    models = dict(query(db_path, "SELECT instance_type, gpu_model FROM offers"))
    assert models == {
        "B300": "B300-288GB",
        "B200": "B200-180GB",
        "H200": "H200-141GB",
        "H100": "H100-SXM-80GB",
        "RTX PRO 6000": "RTXPRO6000-96GB",
    }


def test_unpriced_list_cells_are_counted() -> None:
    page = parse_page(HTML.replace("$2.99/h", "Contact sales", 1), "u")
    assert page.skipped["rows without a list price"] == 1


@pytest.mark.parametrize(
    ("chip", "name"),
    [("H100", "NVIDIA H100"), ("MI300X", "AMD MI300X"), ("AMD MI325X", "AMD MI325X")],
)
def test_the_vendor_is_nvidia_only_where_the_row_implies_it(chip: str, name: str) -> None:
    html = HTML.replace('<span class="ml-4">H100</span>', f'<span class="ml-4">{chip}</span>', 1)
    [quote] = [q for q in parse_page(html, "u").quotes if q.instance_type == chip]
    assert quote.gpu_name_raw == name


def test_renamed_headers_and_a_dropped_floor_column_read_the_same_prices() -> None:
    renamed = HTML.replace(">List Price<", ">List Price (per hour)<").replace(
        ">VRAM<", ">GPU memory<"
    )
    assert renamed != HTML
    assert prices(renamed) == prices()
    soup = BeautifulSoup(HTML, "html.parser")
    for row in soup.select("table tr"):
        row.find_all(["th", "td"])[3].decompose()  # the "As low as" column, header and cells
    assert "As low as" not in str(soup)
    assert prices(str(soup)) == prices()
