"""What the dashboard and its JSON API show agrees with the rows it comes from (mostly over a
real server on 127.0.0.1): a commitment is never labelled on-demand, the GPU chart and the
"cheapest now" headline leave out the same prices, "cheapest per GPU model" covers every model,
offers in two zones are told apart, a price change compares with the price before, and days and
silences are judged in UTC whatever the host's zone."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import httpx
import pytest
from bs4 import BeautifulSoup

from priceadvisor.records import RawQuote, RunStatus
from priceadvisor.service import web
from priceadvisor.service.dashboard import Dashboard
from priceadvisor.store import connections
from priceadvisor.store import dashboard_reads as queries
from priceadvisor.store.handle import Store
from tests.conftest import ingest_quotes
from tests.service.browser import ServerThread

# Raw GPU names of thirteen catalog models: one more than the Prices page lists.
MODELS = [
    "H100 SXM",
    "H200",
    "B200",
    "A100 80GB PCIe",
    "L40S",
    "L4",
    "A10G",
    "T4",
    "V100",
    "RTX 4090",
    "RTX 3090",
    "RTX A6000",
    "MI300X",
]


def _quote(instance: str, raw: str, price: float, **kw: object) -> RawQuote:
    base: dict[str, object] = {"region": "global", "gpu_count": 1.0, "pricing": "on_demand"}
    return RawQuote(instance_type=instance, gpu_name_raw=raw, price=price, **(base | kw))  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    db = tmp_path_factory.mktemp("consistency") / "web.duckdb"
    # Oracle's preemptible price is derived from its on-demand one (50 %), not published.
    oracle = [
        _quote("BM.GPU.H100.8", "H100 SXM", 3.0),
        _quote("BM.GPU.H100.8", "H100 SXM", 1.5, pricing="spot", price_rule="50 % of on-demand"),
    ]
    ingest_quotes(db, "oracle", oracle)
    lambda_ = [_quote(f"gpu_1x_{i}", raw, 2.0 + i / 10) for i, raw in enumerate(MODELS)]
    ingest_quotes(db, "lambda", lambda_)
    latitude = [
        _quote("g3-h100-small", "H100", 2.5, region="united-states"),
        _quote(
            "g3-h100-small", "H100", 1.8, region="united-states", pricing="reserved", term_months=12
        ),
    ]
    ingest_quotes(db, "latitude", latitude)
    # TensorDock prices each location of a country apart: two offers told apart by zone only.
    tensordock = [
        _quote("h100-sxm5-80gb x1", "H100 SXM", price, region="US", zone=zone)
        for zone, price in (("loc-dallas", 2.29), ("loc-chicago", 2.39))
    ]
    ingest_quotes(db, "tensordock", tensordock)
    _rank_every_offer_of(db, "tensordock")
    app = web.build_app(Dashboard(Store(db), "test").routes())
    with ServerThread(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        yield http


def _rank_every_offer_of(db: Path, provider: str) -> None:
    """A ranking of one workload over `provider`'s offers, cheapest first."""
    with connections.writer(db) as con:
        con.execute(
            """INSERT INTO core.advice (workload, task, rank, provider, region, zone,
                instance_type, gpu_model, gpu_count, pricing, price_hour_usd, cost_usd,
                tokens_per_s, hours, binding, low, high, spot_overhead, computed_at, fetched_at)
            SELECT 'ft', 'finetune', row_number() OVER (ORDER BY price_hour_usd), provider,
                region, zone, instance_type, gpu_model, gpu_count, pricing, price_hour_usd,
                10 * price_hour_usd, 1000, 10, 'compute', 8, 12, 1, now()::TIMESTAMP, last_seen
            FROM offers WHERE provider = ?""",
            [provider],
        )


def _json(client: httpx.Client, path: str, **params: str) -> Any:
    response = client.get(path, params=params)
    assert response.status_code == 200, response.text
    return response.json()


def _cells(html: str, table_id: str, column: str, within: str = "") -> list[str]:
    """The text of one column's cells, by its `c-<column>` class, in the table of that id (or
    the first one `within` selects)."""
    page = BeautifulSoup(html, "html.parser")
    table = page.select_one(within) if within else page.find(id=table_id)
    assert table is not None, table_id or within
    return [td.get_text(" ", strip=True) for td in table.select(f"td.c-{column}")]


def test_a_commitment_is_labelled_a_commitment_not_on_demand(client: httpx.Client) -> None:
    html = client.get("/", params={"pricing": "reserved"}).text
    assert _cells(html, "offers", "pricing") == ["commitment"]
    assert _cells(html, "cheapest", "pricing") == ["commitment"]
    # the cheapest commitment names its term, as the offer it comes from does
    assert _cells(html, "cheapest", "term_months") == ["12"]
    form = BeautifulSoup(html, "html.parser").find(id="f-pricing")
    assert form is not None
    chosen = form.find("option", selected=True)
    assert chosen is not None and chosen["value"] == "reserved"


