from __future__ import annotations

import json
from pathlib import Path

import pytest

from priceadvisor.collect.adapters.base import SourceFormatError
from priceadvisor.collect.adapters.sfcompute import parse_page
from priceadvisor.collect.pages import BROWSER_HEADERS
from priceadvisor.records import RunStatus
from priceadvisor.resources import recordings_dir
from tests.conftest import cli, query
from tests.localserver import fetch_served

HTML = (recordings_dir() / "sfcompute" / "market.html").read_text()


def test_newest_market_average_is_stored_as_market_with_its_day() -> None:
    [quote] = parse_page(HTML, "u").quotes
    assert (quote.instance_type, quote.pricing, quote.price) == ("H100", "market", 2.12)
    assert quote.price_date == "2026-07-15" and quote.price_basis == "gpu"


def test_zero_averages_mean_no_trades_and_are_counted() -> None:
    page = parse_page(HTML, "u")
    assert page.skipped == {"GPU types with no trades on the newest day": 2}  # H200, B200
    assert 0 not in {q.price for q in page.quotes}


def test_the_newest_day_wins_whatever_the_order() -> None:
    shuffled = HTML.replace("2026-07-15T23", "2026-07-10T23")  # the first entry is now the oldest
    [quote] = parse_page(shuffled, "u").quotes
    assert (quote.price_date, quote.price) == ("2026-07-14", 2.11)


@pytest.mark.parametrize(
    ("html", "message"),
    [
        (HTML.replace("pricesByHardwareType", "prices"), "no pricesByHardwareType"),
        (HTML.replace('\\"$D2026-07-14', '\\"2026-07-14'), "market day is not"),
        (HTML.replace('\\"avg\\":2.11', '\\"avg\\":\\"2.11\\"'), "market day is not"),
    ],
)
def test_layout_changes_are_format_errors(html: str, message: str) -> None:
    assert html != HTML
    with pytest.raises(SourceFormatError, match=message):
        parse_page(html, "u")


def test_fetch_stores_a_market_row_that_cheapest_answers_leave_out(
    capsys: pytest.CaptureFixture[str], db_path: Path
) -> None:
    summary, server = fetch_served("sfcompute", db_path)
    assert summary.status is RunStatus.OK and summary.offers_seen == 1
    assert summary.unmapped == 0 and server.accepts == [BROWSER_HEADERS["Accept"]]
    rows = query(db_path, "SELECT gpu_model, pricing, CAST(price_date AS VARCHAR) FROM offers")
    assert rows == [("H100-SXM-80GB", "market", "2026-07-15")]
    _, default, _ = cli(capsys, "--db", str(db_path), "prices", "--format", "json")
    assert json.loads(default) == []
    _, asked, _ = cli(capsys, "--db", str(db_path), "prices", "--pricing", "market", "-f", "json")
    assert [r["pricing"] for r in json.loads(asked)] == ["market"]
