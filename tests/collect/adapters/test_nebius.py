from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from priceadvisor.collect.adapters.base import SourceFormatError
from priceadvisor.collect.adapters.nebius import parse_page
from priceadvisor.collect.pages import BROWSER_HEADERS
from priceadvisor.records import RunStatus
from priceadvisor.resources import recordings_dir
from tests.conftest import query
from tests.localserver import fetch_served

HTML = (recordings_dir() / "nebius" / "pricing.html").read_text()
TODAY = dt.date(2026, 8, 22)
OD = "On-demand, GPU-hour"


def prices(html: str = HTML, today: dt.date = TODAY) -> dict[tuple[str, str], float | None]:
    return {(q.instance_type, q.pricing): q.price for q in parse_page(html, "u", today).quotes}


def variant(edit: Callable[[list[list[str]]], None]) -> str:
    """The page with its GPU table edited, re-encoded as the JSON string inside the JSON."""
    start = HTML.index(">", HTML.index('id="__NEXT_DATA__"')) + 1
    end = HTML.index("</script>", start)
    data = json.loads(HTML[start:end])
    entity = data["props"]["pageProps"]["__APOLLO_STATE__"]["Page:prices"]
    content = json.loads(entity["content"])
    edit(next(b for b in content["blocks"] if "table" in b)["table"]["content"])
    entity["content"] = json.dumps(content)
    return HTML[:start] + json.dumps(data) + HTML[end:]


def with_header_cell(old: str, new: str) -> str:
    return variant(lambda table: table[0].__setitem__(table[0].index(old), new))


def test_on_demand_and_preemptible_per_gpu_hour() -> None:
    assert prices() == {
        ("NVIDIA HGX B300", "on_demand"): 7.85,
        ("NVIDIA HGX B300", "spot"): 4.30,
        ("NVIDIA HGX B200", "on_demand"): 7.15,
        ("NVIDIA HGX B200", "spot"): 3.95,
    }


def test_floors_contact_us_and_dashes_are_not_offers() -> None:
    page = parse_page(HTML, "u", TODAY)
    # GB200 NVL72: "[Contact us]" twice; L40S: "--" preemptible beside its "from" floor
    assert page.skipped == {
        "'from' price floors": 1,
        "price cells without a price (contact us, dashes)": 3,
    }
    assert not any("L40S" in q.instance_type or "GB200" in q.instance_type for q in page.quotes)


def test_a_cell_of_two_en_dashes_is_no_price_not_a_failed_run() -> None:
    """Real Nebius tables write an empty cell as "––" (two en-dashes)."""

    def blank_b200_preemptible(table: list[list[str]]) -> None:
        table[2][3] = "\u2013\u2013"
        table[2][1] = "\u2013\u2013"

    found = prices(variant(blank_b200_preemptible))
    assert ("NVIDIA HGX B200", "spot") not in found
    assert found["NVIDIA HGX B200", "on_demand"] == 7.15


def test_columns_in_another_order_read_the_same() -> None:
    def reverse_columns(table: list[list[str]]) -> None:
        for row in table:
            row.reverse()

    reordered = variant(reverse_columns)
    assert reordered != HTML and prices(reordered) == prices()
    quotes = parse_page(reordered, "u", TODAY).quotes
    assert {q.vcpus for q in quotes} == {24.0, 20.0}


def test_vcpus_and_ram_are_per_gpu_shares() -> None:
    quote = next(q for q in parse_page(HTML, "u", TODAY).quotes if q.instance_type.endswith("B300"))
    assert (quote.vcpus, quote.ram_gb, quote.gpu_count) == (24, 346, 1)


def scheduled_column(table: list[list[str]]) -> None:
    table[0].append("On-demand, GPU-hour, effective September 1, 2026")
    for row, price in zip(table[1:], ["$6.95", "$6.45", "--", "--"], strict=True):
        row.append(price)


def test_a_scheduled_price_counts_only_from_its_date() -> None:
    scheduled = variant(scheduled_column)
    before = parse_page(scheduled, "u", TODAY)
    assert prices(scheduled)[("NVIDIA HGX B300", "on_demand")] == 7.85
    assert before.skipped["scheduled prices (not yet effective)"] == 1
    after = prices(scheduled, dt.date(2026, 9, 1))
    assert after[("NVIDIA HGX B300", "on_demand")] == 6.95
    assert after[("NVIDIA HGX B200", "spot")] == 3.95


def test_the_old_single_price_column_is_on_demand() -> None:
    old = with_header_cell(OD, "Price per GPU-hour")
    assert prices(old)[("NVIDIA HGX B200", "on_demand")] == 7.15


@pytest.mark.parametrize(
    ("html", "message"),
    [
        (HTML.replace("highlight-table-block", "table-block"), "no GPU highlight-table-block"),
        (HTML.replace("__NEXT_DATA__", "__DATA__"), "__NEXT_DATA__"),
        (with_header_cell(OD, "On-demand, node-hour"), "not per GPU-hour"),
        (with_header_cell(OD, "On-demand, GPU-hour, effective soon"), "cannot read the date"),
    ],
)
def test_layout_changes_are_format_errors(html: str, message: str) -> None:
    assert html != HTML
    with pytest.raises(SourceFormatError, match=message):
        parse_page(html, "u", TODAY)


def test_fetch_through_a_local_server_maps_every_gpu(db_path: Path) -> None:
    summary, server = fetch_served("nebius", db_path)
    assert summary.status is RunStatus.OK and summary.offers_seen == 4
    assert summary.unmapped == 0 and server.accepts == [BROWSER_HEADERS["Accept"]]
    rows = query(db_path, "SELECT DISTINCT gpu_model FROM offers ORDER BY 1")
    assert rows == [("B200-180GB",), ("B300-288GB",)]
