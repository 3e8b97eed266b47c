from __future__ import annotations

from pathlib import Path

import pytest

from priceadvisor.collect.adapters.base import SourceFormatError
from priceadvisor.collect.adapters.latitude import parse_page
from priceadvisor.collect.pages import BROWSER_HEADERS
from priceadvisor.records import RawQuote, RunStatus
from priceadvisor.resources import recordings_dir
from tests.conftest import query
from tests.localserver import fetch_served

HTML = (recordings_dir() / "latitude" / "pricing.html").read_text()


def prices() -> dict[tuple[str, str], float | None]:
    quotes = parse_page(HTML, "u").quotes
    return {(q.instance_type, q.region): q.price for q in quotes if q.pricing == "on_demand"}


def terms() -> dict[tuple[str, str, int | None], tuple[float | None, float | None]]:
    quotes = parse_page(HTML, "u").quotes
    return {
        (q.instance_type, q.region, q.term_months): (q.price, q.monthly)
        for q in quotes
        if q.pricing == "reserved"
    }


def test_usd_hourly_prices_per_node_and_country() -> None:
    assert prices() == {
        ("g4-b300-large", "united-states"): 128,
        ("g4-rtx6kpro-large", "united-states"): 48,
        ("g4-rtx6kpro-large", "australia"): 66,
        ("g4-rtx6kpro-large", "japan"): 52,
        ("g4-rtx6kpro-large", "netherlands"): 48,
        ("g3-h100-small", "united-states"): 3.37,
    }


def test_null_usd_price_is_not_offered_and_is_counted() -> None:
    page = parse_page(HTML, "u")
    assert ("g4-rtx6kpro-large", "united-kingdom") not in prices()
    assert page.skipped["regions without a USD price"] == 1


def test_brl_is_left_out_and_counted() -> None:
    page = parse_page(HTML, "u")
    assert all(q.currency == "USD" for q in page.quotes)
    assert page.skipped["BRL list prices"] == 7
    assert not {640, 240, 17378} & {q.price for q in page.quotes}


def test_month_and_year_figures_are_one_and_twelve_month_commitments() -> None:
    found = terms()
    assert len(found) == 2 * 6  # every priced region: a month and a year term
    # g3-h100-small: 3.37/h, month 1230, year 10332 (recorded)
    assert found["g3-h100-small", "united-states", 1] == (pytest.approx(1230 / 730), 1230)
    assert found["g3-h100-small", "united-states", 12] == (pytest.approx(10332 / 8760), None)
    # a longer term is never dearer per hour than a shorter one or than on demand
    for (plan, region, months), (price, _) in found.items():
        if months == 12:
            assert price is not None and price < (found[plan, region, 1][0] or 0)
        assert (price or 0) < (prices()[plan, region] or 0)


def test_cpu_plans_are_skipped_and_stock_does_not_gate_the_price() -> None:
    quotes = {(q.instance_type, q.region): q for q in parse_page(HTML, "u").quotes}
    assert not any(k[0].startswith(("c3-", "m4-")) for k in quotes)
    assert quotes[("g4-b300-large", "united-states")].available is False  # "unavailable"
    assert quotes[("g4-rtx6kpro-large", "japan")].available is True
    assert quotes[("g4-b300-large", "united-states")].stock == "unavailable"
    assert {q.stock for q in quotes.values()} <= {"high", "medium", "low", "unavailable"}


def test_cpu_plans_are_counted() -> None:
    assert parse_page(HTML, "u").skipped["CPU plans"] == 3  # c3-large-x86, c3-small, m4


def test_stock_is_read_from_the_in_stock_sites_as_well_as_the_level_word() -> None:
    japan = '\\"in_stock\\":[\\"TYO4\\"]},\\"stock_level\\":\\"low\\"'
    assert japan in HTML

    def japan_quote(html: str) -> RawQuote:
        found = parse_page(html, "u").quotes
        return next(q for q in found if (q.instance_type, q.region, q.pricing) == KEY)

    emptied = HTML.replace(japan, japan.replace('\\"TYO4\\"', ""))
    # the known word says "low" but no site has stock: not available
    assert japan_quote(emptied).available is False
    # a level word not seen before ("sold_out") is left to the (empty) site list
    sold_out = emptied.replace('[]},\\"stock_level\\":\\"low', '[]},\\"stock_level\\":\\"sold_out')
    assert sold_out != emptied and japan_quote(sold_out).available is False
    assert japan_quote(HTML).available is True


def test_an_unknown_level_word_without_a_site_list_fails() -> None:
    region = '\\"in_stock\\":[\\"TYO4\\"]},\\"stock_level\\":\\"low\\"'
    odd = HTML.replace(region, '\\"x\\":[]},\\"stock_level\\":\\"waitlist\\"')
    with pytest.raises(SourceFormatError, match="unknown stock level 'waitlist'"):
        parse_page(odd, "u")


KEY = ("g4-rtx6kpro-large", "japan", "on_demand")


def test_gpu_facts_come_from_the_plan_specs() -> None:
    quote = next(q for q in parse_page(HTML, "u").quotes if q.instance_type == "g4-b300-large")
    assert (quote.gpu_count, quote.gpu_memory_gb, quote.gpu_name_raw) == (8, 288, "NVIDIA HGX B300")


@pytest.mark.parametrize(
    ("html", "message"),
    [
        (HTML.replace("plansData", "plans"), "no plansData.servers"),
        (HTML.replace("self.__next_f.push([1,", "self.__next_f.push([2,"), "no Next.js flight"),
        (HTML.replace('\\"hour\\":3.37', '\\"hour\\":\\"3.37\\"'), "not a number"),
    ],
)
def test_layout_changes_are_format_errors(html: str, message: str) -> None:
    with pytest.raises(SourceFormatError, match=message):
        parse_page(html, "u")


def test_fetch_through_a_local_server_maps_every_gpu(db_path: Path) -> None:
    summary, server = fetch_served("latitude", db_path)
    assert summary.status is RunStatus.OK and summary.offers_seen == 6 * 3
    assert summary.unmapped == 0 and server.accepts == [BROWSER_HEADERS["Accept"]]
    rows = query(
        db_path,
        "SELECT country, price_gpu_hour_usd FROM offers WHERE instance_type = 'g4-rtx6kpro-large'"
        " AND pricing = 'on_demand' ORDER BY 1",
    )
    assert rows == [("AU", 8.25), ("JP", 6.5), ("NL", 6.0), ("US", 6.0)]
