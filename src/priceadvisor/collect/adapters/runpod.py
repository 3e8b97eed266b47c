"""RunPod GraphQL `gpuTypes` (no API key needed for this query).

Prices come from the shape real captures of the anonymous API have (docs/providers.md,
RunPod): `gpuTypes { id displayName memoryInGb securePrice communityPrice secureSpotPrice
communitySpotPrice }`, USD per GPU-hour, plus the two booleans of the public `GpuType` schema
that say on which cloud a GPU exists at all: `secureCloud` and `communityCloud`. Secure Cloud
is stored under region "secure" (any Secure data centre), Community Cloud under "community".
0 or null means "not offered on that cloud". A price listed for a cloud whose flag is `false`
is a placeholder, not an offer (live: MI300X `communityPrice: 0.5` with `communityCloud: false`
and no `lowestPrice`): it is passed on with `not_offered_reason`, so the core keeps it visible
but flagged and never ranks it. A missing flag (an older answer) says nothing. In real
captures every `*SpotPrice` equals the matching on-demand price: an echo, not a bid, so a spot
price equal to on-demand is skipped and only a different one is passed on
(the core rejects one that is not below on-demand).

Enrichment, allowed to fail: `dataCenters { id name listed }`, then per listed data centre
`gpuTypes { … lowestPrice(input: {gpuCount: 1, secureCloud: true, dataCenterId}) {
minimumBidPrice uninterruptablePrice stockStatus } }` gives per-data-centre on-demand,
interruptible (the lowest bid) and stock; once more with `secureCloud: false` gives Community
Cloud's lowest bid and its stock, which becomes the availability of the price list's Community
quotes (`stockStatus: null`, or no `lowestPrice` at all, is "none free now": kept, not
available). The price list's Secure quotes ("any data centre") are available when some listed
data centre has the GPU in stock and not available when none has (known only when every data
centre answered; a GPU missing from an answer leaves it unknown). A failed enrichment makes
the run partial in that scope only: the prices above are kept and no offer of the failed scope
is closed.

A price given as a decimal string ("2.39") is read as that number; one that is neither a number
nor a decimal string (and not 0 or null, "not offered") is passed on without a price, so the
core rejects and counts it rather than the offer vanishing as "not offered".

Uncertain: the `dataCenters` and `lowestPrice` shapes come from public client code (gpuhunt),
not from a live capture; the top-level price fields are verified on a real capture.
"""

from __future__ import annotations

from typing import Any, ClassVar

from priceadvisor.collect.adapters.base import (
    Adapter,
    AdapterOutput,
    ProgressCallback,
    SourceFormatError,
    exact_decimal,
)
from priceadvisor.collect.http import FetchError, HttpSession
from priceadvisor.records import PriceBasis, Pricing, RawQuote

GPU_PRICES = """query GpuTypes {
  gpuTypes {
    id displayName memoryInGb securePrice communityPrice secureSpotPrice communitySpotPrice
    secureCloud communityCloud
  }
}"""
DATA_CENTERS = "query DataCenters { dataCenters { id name listed } }"
LOWEST_PRICES = """query LowestPrices($lowestPriceInput: GpuLowestPriceInput) {
  gpuTypes {
    id memoryInGb secureCloud communityCloud
    lowestPrice(input: $lowestPriceInput) { minimumBidPrice uninterruptablePrice stockStatus }
  }
}"""
Stock = dict[str, str | None]  # GPU id → stock level at one location (None: none free)
SECURE = "secure"
COMMUNITY = "community"
# cloud region → (on-demand field, spot field, "exists on this cloud" flag) of the schema
_CLOUDS = {
    SECURE: ("securePrice", "secureSpotPrice", "secureCloud"),
    COMMUNITY: ("communityPrice", "communitySpotPrice", "communityCloud"),
}