def test_pricing_error_names_every_kind(client: httpx.Client) -> None:
    response = client.get("/api/offers", params={"pricing": "yearly"})
    assert response.status_code == 400
    assert "reserved" in response.json()["error"]


def test_the_gpu_chart_leaves_out_derived_prices_as_the_headline_does(
    client: httpx.Client,
) -> None:
    gpu = _json(client, "/api/gpus/H100-SXM-80GB")
    series = {(row["provider"], row["pricing"]) for row in gpu["daily_cheapest"]}
    assert ("oracle", "spot") not in series
    assert ("oracle", "on_demand") in series
    html = client.get("/gpu/H100-SXM-80GB").text
    headline = BeautifulSoup(html, "html.parser").find(id="cheapest-now")
    assert headline is not None and "$1.50" not in headline.get_text()


def test_cheapest_per_model_api_lists_every_model(client: httpx.Client) -> None:
    cheapest = _json(client, "/api/cheapest")["cheapest"]
    models = {row["gpu_model"] for row in cheapest}
    offered = {row["gpu_model"] for row in _json(client, "/api/offers", per_page="200")["offers"]}
    assert len(offered) > 12
    assert models == offered


def test_the_prices_page_says_when_it_shows_only_the_cheapest_models(
    client: httpx.Client,
) -> None:
    html = client.get("/").text
    table = BeautifulSoup(html, "html.parser").find(id="cheapest")
    assert table is not None
    assert len(table.select("tbody tr")) == 12
    caption = table.find("caption")
    assert caption is not None and "12 cheapest of 13 GPU models" in caption.get_text()


def test_offers_in_two_zones_of_a_region_are_told_apart(client: httpx.Client) -> None:
    """Every listing names the zone: without it the two rows read as one offer at two prices."""
    rows = _json(client, "/api/offers", provider="tensordock")["offers"]
    assert sorted((row["zone"], row["price_hour_usd"]) for row in rows) == [
        ("loc-chicago", 2.39),
        ("loc-dallas", 2.29),
    ]
    csv_text = client.get("/prices.csv", params={"provider": "tensordock"}).text
    assert "loc-dallas" in csv_text and "loc-chicago" in csv_text
    html = client.get("/", params={"provider": "tensordock"}).text
    assert sorted(_cells(html, "offers", "zone")) == ["loc-chicago", "loc-dallas"]
    assert _cells(html, "cheapest", "zone") == ["loc-dallas"]
    gpu = client.get("/gpu/H100-SXM-80GB").text
    assert "loc-dallas" in _cells(gpu, "offers", "zone")
    # where no row has a zone, no empty Zone column
    assert _cells(client.get("/", params={"provider": "lambda"}).text, "offers", "zone") == []


