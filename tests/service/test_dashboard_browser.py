"""The dashboard in a real browser: headless Chromium through selenium and chromedriver."""

from __future__ import annotations

import csv
import json
import re
import time
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from priceadvisor.service import labels, web
from priceadvisor.service.dashboard import CHART_SERIES_SHOWN, Dashboard
from priceadvisor.store.handle import Store
from tests.service import dashboard_data
from tests.service.browser import ServerThread, chromium, require_chromium

PAGES = [
    "/",
    "/?gpu=H100&pricing=spot",
    "/gpu/H100-SXM-80GB",
    "/workloads",
    "/providers",
    "/alerts",
]


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    require_chromium()
    db = dashboard_data.build(tmp_path_factory.mktemp("web") / "web.duckdb")
    app = web.build_app(Dashboard(Store(db), "test data").routes())
    with ServerThread(app) as url:
        yield url


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory, base_url: str) -> Iterator[Any]:
    with chromium(tmp_path_factory.mktemp("downloads")) as driver:
        yield driver


def wait_for(check: Callable[[], Any], timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.1)


def table_rows(driver: Any, table_id: str) -> list[list[str]]:
    script = (
        "return Array.from(document.querySelectorAll(arguments[0] + ' tbody tr'))"
        ".map(tr => Array.from(tr.cells).map(td => td.textContent.trim()));"
    )
    return driver.execute_script(script, f"#{table_id}")  # type: ignore[no-any-return]


def severe(driver: Any) -> list[dict[str, Any]]:
    return [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]


@pytest.mark.parametrize("path", PAGES)
def test_every_page_loads_without_console_errors(browser: Any, base_url: str, path: str) -> None:
    browser.get_log("browser")  # drop what earlier pages logged
    browser.get(base_url + path)
    assert browser.find_element("css selector", "main h1").text
    assert severe(browser) == []


def test_filters_change_rows_and_url(browser: Any, base_url: str) -> None:
    from selenium.webdriver.support.ui import Select

    browser.get(base_url + "/")
    everything = table_rows(browser, "offers")
    Select(browser.find_element("id", "f-pricing")).select_by_value("spot")
    wait_for(lambda: "pricing=spot" in browser.current_url)
    spot = wait_for(lambda: table_rows(browser, "offers"))
    assert "pricing=spot" in browser.current_url
    assert 0 < len(spot) < len(everything)
    assert all("spot" in row for row in spot)
    Select(browser.find_element("id", "f-provider")).select_by_value("azure")
    wait_for(lambda: "provider=azure" in browser.current_url)
    rows = table_rows(browser, "offers")
    assert [row[0] for row in rows] == ["azure"]
    # the URL alone reproduces the view: a shareable link
    browser.get(browser.current_url)
    assert table_rows(browser, "offers") == rows


def test_csv_download_holds_exactly_the_rows_shown(
    tmp_path_factory: pytest.TempPathFactory, base_url: str
) -> None:
    folder = tmp_path_factory.mktemp("csv")
    with chromium(folder) as driver:
        driver.get(base_url + "/?gpu=H100&sort=hour&per_page=25")
        shown = table_rows(driver, "offers")
        driver.find_element("link text", "CSV").click()
        target = folder / "offers.csv"
        assert wait_for(lambda: target.is_file() and target.stat().st_size > 0)
    with target.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["instance_type"] for r in rows] == [row[3] for row in shown]
    assert [r["provider"] for r in rows] == [row[0] for row in shown]


def test_hostile_provider_string_is_text(browser: Any, base_url: str) -> None:
    for path in ("/?provider=lambda", "/workloads", "/alerts"):
        browser.get(base_url + path)
        assert browser.title != "pwned"
        assert dashboard_data.EVIL in browser.find_element("tag name", "main").text
        assert browser.find_elements("css selector", "main img") == []


def test_keyboard_reaches_the_filters(browser: Any, base_url: str) -> None:
    from selenium.webdriver.common.keys import Keys

    browser.get(base_url + "/")
    body = browser.find_element("tag name", "body")
    body.send_keys(Keys.TAB)
    reached = []
    for _ in range(20):
        active = browser.switch_to.active_element
        reached.append(active.get_attribute("id") or active.tag_name)
        if active.get_attribute("id") == "f-gpu":
            break
        active.send_keys(Keys.TAB)
    assert reached[-1] == "f-gpu", reached


@pytest.mark.parametrize("path", PAGES)
def test_pages_fit_a_phone_in_dark_mode(
    tmp_path_factory: pytest.TempPathFactory, base_url: str, path: str
) -> None:
    with chromium(tmp_path_factory.mktemp("phone"), width=390, height=844) as driver:
        driver.execute_cdp_cmd(
            "Emulation.setEmulatedMedia",
            {"features": [{"name": "prefers-color-scheme", "value": "dark"}]},
        )
        driver.get(base_url + path)
        width = driver.execute_script("return document.documentElement.scrollWidth")
        inner = driver.execute_script("return window.innerWidth")
        background = driver.execute_script("return getComputedStyle(document.body).backgroundColor")
    assert inner == 390 and width <= inner
    red, green, blue = (int(v) for v in background[background.index("(") + 1 : -1].split(",")[:3])
    assert red + green + blue < 200, background


