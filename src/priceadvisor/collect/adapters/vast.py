"""Vast.ai marketplace offers (`bundles`, no key needed).

Format: real captures of `POST https://console.vast.ai/api/v0/bundles/`. One POST per page:
`{"gpu_name": {"eq": NAME}, "rentable": {"eq": true}, "rented": {"eq": false},
"external": {"eq": false}, "type": "on-demand", "order": [["dph_total", "asc"]], "limit": 64,
"dph_total": {"gte": CURSOR}}` for every GPU name in the manifest, then one more walk with
`{"gpu_name": {"notin": [those names]}}` that discovers every other GPU the marketplace offers
(a new GPU then reaches `doctor` as unmapped instead of never being asked for). The server
returns at most ~64 offers whatever the limit, so pages walk up the price: the next page starts
at the last page's highest price, offers already seen are dropped by id; a full page that
brings no offer not seen yet (more than a page of asks at one price) fails the run rather than
stop early and lose the asks above that price. Bursts get 429, so
requests are spaced (manifest source.request_spacing) and 429s retried with Retry-After.

Prices are per offer (node): on-demand is `dph_total` (GPU + the default storage); interruptible
is `min_bid` plus the same storage cost (`dph_total - dph_base`), as the bid floor covers the GPU
only. Each host sets its own disk and bandwidth prices: `storage_cost` ($/GB-month) and
`inet_up_cost` ($/GB sent out) are kept with the quote as the offer's own disk and egress
prices (those of the ask its price comes from), which the effective cost of a run counts
(sizing.effective). `dph_total` already holds the disk the search allocates by default (8 GB in
the real captures: `storage_total_cost` = `storage_cost` × 8 / 720 h). `geolocation` ends with
the ISO country code ("Washington, US", ", US"); `gpu_ram` is MB per GPU.

Stored as an aggregate, not every ask: one quote per (GPU name, GPU count, host verification,
country, pricing) at the lowest price, with the number of asks (`offer_count`) and their median.
Verification (`verification`: verified / unverified / deverified) is part of the instance type
("H100 SXM x8 verified"): users choose on it, and a verified host's price must not hide behind
an unverified one's. Individual asks appear and vanish
within minutes; storing each would turn the change log into churn, while the aggregate answers
"cheapest H100 in Germany on Vast now" exactly and keeps a typical price beside it. Any failed
GPU query fails the run: a market missing from a snapshot must not look like it closed.

Whether an ask exists: the query asks for `rentable` and not `rented` asks, and each ask says so
itself; an ask whose own `rentable` is false or `rented` true (a server that ignored the filter,
or an ask taken between index and answer) is not an offer: counted in the progress line and left
out of its market. A missing or null flag says nothing (the filter asked for rentable asks). An
ask whose `num_gpus` is not a positive number is passed on without a GPU count, so the core
rejects and counts it.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any, ClassVar

from priceadvisor.collect.adapters.base import (
    Adapter,
    AdapterOutput,
    ProgressCallback,
    SourceFormatError,
)
from priceadvisor.collect.http import HttpSession
from priceadvisor.collect.pages import ParsedPage
from priceadvisor.records import PriceBasis, Pricing, RawQuote

PAGE_LIMIT = 64
MAX_PAGES = 50
UNKNOWN_COUNTRY = "unknown"

Market = tuple[str, str, int, str]  # (country, gpu_name, num_gpus, verification)
HostTerms = tuple[float | None, float | None]  # (disk $/GB-month, egress $/GB)
UNKNOWN_VERIFICATION = "unknown"
NOT_RENTABLE = "asks not rentable or already rented"


class VastAdapter(Adapter):
    id: ClassVar[str] = "vast"

    async def fetch(self, session: HttpSession, progress: ProgressCallback) -> AdapterOutput:
        url = self.endpoints["bundles"]
        names: list[str] = list(self.manifest.source.get("gpu_names", []))
        offers: dict[int, dict[str, Any]] = {}
        for number, name in enumerate(names, 1):
            await self._walk(session, url, {"eq": name}, offers)
            progress(f"{number}/{len(names)} GPU names, {len(offers)} offers")
        await self._walk(session, url, {"notin": names}, offers)
        parsed = parse_asks(offers.values(), url)
        progress(f"every other GPU name: {len(offers)} offers; " + parsed.summary())
        return AdapterOutput(quotes=parsed.quotes)

    async def _walk(
        self,
        session: HttpSession,
        url: str,
        name_filter: dict[str, Any],
        offers: dict[int, dict[str, Any]],
    ) -> None:
        cursor = 0.0
        for _ in range(MAX_PAGES):
            page = parse_offers(await session.post_json(url, query(name_filter, cursor)))
            fresh = [o for o in page if o["id"] not in offers]
            offers.update((o["id"], o) for o in fresh)
            if len(page) < PAGE_LIMIT:
                return
            if not fresh:
                raise SourceFormatError(
                    f"gpu_name {name_filter}: a full page of asks at ${cursor}/h brings none "
                    "not seen yet (more asks at one price than a page holds)"
                )
            cursor = _next_cursor(page, name_filter)
        raise SourceFormatError(f"gpu_name {name_filter}: more than {MAX_PAGES} pages of offers")


def _next_cursor(page: list[dict[str, Any]], name_filter: dict[str, Any]) -> float:
    """The next page starts at this page's highest price; a page without a single readable
    price cannot be walked past (the asks above it would be lost)."""
    prices = [p for o in page if (p := _float(o["dph_total"])) is not None]
    if not prices:
        raise SourceFormatError(f"gpu_name {name_filter}: a full page without a readable price")
    return max(prices)


def query(name_filter: dict[str, Any], cursor: float) -> dict[str, Any]:
    return {
        "gpu_name": name_filter,
        "rentable": {"eq": True},
        "rented": {"eq": False},
        "external": {"eq": False},
        "dph_total": {"gte": cursor},
        "type": "on-demand",
        "order": [["dph_total", "asc"]],
        "limit": PAGE_LIMIT,
    }


REQUIRED = ("id", "gpu_name", "num_gpus", "dph_total", "dph_base", "geolocation")


def parse_offers(document: Any) -> list[dict[str, Any]]:
    if not isinstance(document, dict) or not isinstance(document.get("offers"), list):
        raise SourceFormatError("no 'offers' list (format changed?)")
    for offer in document["offers"]:
        missing = [k for k in REQUIRED if not isinstance(offer, dict) or k not in offer]
        if missing:
            raise SourceFormatError(f"an offer lacks {', '.join(missing)}")
    return list(document["offers"])


def country(geolocation: Any) -> str:
    code = str(geolocation or "").rsplit(",", 1)[-1].strip().upper()
    return code if len(code) == 2 and code.isalpha() else UNKNOWN_COUNTRY


def parse_asks(offers: Any, url: str) -> ParsedPage:
    """The rentable asks folded into markets; the others counted, never silently kept."""
    parsed = ParsedPage()
    rentable = []
    for offer in offers:
        if offer.get("rentable") is False or offer.get("rented") is True:
            parsed.skipped[NOT_RENTABLE] += 1
        else:
            rentable.append(offer)
    parsed.quotes = aggregate(rentable, url)
    return parsed


def aggregate(offers: Any, url: str) -> list[RawQuote]:
    """One quote per market; an ask without a usable price is passed on alone (price None) so
    the core rejects and counts it instead of it vanishing inside a minimum."""
    markets: dict[tuple[Market, str], list[float]] = defaultdict(list)
    terms: dict[tuple[Market, str], tuple[float, HostTerms]] = {}
    memory: dict[Market, float | None] = {}
    unusable: list[RawQuote] = []
    for offer in offers:
        gpus = _gpus(offer["num_gpus"])
        market = (
            country(offer["geolocation"]),
            str(offer["gpu_name"]),
            gpus or 0,
            str(offer.get("verification") or UNKNOWN_VERIFICATION),
        )
        memory[market] = _gb(offer.get("gpu_ram"))
        prices = _prices(offer)
        if prices is None or gpus is None:
            unusable.append(_quote(market, Pricing.ON_DEMAND, [], memory[market], url))
            continue
        for pricing, price in prices.items():
            markets[market, pricing].append(price)
            if (market, pricing) not in terms or price < terms[market, pricing][0]:
                terms[market, pricing] = (price, _host_terms(offer))
    quotes = [
        _quote(m, p, prices, memory[m], url, terms[m, p][1]) for (m, p), prices in markets.items()
    ]
    return quotes + unusable


def _host_terms(offer: dict[str, Any]) -> HostTerms:
    """The host's disk $/GB-month and egress $/GB, None where absent (a negative one reaches
    the core, which rejects the quote and counts it)."""
    disk, egress = (_float(offer.get(k)) for k in ("storage_cost", "inet_up_cost"))
    return disk, egress


def _prices(offer: dict[str, Any]) -> dict[str, float] | None:
    total, base, bid = (_float(offer.get(k)) for k in ("dph_total", "dph_base", "min_bid"))
    if total is None or base is None or total <= 0:
        return None
    prices = {Pricing.ON_DEMAND.value: total}
    if bid is not None and bid > 0:
        prices[Pricing.SPOT.value] = bid + (total - base)
    return prices


def _quote(
    market: Market,
    pricing: str,
    prices: list[float],
    memory: float | None,
    url: str,
    host: HostTerms = (None, None),
) -> RawQuote:
    where, name, gpus, verification = market
    return RawQuote(
        region=where,
        instance_type=f"{name} x{gpus} {verification}",
        pricing=pricing,
        price=min(prices) if prices else None,
        price_basis=PriceBasis.NODE,
        gpu_name_raw=name,
        gpu_count=float(gpus) if gpus else None,
        gpu_memory_gb=memory,
        available=True,
        source_url=url,
        offer_count=len(prices),
        price_median=statistics.median(prices) if prices else None,
        disk_usd_gb_month=host[0],
        egress_usd_gb=host[1],
    )


def _float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:  # noqa: PLR0124 - NaN
        return None
    return float(value)


def _gpus(value: Any) -> int | None:
    """The ask's GPU count; None when it is not a positive whole number."""
    number = _float(value)
    return int(number) if number is not None and number >= 1 and number == int(number) else None


def _gb(megabytes: Any) -> float | None:
    return round(megabytes / 1024, 1) if isinstance(megabytes, int | float) else None