class RunPodAdapter(Adapter):
    id: ClassVar[str] = "runpod"

    async def fetch(self, session: HttpSession, progress: ProgressCallback) -> AdapterOutput:
        url = self.endpoints["graphql"]
        document = await session.post_json(url, {"query": GPU_PRICES})
        quotes = parse_gpu_prices(document, url)
        output = AdapterOutput(quotes=quotes, complete_scopes={SECURE, COMMUNITY})
        echoes = spot_echoes(document)
        progress(
            f"{len(quotes)} quotes from Secure and Community Cloud; "
            f"left out: {echoes} spot prices that echo on-demand"
        )
        await self._enrich(session, url, output, progress)
        return output

    async def _enrich(
        self, session: HttpSession, url: str, output: AdapterOutput, progress: ProgressCallback
    ) -> None:
        try:
            centres = parse_data_centers(await session.post_json(url, {"query": DATA_CENTERS}))
        except (FetchError, SourceFormatError) as exc:
            output.failed_scopes["data centres"] = str(exc)
            return
        scopes = [(dc, {"gpuCount": 1, "secureCloud": True, "dataCenterId": dc}) for dc in centres]
        scopes.append((COMMUNITY, {"gpuCount": 1, "secureCloud": False}))
        stocks: list[Stock] = []
        for number, (region, lowest) in enumerate(scopes, 1):
            stock = await self._enrich_scope(session, url, region, lowest, output)
            if stock is not None and region != COMMUNITY:
                stocks.append(stock)
            progress(f"{number}/{len(scopes)} locations, {len(output.quotes)} quotes")
        if centres and len(stocks) == len(centres):  # every data centre answered
            apply_any_stock(stocks, output.quotes, SECURE)

    async def _enrich_scope(
        self,
        session: HttpSession,
        url: str,
        region: str,
        lowest: dict[str, Any],
        output: AdapterOutput,
    ) -> Stock | None:
        """Add one location's quotes; its stock per GPU, or None when it failed."""
        payload = {"query": LOWEST_PRICES, "variables": {"lowestPriceInput": lowest}}
        try:
            document = await session.post_json(url, payload)
            quotes = parse_lowest_prices(document, region, url)
        except (FetchError, SourceFormatError) as exc:
            output.failed_scopes[region] = str(exc)
            output.complete_scopes.discard(region)
            return None
        stock = parse_stock(document)
        if region == COMMUNITY:
            apply_stock(stock, output.quotes, COMMUNITY)
            quotes = _community_bids(quotes, output.quotes)
        output.quotes.extend(quotes)
        output.complete_scopes.add(region)
        return stock


def _community_bids(found: list[RawQuote], listed: list[RawQuote]) -> list[RawQuote]:
    """Community on-demand comes from the price list; the enrichment adds the lowest bid where
    the price list has no spot price of its own for that GPU."""
    priced = {
        q.instance_type for q in listed if q.region == COMMUNITY and q.pricing == Pricing.SPOT
    }
    return [q for q in found if q.pricing == Pricing.SPOT and q.instance_type not in priced]


def parse_stock(document: Any) -> Stock:
    """Per GPU id the location lists, its stock level there; None where it has none free now
    (`stockStatus: null`) or no lowest price there at all."""
    stock: Stock = {}
    for gpu in _gpu_types(document):
        lowest = gpu.get("lowestPrice")
        level = lowest.get("stockStatus") if isinstance(lowest, dict) else None
        stock[str(gpu["id"])] = _text(level)
    return stock


def apply_stock(stock: Stock, quotes: list[RawQuote], region: str) -> None:
    """The price list's quotes of `region` take the location's stock as their availability; a
    GPU the location does not list at all keeps an unknown one."""
    for quote in quotes:
        if quote.region == region and quote.instance_type in stock:
            level = stock[quote.instance_type]
            quote.stock = level
            quote.available = level is not None and quote.not_offered_reason is None


def apply_any_stock(stocks: list[Stock], quotes: list[RawQuote], region: str) -> None:
    """The price list's Secure quotes ("any data centre") are available when some data centre
    has the GPU in stock, and not when every data centre lists it with none; else unknown."""
    for quote in quotes:
        if quote.region != region:
            continue
        levels = [s[quote.instance_type] for s in stocks if quote.instance_type in s]
        if any(level is not None for level in levels):
            quote.available = quote.not_offered_reason is None
        elif len(levels) == len(stocks):
            quote.available = False


def _data(document: Any, key: str) -> Any:
    if not isinstance(document, dict):
        raise SourceFormatError("GraphQL answer is not an object")
    if document.get("errors"):
        first = document["errors"][0]
        message = first.get("message") if isinstance(first, dict) else first
        raise SourceFormatError(f"GraphQL error: {message}")
    data = document.get("data")
    if not isinstance(data, dict) or not isinstance(data.get(key), list):
        raise SourceFormatError(f"no data.{key} list (format changed?)")
    return data[key]


def _gpu_types(document: Any) -> list[dict[str, Any]]:
    types = _data(document, "gpuTypes")
    if not all(isinstance(gpu, dict) and gpu.get("id") for gpu in types):
        raise SourceFormatError("a gpuType has no id")
    return list(types)