# --- What a person sees, at a desktop's and a phone's width ---------------------------------

WIDTHS = [(1280, 900), (390, 844)]
# Multi-word column names of the views, as the old pages printed them ("price gpu hour usd").
# A year of this century with a separator, standing alone (not an amount such as $2,035 or part
# of 41,000; 1,979 TFLOPS is a figure, not a year).
YEAR_WITH_COMMA = re.compile(r"(?<![\d,.$])2,0[0-3]\d(?![\d,.])")
SQL_NAMES = {
    n.replace("_", " ")
    for n in {*labels.COLUMNS, *labels.SPECS}
    if "_" in n and labels.column(n).lower() != n.replace("_", " ")  # "Instance type" is fine
}


@pytest.fixture(scope="module", params=WIDTHS, ids=lambda w: f"{w[0]}px")
def seen(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, base_url: str
) -> Iterator[Any]:
    width, height = request.param
    with chromium(tmp_path_factory.mktemp("seen"), width=width, height=height) as driver:
        yield driver


def js(driver: Any, script: str, *args: Any) -> Any:
    return driver.execute_script(script, *args)


@pytest.mark.parametrize("path", PAGES)
def test_headers_are_labels_with_units_not_sql_names(seen: Any, base_url: str, path: str) -> None:
    seen.get(base_url + path)
    heads = js(
        seen,
        "return [...document.querySelectorAll('main th, main dt')].map(e => e.textContent.trim())"
        ".concat([...document.querySelectorAll('main td[data-label]')].map(e => e.dataset.label))",
    )
    assert heads
    assert [h for h in heads if "_" in h] == []
    assert [h for h in heads if h.lower() in SQL_NAMES] == []


def test_prices_carry_the_recorded_marker_on_recorded_data(seen: Any, base_url: str) -> None:
    seen.get(base_url + "/?per_page=200")
    rows = js(
        seen,
        "return [...document.querySelectorAll('#offers tbody tr')].map(tr => ["
        "tr.querySelector('.c-provider').textContent.trim(),"
        "!!tr.querySelector('.c-price_gpu_hour_usd .tag.recorded')])",
    )
    providers = {provider for provider, _ in rows}
    assert set(dashboard_data.RECORDED) < providers
    assert all(marked == (provider in dashboard_data.RECORDED) for provider, marked in rows), rows
    marker = seen.find_element("css selector", "#offers .tag.recorded")
    assert marker.is_displayed() and marker.text == "recorded"
    seen.get(base_url + "/gpu/H100-SXM-80GB")  # vast: the cheapest H100, and recorded
    assert "recorded" in seen.find_element("id", "cheapest-now").text


@pytest.mark.parametrize(
    "path, price",
    [
        ("/", "#cheapest .c-price_gpu_hour_usd"),
        ("/?pricing=spot", "#offers .c-price_gpu_hour_usd"),
        ("/gpu/H100-SXM-80GB", "#cheapest-now .price"),
        ("/workloads", "table.workload .c-cost"),
    ],
)
def test_a_price_is_on_screen_without_sideways_scrolling(
    seen: Any, base_url: str, path: str, price: str
) -> None:
    seen.get(base_url + path)
    box = js(
        seen,
        "return arguments[0].getBoundingClientRect().toJSON()",
        seen.find_element("css selector", price),
    )
    width, height = js(seen, "return [window.innerWidth, window.innerHeight]")
    assert box["left"] >= 0 and box["right"] <= width, box
    if path != "/?pricing=spot":  # the offers come below the cheapest-per-model summary
        assert box["bottom"] <= height, box  # on the first screen, no scrolling at all
    overflowing = js(
        seen,
        "return [document.documentElement, ...document.querySelectorAll('main .scroll')]"
        ".filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.className || e.tagName)",
    )
    assert overflowing == []


