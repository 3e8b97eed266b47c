"""The dashboard in a real browser: headless Chromium through selenium and chromedriver."""

from __future__ import annotations

import csv
import json
import time
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from priceadvisor.service import web
from priceadvisor.service.dashboard import Dashboard
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


def test_gpu_chart_draws_one_series_per_provider_and_pricing(browser: Any, base_url: str) -> None:
    with urllib.request.urlopen(base_url + "/api/gpus/H100-SXM-80GB") as response:
        history = json.load(response)["daily_cheapest"]
    expected = {(row["provider"], row["pricing"]) for row in history}
    browser.get(base_url + "/gpu/H100-SXM-80GB")
    canvas = wait_for(lambda: browser.find_elements("css selector", "#chart canvas"))
    assert canvas
    assert browser.find_element("id", "chart").get_attribute("data-series") == str(len(expected))
    legend = browser.find_elements("css selector", "#chart .u-legend .u-series")
    labels = {e.text.strip() for e in legend}
    pricing = {"spot": "spot", "on_demand": "on-demand"}
    assert labels == {f"{p} · {pricing[kind]}" for p, kind in expected}
    painted = browser.execute_script(
        "const c = document.querySelector('#chart canvas');"
        "const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;"
        "let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i]) n++; return n;"
    )
    assert painted > 1000


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