@pytest.fixture
def ranked_then_moved(db_path: Path) -> Iterator[httpx.Client]:
    """An offer priced 3.00, 2.50, 2.00 then 1.50 an hour, ranked while it cost 2.50 (advice is
    ranked when `advise` runs, which may be several fetches ago); its list cost and effective
    cost differ by a hundredth of a cent."""
    for price in (3.0, 2.5, 2.0, 1.5):
        ingest_quotes(db_path, "lambda", [_quote("gpu_1x_h100", "H100 SXM", price)])
    with connections.writer(db_path) as con:
        con.execute(
            """INSERT INTO core.advice (workload, task, rank, provider, region, instance_type,
                gpu_model, gpu_count, pricing, price_hour_usd, cost_usd, tokens_per_s, hours,
                binding, low, high, spot_overhead, computed_at, fetched_at, list_cost_usd,
                effective_cost_usd, terms_applied)
            SELECT 'ft', 'finetune', 1, provider, region, instance_type, gpu_model, 1,
                pricing, price_hour_usd, 43.9874, 1000, 17.6, 'compute', 35, 55, 1,
                now()::TIMESTAMP, last_seen, 43.9873, 43.9874,
                ['billed per second; minimum per start unknown']
            FROM price_history WHERE provider = 'lambda' AND price_hour_usd = 2.5"""
        )
    app = web.build_app(Dashboard(Store(db_path), "test").routes())
    with ServerThread(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        yield http


def test_previous_price_is_the_one_before_the_ranked_price_not_a_later_one(
    ranked_then_moved: httpx.Client,
) -> None:
    (row,) = _json(ranked_then_moved, "/api/workloads")["advice"]
    assert (row["price_hour_usd"], row["previous_price_hour_usd"]) == (2.5, 3.0)
    html = ranked_then_moved.get("/workloads").text
    assert _cells(html, "", "change", within="table.workload") == ["-16.7 %"]


def test_a_list_cost_that_reads_as_the_cost_is_not_shown_beside_it(
    ranked_then_moved: httpx.Client,
) -> None:
    html = ranked_then_moved.get("/workloads").text
    assert _cells(html, "", "cost", within="table.workload") == ["$43.99 /run"]


def test_ranked_offers_in_two_zones_of_a_region_are_told_apart(client: httpx.Client) -> None:
    advice = _json(client, "/api/workloads")["advice"]
    assert [(row["zone"], row["price_hour_usd"]) for row in advice] == [
        ("loc-dallas", 2.29),
        ("loc-chicago", 2.39),
    ]
    offers = _cells(client.get("/workloads").text, "", "offer", within="table.workload")
    assert [("loc-dallas" in o, "loc-chicago" in o) for o in offers] == [
        (True, False),
        (False, True),
    ]


def test_a_gpu_page_cut_at_200_offers_says_how_many_there_are(db_path: Path) -> None:
    quotes = [_quote(f"h100-{i}", "H100 SXM", 2.0 + i / 1000, region=f"r{i}") for i in range(203)]
    ingest_quotes(db_path, "lambda", quotes)
    app = web.build_app(Dashboard(Store(db_path), "test").routes())
    with ServerThread(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        gpu = _json(http, "/api/gpus/H100-SXM-80GB")
        html = http.get("/gpu/H100-SXM-80GB").text
    assert (len(gpu["offers"]), gpu["offers_total"]) == (200, 203)
    cut = BeautifulSoup(html, "html.parser").find(id="offers-cut")
    assert cut is not None and "200 cheapest of 203" in cut.get_text()


def test_providers_page_names_the_source_of_the_prices_shown(db_path: Path) -> None:
    """Recorded prices, then a live fetch that failed: the prices shown are still the recorded
    ones, and the Providers page says so as the Prices page does."""
    ingest_quotes(db_path, "lambda", [_quote("gpu_1x_h100", "H100 SXM", 2.49)])
    with connections.writer(db_path) as con:
        con.execute("UPDATE core.fetch_runs SET source = 'recorded'")
    ingest_quotes(db_path, "lambda", [], status=RunStatus.FAILED, error="connection refused")
    app = web.build_app(Dashboard(Store(db_path), "test").routes())
    with ServerThread(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        (provider,) = _json(http, "/api/providers")["providers"]
        page = http.get("/providers").text
        prices = http.get("/").text
    assert (provider["last_status"], provider["source"]) == ("failed", "recorded")
    assert _cells(page, "providers", "source") == ["recorded"]
    assert "recorded" in _cells(prices, "offers", "price_gpu_hour_usd")[0]


def test_the_gpu_chart_counts_days_in_utc_whatever_the_hosts_zone(db_path: Path) -> None:
    """Stored times are UTC; on a host in another zone (DuckDB's TimeZone is the host's) an
    offer opened now is still on today's UTC date: not on a day not begun yet, not left out."""
    ingest_quotes(db_path, "lambda", [_quote("gpu_1x_h100", "H100 SXM", 2.49)])
    before = dt.datetime.now(dt.UTC)
    # a zone whose date is not UTC's now: 14 hours ahead late in the day, 11 behind early
    zone = "Pacific/Kiritimati" if before.hour >= 10 else "Pacific/Pago_Pago"
    with duckdb.connect(str(db_path), read_only=True) as con:
        con.execute(f"SET TimeZone = '{zone}'")
        history = queries.gpu_daily_cheapest(con, "H100-SXM-80GB")
    after = dt.datetime.now(dt.UTC)  # the test may straddle midnight
    days = [day for day, _, _, _ in history.rows]
    assert days in ([before.date()], [after.date()])


@pytest.mark.parametrize(
    ("zone", "expires_in", "active"),
    [("Pacific/Kiritimati", 2, True), ("Pacific/Pago_Pago", -2, False)],
)
def test_a_silence_is_active_until_it_expires_in_utc_whatever_the_hosts_zone(
    db_path: Path, zone: str, expires_in: int, active: bool
) -> None:
    """The dashboard's list and the public view (`sql`, the documented contract) alike."""
    ingest_quotes(db_path, "lambda", [_quote("gpu_1x_h100", "H100 SXM", 2.49)])
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    with connections.writer(db_path) as con:
        con.execute(
            "INSERT INTO core.silences (matchers, comment, created_at, expires_at) "
            "VALUES ('{}', 'deploy', ?, ?)",
            [now - dt.timedelta(hours=3), now + dt.timedelta(hours=expires_in)],
        )
    with duckdb.connect(str(db_path), read_only=True) as con:
        con.execute(f"SET TimeZone = '{zone}'")
        table = queries.silences(con)
        assert con.execute("SELECT active FROM silences").fetchall() == [(active,)]
    assert [row[table.columns.index("active")] for row in table.rows] == [active]


def test_one_offer_not_rentable_in_hundreds_is_not_shown_as_none(db_path: Path) -> None:
    quotes = [
        _quote(f"h100-{i}", "H100 SXM", 2.0, region=f"r{i}", available=i > 0) for i in range(201)
    ]
    ingest_quotes(db_path, "lambda", quotes)
    app = web.build_app(Dashboard(Store(db_path), "test").routes())
    with ServerThread(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        page = http.get("/providers").text
    assert _cells(page, "providers", "not_rentable") == ["1/201 (<1 %)"]