def test_gpu_chart_draws_at_most_eight_distinct_series_and_a_toggle_for_the_rest(
    seen: Any, base_url: str
) -> None:
    with urllib.request.urlopen(base_url + "/api/gpus/H100-SXM-80GB") as response:
        history = json.load(response)["daily_cheapest"]
    pricing = {"spot": "spot", "on_demand": "on-demand"}
    every = {f"{row['provider']} · {pricing[row['pricing']]}" for row in history}
    assert len(every) > CHART_SERIES_SHOWN  # the sample has more lines than colours
    seen.get(base_url + "/gpu/H100-SXM-80GB")
    assert wait_for(lambda: seen.find_elements("css selector", "#chart canvas"))
    assert seen.find_element("id", "chart").get_attribute("data-series") == str(CHART_SERIES_SHOWN)
    legend = js(
        seen,
        "return [...document.querySelectorAll('#chart .u-legend .u-series')]"
        ".filter(e => e.offsetParent).map(e => [e.textContent.trim(),"
        "getComputedStyle(e.querySelector('.u-marker')).borderColor])",
    )
    assert len(legend) == CHART_SERIES_SHOWN
    assert len({colour for _, colour in legend}) == CHART_SERIES_SHOWN  # one colour each
    cheapest = sorted(history, key=lambda r: (r["day"], -r["usd"]))[-1]  # not the 8 dearest
    assert f"{cheapest['provider']} · {pricing[cheapest['pricing']]}" in {t for t, _ in legend}
    chart_height = js(
        seen, "return document.querySelector('#chart canvas').getBoundingClientRect().height"
    )
    legend_height = js(
        seen, "return document.querySelector('#chart .u-legend').getBoundingClientRect().height"
    )
    assert legend_height < chart_height
    assert _painted(seen) > 1000
    seen.find_element("id", "chart-toggle").click()
    assert wait_for(
        lambda: seen.find_element("id", "chart").get_attribute("data-series") == str(len(every))
    )
    shown = js(
        seen,
        "return [...document.querySelectorAll('#chart .u-legend .u-series')]"
        ".map(e => e.textContent.trim()).filter(t => t)",
    )
    assert set(shown) == every


def _painted(driver: Any) -> int:
    return js(  # type: ignore[no-any-return]
        driver,
        "const c = document.querySelector('#chart canvas');"
        "const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;"
        "let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i]) n++; return n;",
    )


def test_gpu_page_headline_names_the_cheapest_offer_now(seen: Any, base_url: str) -> None:
    with urllib.request.urlopen(base_url + "/api/cheapest?gpu=H100-SXM-80GB") as response:
        best = json.load(response)["cheapest"][0]
    seen.get(base_url + "/gpu/H100-SXM-80GB")
    headline = seen.find_element("id", "cheapest-now")
    assert headline.is_displayed()
    text = headline.text
    assert f"${best['price_gpu_hour_usd']:.2f}/GPU-hour" in text
    assert f"{best['provider']} · {best['region']}" in text and "spot" in text
    on_demand = seen.find_element("id", "cheapest-on-demand").text
    assert "on-demand" in on_demand.lower() and "/GPU-hour" in on_demand


def test_workloads_show_the_no_sla_badge_and_the_monthly_cost(seen: Any, base_url: str) -> None:
    seen.get(base_url + "/workloads")
    rows = js(
        seen,
        "return [...document.querySelectorAll('table.workload tbody tr:not(.terms)')].map(tr => ["
        "tr.querySelector('.c-offer').textContent.trim().split(' ')[0],"
        "!!tr.querySelector('.tag.no-sla'), tr.querySelector('.c-monthly').innerText.trim()])",
    )
    by_provider = {provider: (badge, monthly) for provider, badge, monthly in rows}
    assert by_provider["vast"][0] and not by_provider["lambda"][0]  # a marketplace; a cloud
    assert by_provider["vast"][1].startswith("$3,035/month")
    assert by_provider["lambda"][1].startswith("$3,635/month")
    assert by_provider["aws"][1] == "one-off"  # a training run is paid once
    badge = seen.find_element("css selector", "table.workload .tag.no-sla")
    assert badge.is_displayed() and badge.text == "no SLA"
    reason = seen.find_element("css selector", "table.workload tr.terms .c-reason")
    assert reason.is_displayed() and reason.text.startswith("rank moved: list #2 → #1: egress")
    listed = seen.find_element("css selector", "table.workload .c-cost .c-list")
    assert listed.is_displayed() and listed.text == "list $0.400/1M output tokens"


def test_alerts_read_as_text_with_units(seen: Any, base_url: str) -> None:
    seen.get(base_url + "/alerts")
    states = seen.find_element("id", "alerts").text
    assert "Price drop" in states and "GPU H100-SXM-80GB" in states
    assert "$3.00/GPU-hour" in states and "$2.49/GPU-hour" in states
    assert "{" not in states and '"' not in states and "price_drop" not in states
    silences = seen.find_element("id", "silences").text
    assert "provider aws" in silences and "{" not in silences


@pytest.mark.parametrize("path", PAGES)
def test_no_year_has_a_thousands_separator(seen: Any, base_url: str, path: str) -> None:
    seen.get(base_url + path)
    text = seen.find_element("tag name", "main").text
    assert YEAR_WITH_COMMA.findall(text) == []
    if path.startswith("/gpu/"):
        year = js(
            seen,
            "return [...document.querySelectorAll('#specs dt')]"
            ".find(dt => dt.textContent === 'Launch year').nextElementSibling.textContent",
        )
        assert year == "2022"
