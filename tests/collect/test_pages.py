"""The page toolkit on the markup variants real pricing pages use (trimmed from real shapes)."""

from __future__ import annotations

import httpx
import pytest
import respx

from priceadvisor.collect.http import HttpSession, MemoryValidatorCache, build_client
from priceadvisor.collect.pages import (
    BROWSER_HEADERS,
    Price,
    div_grids,
    find_grids,
    flight_text,
    get_page,
    html_tables,
    json_ld,
    json_values,
    next_data,
    parse_price,
    section_heading,
    tab_label,
    visible_soup,
)
from priceadvisor.collect.source import SourceFormatError, require_complete_html
from priceadvisor.config import HttpSettings

PAGE_URL = "https://provider.example.test/pricing"

# Together's shape: a <div class="hide"> duplicate of the on-demand table, rows wrapped in
# Webflow list <div>s inside <tbody>, a colspan=4 "Contact us" cell, an em-dash row.
TOGETHER_LIKE = """<html><body>
<h2>GPU Clusters</h2>
<div class="hide"><p class="h4">On-demand</p><table><thead><th>Hardware</th><th>Hourly</th>
</thead><tbody><div role="list"><tr><td>HGX H100</td><td>$3.99</td></tr></div></tbody></table></div>
<div><h4>Reserved</h4><table><thead><tr><th rowspan="2"><p>Hardware</p></th><th>ON-Demand</th>
<th colspan="4">Reserved</th></tr><tr><th>Pay as you go</th><th>7-30 days</th><th>31-90 days</th>
<th>91-180 days</th><th>181+ days</th></tr></thead><tbody><div role="list">
<div role="listitem"><tr><td><span>NVIDIA </span><span>HGX H100</span></td><td>$3.99</td>
<td> $3.45</td><td>$3.15</td><td>$2.85</td><td>Contact us</td></tr></div>
<div role="listitem"><tr><td>HGX B300</td><td>—</td><td colspan="4">Contact us</td></tr></div>
</div></tbody></table></div></body></html>"""


def test_hidden_duplicate_table_is_ignored_and_colspan_is_expanded() -> None:
    grids = html_tables(visible_soup(TOGETHER_LIKE))
    [(grid, cols)] = find_grids(grids, model="hardware", on_demand="on-?demand", t1="7-30")
    assert grid.headers[:3] == ("Hardware", "ON-Demand Pay as you go", "Reserved 7-30 days")
    rows = list(grid.records(cols | {"last": 5}))
    assert rows[0] == {"model": "NVIDIA HGX H100", "on_demand": "$3.99", "t1": "$3.45",
                       "last": "Contact us"}  # fmt: skip
    assert rows[1] == {"model": "HGX B300", "on_demand": "—", "t1": "Contact us",
                       "last": "Contact us"}  # fmt: skip


def test_tables_are_found_by_header_meaning_not_position() -> None:
    html = """<table><tr><th>Price per hour</th><th>GPU model</th></tr>
    <tr><td>$1.00</td><td>L40S</td></tr></table>
    <table><tr><th>Storage</th><th>Price</th></tr><tr><td>NVMe</td><td>$0.10</td></tr></table>"""
    [(grid, cols)] = find_grids(html_tables(visible_soup(html)), model="gpu", price="price")
    assert list(grid.records(cols)) == [{"model": "L40S", "price": "$1.00"}]


def test_exact_duplicate_tables_are_kept_once() -> None:
    table = "<table><tr><th>GPU</th><th>Price</th></tr><tr><td>A</td><td>$1</td></tr></table>"
    assert len(find_grids(html_tables(visible_soup(table * 2)), gpu="gpu", price="price")) == 1


def one_table(price: str, name: str = "A") -> str:
    row = f"<tr><td>{name}</td><td>{price}</td></tr>"
    return f"<table><tr><th>GPU</th><th>Price</th></tr>{row}</table>"


@pytest.mark.parametrize(
    "markup",
    [
        f"<div hidden>{one_table('$9')}</div>",
        f'<div style="display: none">{one_table("$9")}</div>',
        f'<div aria-hidden="true">{one_table("$9")}</div>',
        f'<div class="w-condition-invisible">{one_table("$9")}</div>',
    ],
)
def test_hidden_elements_are_ignored(markup: str) -> None:
    assert html_tables(visible_soup(markup)) == []


