"""The dashboard and flagged offers (store/guard.py): listed with a marker and the reason in
the offers table, never in the cheapest table."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from priceadvisor.collect.adapters.runpod import parse_gpu_prices
from priceadvisor.resources import recordings_dir
from priceadvisor.service import web
from priceadvisor.service.dashboard import Dashboard
from priceadvisor.store.handle import Store
from tests.conftest import ingest_quotes
from tests.service.browser import ServerThread


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    """RunPod's recorded price list: its MI300X Community price says communityCloud: false."""
    db = tmp_path_factory.mktemp("flags") / "web.duckdb"
    document = json.loads((recordings_dir() / "runpod" / "gputypes.json").read_text())
    ingest_quotes(db, "runpod", parse_gpu_prices(document, "https://api.runpod.io/graphql"))
    app = web.build_app(Dashboard(Store(db), "test").routes())
    with ServerThread(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        yield http


def test_the_offers_table_marks_a_flagged_offer_with_its_reason(client: httpx.Client) -> None:
    offers = client.get("/api/offers", params={"gpu": "MI300X"}).json()["offers"]
    community = next(o for o in offers if o["region"] == "community")
    assert community["flag"] == "not_offered"
    assert "communityCloud: false" in community["flag_reason"]
    page = client.get("/", params={"gpu": "MI300X"}).text
    assert 'class="tag flagged"' in page and "not offered" in page


def test_the_cheapest_table_never_shows_a_flagged_offer(client: httpx.Client) -> None:
    response = client.get("/api/cheapest", params={"gpu": "MI300X"})
    rows = response.json()
    text = json.dumps(rows)
    assert response.status_code == 200 and "MI300X-192GB" in text
    assert "community" not in text and "2.39" in text  # Secure Cloud's price, not the 0.5
