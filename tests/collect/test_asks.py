from __future__ import annotations

from priceadvisor.collect.asks import cheapest_per_market
from priceadvisor.records import RawQuote


def ask(price: float | None, available: bool | None = True, region: str = "US") -> RawQuote:
    return RawQuote(
        region=region,
        instance_type="H100 x1",
        pricing="on_demand",
        price=price,
        available=available,
    )


def test_asks_of_one_market_become_the_cheapest_with_count_and_median() -> None:
    [quote] = cheapest_per_market([ask(3.0), ask(2.0, available=False), ask(2.5)])
    assert (quote.price, quote.offer_count, quote.price_median) == (2.0, 3, 2.5)
    assert quote.available is True  # one of them can be rented now


def test_unusable_prices_pass_alone_and_never_become_the_minimum() -> None:
    quotes = cheapest_per_market([ask(2.0), ask(0.0), ask(-1.0), ask(None), ask(float("nan"))])
    priced = [q for q in quotes if q.offer_count is not None]
    assert [(q.price, q.offer_count) for q in priced] == [(2.0, 1)]
    assert len(quotes) == 5  # the four unusable asks are handed to the core to reject


def test_markets_stay_apart() -> None:
    quotes = cheapest_per_market([ask(2.0, region="US"), ask(3.0, region="DE")])
    assert sorted((q.region, q.price, q.offer_count) for q in quotes) == [
        ("DE", 3.0, 1),
        ("US", 2.0, 1),
    ]