# Hyperstack's shape: HubSpot <div> grid, "&nbsp;$1.40", " $0.80".
HYPERSTACK_LIKE = """<div class="card"><h3><span>Spot VM</span> Pricing</h3>
<div class="main"><div class="head"><div class="hi"><span>GPU Model </span></div>
<div class="hi"><span>Spot VM</span></div></div><div class="row">
<div class="item"><div class="col"><span>NVIDIA H100 PCIe</span></div>
<div class="col"><span>&nbsp;$1.40</span></div></div>
<div class="item"><div class="col"><span>NVIDIA A100 PCIe</span></div>
<div class="col"><span> $0.80</span></div></div></div></div></div>"""


def test_div_grid_and_nbsp_prices() -> None:
    grids = div_grids(visible_soup(HYPERSTACK_LIKE), ".main", ".head .hi", ".row .item", ".col")
    [(grid, cols)] = find_grids(grids, model="gpu model", price="spot")
    prices = {r["model"]: parse_price(r["price"]) for r in grid.records(cols)}
    assert prices["NVIDIA H100 PCIe"] == Price(1.40, None, False, False, False)
    assert prices["NVIDIA A100 PCIe"] is not None and prices["NVIDIA A100 PCIe"].amount == 0.80
    assert section_heading(grid.element, ("h3",)) == "Spot VM Pricing"


@pytest.mark.parametrize(
    ("text", "amount", "period", "per_gpu", "floor", "other"),
    [
        ("$3.45", 3.45, None, False, False, False),
        ("\u00a0$1.40", 1.40, None, False, False, False),
        ("  $ 1,234.50/hr", 1234.50, "hour", False, False, False),
        ("$4.29/GPU-hr", 4.29, "hour", True, False, False),
        ("$2.99/GPU/hr", 2.99, "hour", True, False, False),
        ("$5.50 per hour", 5.50, "hour", False, False, False),
        ("from $1.82", 1.82, None, False, True, False),
        ("Starting from $2.72", 2.72, None, False, True, False),
        ("$0.000096774 per GB per hour", 0.000096774, "hour", False, False, True),
        ("$0.90 / M tokens", 0.90, None, False, False, True),
        ("$0.000583/sec", 0.000583, "second", False, False, False),
        ("$2,419.20/mo", 2419.20, "month", False, False, False),
    ],
)
def test_price_cells(
    text: str, amount: float, period: str | None, per_gpu: bool, floor: bool, other: bool
) -> None:
    assert parse_price(text) == Price(amount, period, per_gpu, floor, other)


@pytest.mark.parametrize(
    "text",
    [
        "Contact sales",
        "Contact us",
        "—",
        "–",
        "––",  # two en-dashes: how real Nebius tables write an empty cell
        "— —",
        "--",
        "N/A",
        "n/a",
        "",
        " ",
        "[Contact us](https://x.y/s)",
    ],
)
def test_unpriced_cells_are_none(text: str) -> None:
    assert parse_price(text) is None


def test_an_unreadable_cell_is_a_format_error() -> None:
    with pytest.raises(SourceFormatError, match="cannot read a price"):
        parse_price("Call for quote")


# WAI-ARIA tab pattern: tab buttons linked to panels by aria-controls, or panels pointing back
# with aria-labelledby; inactive panels carry `hidden` and are still content.
ARIA_TABS = f"""<div role="tablist"><button role="tab" id="t1" aria-controls="p1">1x GPU</button>
<button role="tab" id="t8" aria-controls="p8">8x GPU</button>
<button role="tab" id="tb">Bare metal</button></div>
<div role="tabpanel" id="p1">{one_table("$2", "H100")}</div>
<div role="tabpanel" id="p8" hidden>{one_table("$16", "H100")}</div>
<div role="tabpanel" aria-labelledby="tb" hidden>{one_table("$15", "H100")}</div>
<div class="w-tab-menu"><a data-w-tab="Tab 2" class="w-tab-link"><div>4x GPU</div></a></div>
<div class="w-tab-content"><div data-w-tab="Tab 2" class="w-tab-pane">
{one_table("$8", "H100")}</div></div>"""


