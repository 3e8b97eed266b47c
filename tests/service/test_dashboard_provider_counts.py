"""The Providers page's offer counts against the Prices rows their links lead to: a number a
user clicks is the number of rows they get, and every current offer is behind one link."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from bs4 import BeautifulSoup

from priceadvisor.records import RawQuote
from priceadvisor.service import web
from priceadvisor.service.dashboard import Dashboard
from priceadvisor.store.handle import Store
from tests.conftest import ingest_quotes
from tests.service.browser import ServerThread


def _quote(instance: str, price: float, **kw: object) -> RawQuote:
    base: dict[str, object] = {"region": "global", "gpu_count": 1.0, "pricing": "on_demand"}
    return RawQuote(instance_type=instance, gpu_name_raw="H100 SXM", price=price, **(base | kw))  # type: ignore[arg-type]


@pytest.fixture
def client(db_path: Path) -> Iterator[httpx.Client]:
    """One provider with every kind of row the Prices page shows apart: published on-demand and
    spot, a flagged offer, a price derived by a rule and two commitments; and a market average."""
    quotes = [
        _quote("a", 3.0),
        _quote("b", 2.5, region="us-east"),
        _quote("c", 1.2, pricing="spot"),
        _quote("d", 2.0, region="eu", not_offered_reason="sold out on the source's page"),
        _quote("a", 1.5, pricing="spot", region="eu", price_rule="50 % of on-demand"),
        _quote("a", 2.1, pricing="reserved", term_months=12),
        _quote("a", 1.8, pricing="reserved", term_months=36),
    ]
    ingest_quotes(db_path, "oracle", quotes)
    # market averages are SF Compute's only
    ingest_quotes(
        db_path,
        "sfcompute",
        [_quote("m", 1.9, pricing="market", price_date=dt.datetime.now(dt.UTC).date().isoformat())],
    )
    app = web.build_app(Dashboard(Store(db_path), "test").routes())
    with ServerThread(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        yield http


def _prices_rows(http: httpx.Client, href: str) -> tuple[int, int, int]:
    """What the Prices page at `href` says matches, the rows it lists (on one page of 200) and
    the rows /api/offers gives for the same query."""
    query = parse_qs(urlsplit(href).query) | {"per_page": ["200"]}
    page = http.get("/", params=query)
    assert page.status_code == 200, page.text
    html = BeautifulSoup(page.text, "html.parser")
    said = re.search(r"(\d+) match", " ".join(h.get_text() for h in html.find_all("h2")))
    listed = [tr for tr in html.select("#offers tbody tr") if not tr.select("td[colspan]")]
    offers = http.get("/api/offers", params=query).json()["offers"]
    return (int(said.group(1)) if said else -1), len(listed), len(offers)


def _rows(http: httpx.Client) -> dict[str, BeautifulSoup]:
    """Each provider's row of the Providers table, by name."""
    page = BeautifulSoup(http.get("/providers").text, "html.parser")
    return {
        r.select_one("td.c-provider").get_text(strip=True): r
        for r in page.select("#providers tbody tr")
    }


def test_the_providers_offer_count_is_the_rows_its_link_shows(client: httpx.Client) -> None:
    row = _rows(client)["oracle"]
    name_link = row.select_one("td.c-provider a")
    first_number = int(re.findall(r"\d+", row.select_one("td.c-offers").get_text(" "))[0])
    # the provider's own link: published on-demand and spot, the flagged offer among them
    assert _prices_rows(client, str(name_link["href"])) == (first_number,) * 3
    assert first_number == 4


def test_every_count_linked_from_the_providers_page_is_the_rows_it_shows(
    client: httpx.Client,
) -> None:
    links = [a for row in _rows(client).values() for a in row.select("td.c-offers a")]
    assert len(links) == 4, "the published, with derived, commitments and market links"
    for link in links:
        (number,) = re.findall(r"\d+", link.get_text())
        assert _prices_rows(client, str(link["href"])) == (int(number),) * 3, link


def test_every_offer_of_a_provider_is_behind_a_link_of_its_row(client: httpx.Client) -> None:
    """The links' rows together are every current offer (the API's `offers`): none is left
    where no link leads."""
    providers = client.get("/api/providers").json()["providers"]
    for provider, row in _rows(client).items():
        keys: set[tuple[object, ...]] = set()
        for link in row.select("td.c-offers a"):
            params = parse_qs(urlsplit(str(link["href"])).query) | {"per_page": ["200"]}
            offers = client.get("/api/offers", params=params).json()["offers"]
            keys |= {
                (o["region"], o["instance_type"], o["pricing"], o["term_months"]) for o in offers
            }
        # a set: the derived link shows the published rows too
        expected = next(p["offers"] for p in providers if p["provider"] == provider)
        assert len(keys) == expected, provider
    assert [p["offers"] for p in providers] == [7, 1]


@pytest.mark.parametrize(
    "query",
    [
        "",
        "provider=oracle",
        "derived=1",
        "pricing=reserved",
        "pricing=reserved&derived=1",
        "pricing=market",
        "pricing=spot&derived=1",
        "available=1",
    ],
)
def test_the_prices_page_lists_as_many_offers_as_it_says_match(
    client: httpx.Client, query: str
) -> None:
    """The home page's count, with derived prices, commitments, a market average and a flagged
    offer in the store: the number it says is the rows it lists."""
    said, listed, api = _prices_rows(client, f"/?{query}")
    assert said == listed == api and said > 0
