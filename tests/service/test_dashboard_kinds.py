"""The Prices page and API answer with rentable, published prices unless asked for more: market
averages and prices derived by a rule never pass for a cheapest offer."""

from __future__ import annotations

from pathlib import Path

import pytest

from priceadvisor.records import RawQuote
from priceadvisor.store import connections
from priceadvisor.store import dashboard_reads as queries
from tests.conftest import ingest_quotes


@pytest.fixture
def kinds_db(db_path: Path) -> Path:
    base = {"region": "global", "gpu_name_raw": "H100 SXM", "gpu_count": 1.0}
    quotes = [
        RawQuote(instance_type="a", pricing="on_demand", price=3.0, **base),
        RawQuote(instance_type="a", pricing="spot", price=0.5, price_rule="50 %", **base),
    ]
    ingest_quotes(db_path, "oracle", quotes)
    market = RawQuote(
        instance_type="h100", pricing="market", price=2.1, price_date="2026-07-15", **base
    )
    ingest_quotes(db_path, "sfcompute", [market])
    return db_path


def _prices(path: Path, q: queries.OfferQuery) -> list[tuple[str, float]]:
    with connections.reader(path) as con:
        table, _ = queries.offers_page(con, q)
    pricing, price = table.columns.index("pricing"), table.columns.index("price_gpu_hour_usd")
    return [(row[pricing], row[price]) for row in table.rows]


def test_derived_prices_only_when_asked(kinds_db: Path) -> None:
    assert _prices(kinds_db, queries.OfferQuery()) == [("on_demand", 3.0)]
    both = _prices(kinds_db, queries.OfferQuery(include_derived=True))
    assert sorted(both) == [("on_demand", 3.0), ("spot", 0.5)]
    with connections.reader(kinds_db) as con:
        cheapest = queries.cheapest_per_model(con, queries.OfferQuery())
    assert [row[-1] for row in cheapest.rows] == [3.0]


def test_market_averages_only_when_asked(kinds_db: Path) -> None:
    assert all(p != "market" for p, _ in _prices(kinds_db, queries.OfferQuery()))
    assert _prices(kinds_db, queries.OfferQuery(pricing="market")) == [("market", 2.1)]
