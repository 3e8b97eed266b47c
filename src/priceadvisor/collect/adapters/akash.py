"""Akash Network GPU bid statistics (console API, no key).

Format (verified against a real capture of `GET
https://console-api.akash.network/v1/gpu-prices?debug=true` of 2026-09-28, the H100 model
only): `{"availability": {total, available}, "models": [...]}`. A model: `vendor` ("nvidia"),
`model` ("h100"), `ram` ("80Gi"), `interface` ("SXM5", "PCIe"), `availability` {total,
available} (GPUs on the network, free ones), `providerAvailability`, `price` {currency, min,
max, avg, weightedAverage, med} or null, `priceUakt` (the same in the chain's token), `bidCount`.
The prices are USD per GPU-hour derived from the on-chain bids of about the last 31 days.

These are statistics of bids, not offers anyone can order: each model is stored as pricing
`market` (like SF Compute), left out of every "cheapest" answer unless asked for. The statistic
stored is the **median bid** (`med`): `min` can be a stale bid from a provider that is full, and
`avg` and `weightedAverage` move with a few outliers. `bidCount` is stored as the offer count.
The response carries no date: the window ends when it is read, so the quote's day
(`price_date`) is the day of the fetch. There is no region (providers' locations appear only in
their host names): region "global".

Identity: (vendor, model, memory, interface), with the interface upper-cased because bid-side
labels are lower-case ("sxm") and the same model comes with different interfaces and memory.
A model whose `price` is null has no bids: counted and left out. A model lacking a field above,
a price without `med` or `currency`, or a document without `models` fails the run.
`availability.available` of 0 (or "0") stores the statistic as not available; one that is no
whole count leaves it unknown. `bidCount` may be quoted too.

Uncertain: one capture, of the H100 only, taken with the undocumented `?debug=true` (which adds
`providersWithBestBid`); the adapter requests without it and reads none of the debug fields.
The response is cached for 300 s and a cold miss took about 16 s, hence the manifest's
deadline hint in its comments.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from priceadvisor.collect.adapters.base import (
    Adapter,
    AdapterOutput,
    ProgressCallback,
    SourceFormatError,
    exact_price,
    json_count,
    json_object,
    json_records,
)
from priceadvisor.collect.http import HttpSession
from priceadvisor.collect.pages import ParsedPage
from priceadvisor.records import PriceBasis, Pricing, RawQuote, utcnow

REQUIRED = ("vendor", "model", "ram", "interface", "availability", "price")
STATISTIC = "med"
NO_BIDS = "GPU models without bids"
_MEMORY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(Gi|G|GB|GiB)\s*$", re.I)


class AkashAdapter(Adapter):
    id: ClassVar[str] = "akash"

    async def fetch(self, session: HttpSession, progress: ProgressCallback) -> AdapterOutput:
        url = self.endpoints["gpu_prices"]
        parsed = parse_models(await session.get_json(url), utcnow().date().isoformat(), url)
        progress(parsed.summary())
        return AdapterOutput(quotes=parsed.quotes)


def parse_models(document: Any, day: str, url: str) -> ParsedPage:
    if not isinstance(document, dict) or "models" not in document:
        raise SourceFormatError("no 'models' in Akash's GPU prices (format changed?)")
    parsed = ParsedPage()
    for model in json_records(document["models"], REQUIRED, "the GPU models", "a GPU model"):
        if model["price"] is None:
            parsed.skipped[NO_BIDS] += 1
            continue
        parsed.quotes.append(model_quote(model, day, url))
    return parsed


def model_quote(model: dict[str, Any], day: str, url: str) -> RawQuote:
    price = model["price"]
    if not isinstance(price, dict) or STATISTIC not in price or "currency" not in price:
        raise SourceFormatError(f"{_name(model)}: price is not {{currency, {STATISTIC}, …}}")
    free = json_count(json_object(model, "availability").get("available"))
    bids = json_count(model.get("bidCount"))
    return RawQuote(
        region="global",
        instance_type=f"{_name(model)} {model['ram']}",
        pricing=Pricing.MARKET,
        price=exact_price(price[STATISTIC]),
        price_basis=PriceBasis.GPU,
        currency=str(price["currency"]).upper(),
        gpu_name_raw=_name(model),
        gpu_count=1,
        gpu_memory_gb=memory_gb(model["ram"]),
        available=free > 0 if free is not None else None,
        source_url=url,
        offer_count=bids,
        price_median=exact_price(price[STATISTIC]),
        price_date=day,
    )


def memory_gb(ram: Any) -> float | None:
    """ "80Gi" → 80: Akash labels a card by its marketed size in Gi."""
    match = _MEMORY.match(str(ram or ""))
    return float(match.group(1)) if match else None


def _name(model: dict[str, Any]) -> str:
    return f"{model['vendor']} {model['model']} {str(model['interface']).upper()}"
