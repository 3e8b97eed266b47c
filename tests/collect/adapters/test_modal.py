from __future__ import annotations

from pathlib import Path

import pytest

from priceadvisor.collect.adapters.base import SourceFormatError
from priceadvisor.collect.adapters.modal import parse_page
from priceadvisor.collect.pages import BROWSER_HEADERS
from priceadvisor.records import RunStatus
from priceadvisor.resources import recordings_dir
from tests.conftest import query
from tests.localserver import fetch_served

HTML = (recordings_dir() / "modal" / "pricing.html").read_text()


def prices(html: str = HTML) -> dict[str, float | None]:
    return {q.instance_type: q.price for q in parse_page(html, "u").quotes}


def test_per_second_prices_convert_exactly_to_the_hour() -> None:
    assert prices() == {
        "Nvidia H100": 3.9492,
        "Nvidia A100, 80 GB": 2.4984,
        "Nvidia L40S": 1.9512,
        "Nvidia L4": 0.7992,
        "Nvidia T4": 0.5904,
    }


def test_cpu_memory_plans_and_meta_are_not_gpu_offers() -> None:
    names = set(prices())
    assert not any("core" in n or "Memory" in n or "Team" in n for n in names)


def test_the_reader_does_not_depend_on_the_markup() -> None:
    flat = HTML.replace("<span", "<p").replace("</span>", "</p>").replace('class="row"', "")
    assert prices(flat) == prices()


def test_the_label_in_a_paragraph_is_read_as_the_live_page_writes_it() -> None:
    """The live page: `<p>GPU Tasks</p>`, not a heading, and the CPU list's label likewise."""
    live = HTML.replace("<h3>GPU Tasks</h3>", '<p class="label">GPU Tasks</p>')
    live = live.replace("<h3>CPU</h3>", '<p class="label">CPU</p>')
    live = live.replace("<h3>Memory</h3>", '<p class="label">Memory</p>')
    assert "<h3>" not in live
    assert prices(live) == prices()


def test_the_label_nested_in_a_span_of_a_flat_list_ends_at_the_next_list() -> None:
    flat = HTML.replace("<h3>GPU Tasks</h3>", "<div><span><b>GPU Tasks</b></span></div>")
    flat = flat.replace("<h3>CPU</h3>", "<div>CPU</div>").replace('<div class="card">', "<div>")
    assert prices(flat) == prices()


def test_hourly_prices_are_read_too() -> None:
    assert prices(HTML.replace("$0.000164 / sec", "$0.59 / hr"))["Nvidia T4"] == 0.59


@pytest.mark.parametrize(
    ("html", "message"),
    [
        (HTML.replace("GPU Tasks", "Accelerators"), "no 'GPU Tasks' label"),
        (HTML.replace("$0.", "0."), "no GPU price after the 'GPU Tasks' label"),
        (HTML.replace("$0.000542 / sec", "$1.95 / month"), "not a price per GPU-second"),
        (HTML.replace('<span class="name">Nvidia H100</span>', ""), "has no name"),
    ],
)
def test_layout_changes_are_format_errors(html: str, message: str) -> None:
    with pytest.raises(SourceFormatError, match=message):
        parse_page(html, "u")


def test_fetch_through_a_local_server_maps_every_gpu(db_path: Path) -> None:
    summary, server = fetch_served("modal", db_path)
    assert summary.status is RunStatus.OK and summary.offers_seen == 5
    assert summary.unmapped == 0 and server.accepts == [BROWSER_HEADERS["Accept"]]
    rows = dict(query(db_path, "SELECT instance_type, gpu_model FROM offers"))
    assert rows["Nvidia A100, 80 GB"] == "A100-SXM-80GB" and rows["Nvidia T4"] == "T4-16GB"
