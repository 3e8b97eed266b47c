from __future__ import annotations

import json
from pathlib import Path

import pytest

from priceadvisor.collect.adapters.base import SourceFormatError
from priceadvisor.collect.adapters.massedcompute import parse_flight
from priceadvisor.collect.pages import BROWSER_HEADERS, flight_text
from priceadvisor.records import RunStatus
from priceadvisor.resources import recordings_dir
from tests.conftest import query
from tests.localserver import fetch_served

HTML = (recordings_dir() / "massedcompute" / "pricing.html").read_text()
FLIGHT = flight_text(HTML)


def row(key: str, price: str | None, count: int = 8) -> str:
    """A mobile-card row in the recording's shape, with a price cell or a "Request" button."""
    cell = (
        ["$", "span", None, {"children": [price, ["$", "small", None, {"children": "/hr"}]]}]
        if price is not None
        else ["$", "a", None, {"href": "/contact", "children": "Request"}]
    )
    badge = ["$", "span", None, {"children": ["×", str(count)]}]
    return json.dumps(["$", "div", key, {"children": [badge, cell]}], ensure_ascii=False)


def offers(flight: str = FLIGHT) -> dict[str, tuple[float | None, float | None]]:
    return {q.instance_type: (q.price, q.gpu_count) for q in parse_flight(flight, "u").quotes}


def test_rows_are_node_hour_prices_for_the_stated_count() -> None:
    assert offers() == {
        "B300 SXM6 x8": (52.80, 8),  # desktop row
        "B200 SXM6 x8": (43.46, 8),  # mobile cards
        "H200 NVL (141GB) NVLink x4": (15.28, 4),
        "H100 (80GB) x1": (2.73, 1),
    }
    quotes = parse_flight(FLIGHT, "u").quotes
    assert {(q.pricing, q.price_basis) for q in quotes} == {("on_demand", "node")}


def test_a_price_in_a_deferred_chunk_never_lands_in_another_row() -> None:
    # H100 ×8 "Request" row, then on the next flight line a deferred cell of the H100 NVL row.
    flight = FLIGHT + "\n" + row("H100 (80GB)-x 8-0", None)[:-1] + ',"$L2f"]\n'
    flight += '2f:["$","td",null,{"children":["$$21.12",["$","small",null,{"children":"/hr"}]]}]\n'
    page = parse_flight(flight, "u")
    assert "H100 (80GB) x8" not in offers(flight)
    assert page.skipped["rows without a price of their own (on request)"] == 1


def test_desktop_and_mobile_copies_collapse_or_fail_when_they_disagree() -> None:
    same = FLIGHT + row("B300 SXM6-mobile-x 8-0", "$$52.80")
    assert offers(same) == offers()
    assert parse_flight(same, "u").skipped["duplicate copies (desktop and mobile)"] == 1
    different = FLIGHT + row("B300 SXM6-mobile-x 8-0", "$$48.00")
    with pytest.raises(SourceFormatError, match="B300 SXM6 ×8: desktop and mobile prices"):
        parse_flight(different, "u")


def test_a_priced_row_labelled_sold_out_is_not_an_offer() -> None:
    key, price_cell_end = '"H100 (80GB)-mobile-x 1-0"', '"/hr"}]]}]'
    at = FLIGHT.index(price_cell_end, FLIGHT.index(key)) + len(price_cell_end)
    label = ',["$","span",null,{"children":"Sold out"}]'
    flight = FLIGHT[:at] + label + FLIGHT[at:]
    quotes = {q.instance_type: q for q in parse_flight(flight, "u").quotes}
    h100 = quotes["H100 (80GB) x1"]
    assert (h100.price, h100.available) == (2.73, False)
    assert h100.not_offered_reason == "Massed Compute's row says 'Sold out'"
    assert quotes["B300 SXM6 x8"].not_offered_reason is None


def test_the_flight_split_differently_reads_the_same() -> None:
    # Next.js cuts the flight into pushes anywhere, even inside a row key or a price.
    pieces = [FLIGHT[i : i + 97] for i in range(0, len(FLIGHT), 97)]
    scripts = "".join(f"<script>self.__next_f.push([1,{json.dumps(p)}])</script>" for p in pieces)
    html = f"<!DOCTYPE html><html><body><section>{scripts}</section></body></html>"
    assert offers(flight_text(html)) == offers()


@pytest.mark.parametrize(
    ("flight", "message"),
    [
        (FLIGHT.replace('"/hr"', '"/mo"', 1), r"price not per hour \(unit '/mo'\)"),
        (FLIGHT.replace("$$2.73", "$$call"), "cannot read the price 'call'"),
        (FLIGHT.replace("-x ", "-qty "), "no pricing rows"),
    ],
)
def test_layout_changes_are_format_errors(flight: str, message: str) -> None:
    with pytest.raises(SourceFormatError, match=message):
        parse_flight(flight, "u")


def test_a_page_without_flight_data_is_a_format_error() -> None:
    with pytest.raises(SourceFormatError, match=r"no Next\.js flight data"):
        flight_text(HTML.replace("self.__next_f.push", "window.push"))


def test_fetch_through_a_local_server_maps_every_gpu(db_path: Path) -> None:
    summary, server = fetch_served("massedcompute", db_path)
    assert summary.status is RunStatus.OK and summary.offers_seen == 4
    assert summary.unmapped == 0 and server.requests == ["/pricing"]
    assert server.accepts == [BROWSER_HEADERS["Accept"]]
    rows = query(db_path, "SELECT gpu_model, price_gpu_hour_usd FROM offers ORDER BY 1")
    assert rows == [
        ("B200-180GB", pytest.approx(5.4325)),
        ("B300-288GB", pytest.approx(6.60)),
        ("H100-SXM-80GB", pytest.approx(2.73)),
        ("H200-NVL-141GB", pytest.approx(3.82)),
    ]
