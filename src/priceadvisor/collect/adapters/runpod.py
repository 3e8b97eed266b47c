"""RunPod GraphQL `gpuTypes` (no API key needed for this query).

Format: the public GraphQL schema (field list from gpuhunt's detailed query; verified
anonymous 2026-08-22 by two public projects). Requests:
  1. `dataCenters { id name listed }` — the Secure Cloud data centres;
  2. per listed data centre, `gpuTypes` with `lowestPrice(input: {gpuCount: 1, secureCloud: true,
     dataCenterId})` — the price of one GPU there;
  3. once for Community Cloud, `lowestPrice(input: {gpuCount: 1, secureCloud: false})`, stored
     under region "community" (community hosts are not tied to a data centre).
Prices are USD per GPU-hour. On-demand is `uninterruptablePrice`; interruptible (spot) is
`minimumBidPrice`, the lowest bid — the top-level `*SpotPrice` fields echo on-demand in real
captures, so they are not used. 0 or null means "not offered there" and is skipped. Availability
is `stockStatus` (null = none in stock).

Uncertain: the exact shape of `dataCenters` and of `lowestPrice` comes from public client code,
not from a live capture; a data centre whose query fails makes the run partial.
"""

from __future__ import annotations

from typing import Any, ClassVar

from priceadvisor.collect.adapters.base import (
    Adapter,
    AdapterOutput,
    ProgressCallback,
    SourceFormatError,
)
from priceadvisor.collect.http import FetchError, HttpSession
from priceadvisor.models import PriceBasis, Pricing, RawQuote

DATA_CENTERS = "query DataCenters { dataCenters { id name listed } }"
GPU_TYPES = """query GpuTypes($lowestPriceInput: GpuLowestPriceInput) {
  gpuTypes {
    id displayName memoryInGb securePrice communityPrice
    lowestPrice(input: $lowestPriceInput) {
      minimumBidPrice uninterruptablePrice stockStatus minVcpu minMemory
    }
  }
}"""
COMMUNITY = "community"


class RunPodAdapter(Adapter):
    id: ClassVar[str] = "runpod"

    async def fetch(self, session: HttpSession, progress: ProgressCallback) -> AdapterOutput:
        url = self.endpoints["graphql"]
        centres = parse_data_centers(await session.post_json(url, {"query": DATA_CENTERS}))
        output = AdapterOutput()
        scopes = [(dc, {"gpuCount": 1, "secureCloud": True, "dataCenterId": dc}) for dc in centres]
        scopes.append((COMMUNITY, {"gpuCount": 1, "secureCloud": False}))
        for number, (region, lowest) in enumerate(scopes, 1):
            await self._fetch_scope(session, url, region, lowest, output)
            progress(f"{number}/{len(scopes)} locations, {len(output.quotes)} quotes")
        if not output.complete_scopes:
            raise FetchError("; ".join(sorted(output.failed_scopes.values())))
        return output

    async def _fetch_scope(
        self,
        session: HttpSession,
        url: str,
        region: str,
        lowest: dict[str, Any],
        output: AdapterOutput,
    ) -> None:
        payload = {"query": GPU_TYPES, "variables": {"lowestPriceInput": lowest}}
        try:
            document = await session.post_json(url, payload)
            output.quotes.extend(parse_gpu_types(document, region, url))
        except (FetchError, SourceFormatError) as exc:
            output.failed_scopes[region] = f"{region}: {exc}"
        else:
            output.complete_scopes.add(region)


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


def parse_data_centers(document: Any) -> list[str]:
    return [
        str(dc["id"])
        for dc in _data(document, "dataCenters")
        if isinstance(dc, dict) and dc.get("id") and dc.get("listed", True)
    ]


def parse_gpu_types(document: Any, region: str, url: str) -> list[RawQuote]:
    quotes: list[RawQuote] = []
    for gpu in _data(document, "gpuTypes"):
        if not isinstance(gpu, dict) or "id" not in gpu:
            raise SourceFormatError("a gpuType has no id")
        quotes.extend(_gpu_quotes(gpu, region, url))
    return quotes


def _gpu_quotes(gpu: dict[str, Any], region: str, url: str) -> list[RawQuote]:
    lowest = gpu.get("lowestPrice")
    if not isinstance(lowest, dict):
        return []  # not offered in this location
    common: dict[str, Any] = {
        "region": region,
        "instance_type": str(gpu["id"]),
        "price_basis": PriceBasis.GPU,
        "gpu_name_raw": str(gpu["id"]),
        "gpu_count": 1.0,
        "gpu_memory_gb": _number(gpu.get("memoryInGb")),
        "available": lowest.get("stockStatus") is not None,
        "source_url": url,
    }
    prices = {
        Pricing.ON_DEMAND: lowest.get("uninterruptablePrice"),
        Pricing.SPOT: lowest.get("minimumBidPrice"),
    }
    return [
        RawQuote(pricing=pricing, price=_number(price), **common)
        for pricing, price in prices.items()
        if price not in (0, None)  # 0 / null: not offered on this cloud (documented)
    ]


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)