def test_node_size_comes_from_aria_and_webflow_tabs() -> None:
    grids = find_grids(html_tables(visible_soup(ARIA_TABS)), gpu="gpu", price="price")
    labels = [(tab_label(g.element), g.rows[0][1]) for g, _ in grids]
    assert labels == [("1x GPU", "$2"), ("8x GPU", "$16"), ("Bare metal", "$15"), ("4x GPU", "$8")]


def test_a_table_outside_any_tab_has_no_label() -> None:
    [grid] = html_tables(visible_soup("<table><tr><th>a</th></tr><tr><td>b</td></tr></table>"))
    assert tab_label(grid.element) is None


def test_section_heading_skips_nested_sub_headings() -> None:
    html = """<h2>GPU Clusters</h2><div><h4>Reserved</h4><div><h3>Details</h3></div>
    <table><tr><th>GPU</th></tr><tr><td>x</td></tr></table></div>
    <h2>Dedicated Inference</h2><table><tr><th>GPU</th></tr><tr><td>y</td></tr></table>"""
    first, second = html_tables(visible_soup(html))
    assert section_heading(first.element) == "GPU Clusters"
    assert section_heading(first.element, ("h3", "h4")) == "Details"
    assert section_heading(second.element) == "Dedicated Inference"


# SF Compute / Latitude shape: JSON inside JS string literals, every quote written \".
FLIGHT = (
    '<html><body><script>self.__next_f.push([1,"2d:[\\"$\\",\\"div\\",null,'
    '{\\"prices\\":{\\"H100\\":[{\\"avg\\":2.12}]}}"])</script>'
    '<script>self.__next_f.push([1,",{\\"plan\\":\\"g3\\",\\"name\\":\\"a \\\\\\"b\\\\\\"\\"}"])'
    "</script></body></html>"
)


def test_flight_data_is_unescaped_across_pushes() -> None:
    text = flight_text(FLIGHT)
    assert json_values(text, "prices") == [{"H100": [{"avg": 2.12}]}]
    assert json_values(text, "name") == ['a "b"']


def test_next_data_and_json_ld() -> None:
    html = """<script id="__NEXT_DATA__" type="application/json">{"props":{"pageProps":{"x":1}}}
    </script><script type="application/ld+json">{"@type":"Product","name":"MI300X"}</script>
    <script type="application/ld+json">{broken</script>"""
    assert next_data(html)["props"]["pageProps"] == {"x": 1}
    assert json_ld(html) == [{"@type": "Product", "name": "MI300X"}]


def test_missing_embedded_data_is_a_format_error() -> None:
    with pytest.raises(SourceFormatError, match="__NEXT_DATA__"):
        next_data("<html></html>")
    with pytest.raises(SourceFormatError, match="flight data"):
        flight_text("<html></html>")


def test_a_truncated_page_is_refused() -> None:
    with pytest.raises(SourceFormatError, match="truncated"):
        require_complete_html(TOGETHER_LIKE[: len(TOGETHER_LIKE) // 2])


@pytest.mark.anyio
@respx.mock
async def test_get_page_asks_as_a_browser_once_and_revalidates() -> None:
    page = "<html><body>$1.00</body></html>"
    route = respx.get(PAGE_URL).mock(
        side_effect=[
            httpx.Response(200, text=page, headers={"ETag": '"v1"'}),
            httpx.Response(304),
        ]
    )
    async with build_client(HttpSettings()) as client:
        session = HttpSession(client, HttpSettings(), MemoryValidatorCache())
        assert await get_page(session, PAGE_URL) == page
        assert await get_page(session, PAGE_URL) == page  # 304: the cached page again
    first, second = (call.request.headers for call in route.calls)
    assert first["Accept"] == BROWSER_HEADERS["Accept"] and first["User-Agent"].startswith(
        "Mozilla"
    )
    assert second["If-None-Match"] == '"v1"' and session.requests == 2


@pytest.mark.anyio
@respx.mock
async def test_get_page_refuses_a_page_cut_short() -> None:
    respx.get(PAGE_URL).respond(200, text="<html><body><table><tr><td>$1")
    async with build_client(HttpSettings()) as client:
        with pytest.raises(SourceFormatError, match="truncated"):
            await get_page(HttpSession(client, HttpSettings()), PAGE_URL)
