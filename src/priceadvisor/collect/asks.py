"""Marketplace asks folded into one quote per market.

A marketplace (Lium, gpu.ai) lists individual machines that appear and vanish within minutes;
storing each would turn the change log into churn. Asks that share a market — the same region,
zone, instance type and pricing — become one quote at the cheapest price, with the number of
asks (`offer_count`) and their median beside it. An ask without a usable price (missing, not a
number, zero or negative) is passed on alone, so the core rejects and counts it instead of it
vanishing inside a minimum or becoming one.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import replace

from priceadvisor.records import RawQuote

Market = tuple[str, str, str, str]  # (region, zone, instance_type, pricing)


def cheapest_per_market(asks: Iterable[RawQuote]) -> list[RawQuote]:
    markets: dict[Market, list[RawQuote]] = defaultdict(list)
    unpriced: list[RawQuote] = []
    for ask in asks:
        if _usable(ask.price):
            markets[ask.region, ask.zone, ask.instance_type, ask.pricing].append(ask)
        else:
            unpriced.append(ask)
    return [_fold(group) for group in markets.values()] + unpriced


def _fold(group: list[RawQuote]) -> RawQuote:
    prices = [float(a.price) for a in group if a.price is not None]
    cheapest = min(group, key=lambda a: a.price or 0.0)
    known = [a.available for a in group if a.available is not None]
    return replace(
        cheapest,
        offer_count=len(group),
        price_median=statistics.median(prices),
        available=any(known) if known else None,
    )


def _usable(price: float | None) -> bool:
    return price is not None and price > 0  # NaN compares False too