def parse_data_centers(document: Any) -> list[str]:
    return [
        str(dc["id"])
        for dc in _data(document, "dataCenters")
        if isinstance(dc, dict) and dc.get("id") and dc.get("listed", True)
    ]


def parse_gpu_prices(document: Any, url: str) -> list[RawQuote]:
    """The price list: on-demand per cloud, and spot where it is a price of its own."""
    quotes = [q for gpu in _gpu_types(document) for q in _cloud_quotes(gpu, url)]
    if not quotes:
        raise SourceFormatError("no GPU type has a Secure or Community price (format changed?)")
    return quotes


def spot_echoes(document: Any) -> int:
    """How many spot prices of the price list only repeat their on-demand price (left out)."""
    return sum(
        not isinstance(spot := _price(gpu.get(spot_field)), _NotOffered)
        and spot is not None
        and spot == _price(gpu.get(on_demand_field))
        for gpu in _gpu_types(document)
        for on_demand_field, spot_field, _flag in _CLOUDS.values()
    )


def _cloud_quotes(gpu: dict[str, Any], url: str) -> list[RawQuote]:
    quotes = []
    for region, (on_demand_field, spot_field, _flag) in _CLOUDS.items():
        on_demand, spot = _price(gpu.get(on_demand_field)), _price(gpu.get(spot_field))
        absent = _not_on_cloud(gpu, region)
        if not isinstance(on_demand, _NotOffered):
            quotes.append(_quote(gpu, region, Pricing.ON_DEMAND, on_demand, url, absent=absent))
        if not isinstance(spot, _NotOffered) and spot != on_demand:  # equal = the documented echo
            quotes.append(_quote(gpu, region, Pricing.SPOT, spot, url, absent=absent))
    return quotes


def _not_on_cloud(gpu: dict[str, Any], region: str) -> str | None:
    """Why `gpu` does not exist on the cloud stored as `region`, in RunPod's words; None when
    the source says it does or says nothing (data centres are Secure Cloud)."""
    flag = _CLOUDS[COMMUNITY if region == COMMUNITY else SECURE][2]
    if gpu.get(flag) is False:
        return f"RunPod reports {flag}: false (the listed price is a placeholder)"
    return None


def parse_lowest_prices(document: Any, region: str, url: str) -> list[RawQuote]:
    """One location's lowest prices; a GPU with `lowestPrice: null` is not offered there."""
    quotes = []
    for gpu in _gpu_types(document):
        lowest = gpu.get("lowestPrice")
        if not isinstance(lowest, dict):
            continue
        status = lowest.get("stockStatus")
        stocked = status is not None
        prices = {
            Pricing.ON_DEMAND: _price(lowest.get("uninterruptablePrice")),
            Pricing.SPOT: _price(lowest.get("minimumBidPrice")),
        }
        absent = _not_on_cloud(gpu, region)
        quotes += [
            _quote(
                gpu,
                region,
                pricing,
                price,
                url,
                available=stocked and not absent,
                stock=_text(status),
                absent=absent,
            )
            for pricing, price in prices.items()
            if not isinstance(price, _NotOffered)
        ]
    return quotes


def _quote(
    gpu: dict[str, Any],
    region: str,
    pricing: Pricing,
    price: float | None,
    url: str,
    available: bool | None = None,
    stock: str | None = None,
    absent: str | None = None,
) -> RawQuote:
    return RawQuote(
        region=region,
        instance_type=str(gpu["id"]),
        pricing=pricing,
        price=price,
        price_basis=PriceBasis.GPU,
        gpu_name_raw=str(gpu["id"]),
        gpu_count=1.0,
        gpu_memory_gb=_memory(gpu.get("memoryInGb")),
        available=False if absent else available,
        stock=stock,
        source_url=url,
        not_offered_reason=absent,
    )


class _NotOffered:
    """A price field saying "not offered" (0 or null), unlike an unreadable one (None)."""


NOT_OFFERED = _NotOffered()


def _price(value: Any) -> float | _NotOffered | None:
    """0 and null mean "not offered" (documented); a number or decimal string is the price (a
    negative one passed on for the core to reject and count); anything else is unreadable
    (None), passed on without a price for the core to reject and count."""
    if value is None:
        return NOT_OFFERED
    number = exact_decimal(value)
    if number is None:
        return None
    return NOT_OFFERED if number == 0 else float(number)


def _memory(value: Any) -> float | None:
    number = exact_decimal(value)
    return float(number) if number is not None and number > 0 else None


def _text(value: Any) -> str | None:
    """A stock level as RunPod words it ("High", "Low"), or None when it gives none."""
    return value if isinstance(value, str) and value.strip() else None
