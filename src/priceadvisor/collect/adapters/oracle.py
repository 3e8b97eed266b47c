"""Oracle Cloud (OCI) public price list (no authentication).

Format (`GET …/cetools/api/v1/products/?currencyCode=USD`, no key): one JSON document, `items[]`
with partNumber, displayName, metricName, serviceCategory and
`currencyCodeLocalizations[].prices[]` (model PAY_AS_YOU_GO). GPU rentals are `metricName: "GPU
Per Hour"`, priced per GPU and the same in every region.

Traps handled: displayNames are inconsistent, so known GPUs are pinned by part number in the
manifest ([parts]: shape, GPU, GPUs per shape); look-alikes with the same metric — the NVIDIA AI
Enterprise licence, Cloud@Customer, VMware "Node Per Hour" and "Resource Possession" rows — are
not offers. An unpinned "Compute - GPU" part is still passed on (raw name = displayName) so a new
GPU shows up as unmapped instead of vanishing. A pinned part whose metric is no longer "GPU Per
Hour" fails the run (it would be stored per GPU while priced per something else).

Uncertain / modelled: the list has no regions, so offers are stored under region "global" (OCI
publishes which region offers which GPU shape only through the authenticated ListShapes API and
prose documentation, nothing a public feed can read). It has no spot prices; OCI documents
preemptible capacity at 50 % of on-demand, so the spot quotes here are derived by that rule and
say so (`price_rule`, stored as price_origin 'derived'). Uncertain: which GPU shapes accept
preemptible capacity at all is not in the list; the rule is applied to every GPU part.
"""

from __future__ import annotations

from typing import Any, ClassVar

from priceadvisor.collect.adapters.base import (
    Adapter,
    AdapterOutput,
    ProgressCallback,
    SourceFormatError,
    exact_price,
)
from priceadvisor.collect.http import HttpSession
from priceadvisor.records import PriceBasis, Pricing, RawQuote

PREEMPTIBLE_DISCOUNT = 0.5  # "Preemptible capacity costs 50% less" (OCI pricing docs)
PREEMPTIBLE_DOC = "https://docs.oracle.com/iaas/Content/Compute/Concepts/preemptible.htm"
PREEMPTIBLE_RULE = "OCI preemptible = 50 % of on-demand (documented discount, not a list price)"
REGION = "global"
GPU_METRIC = "GPU Per Hour"
_LOOKALIKES = ("AI Enterprise", "Cloud@Customer", "VMware")


class OracleAdapter(Adapter):
    id: ClassVar[str] = "oracle"

    async def fetch(self, session: HttpSession, progress: ProgressCallback) -> AdapterOutput:
        url = self.endpoints["products"]
        document = await session.get_json(url, params={"currencyCode": "USD"})
        parts: dict[str, str] = self.manifest.source.get("parts", {})
        quotes = [q for item in items(document) for q in parse_item(item, parts, url)]
        progress(f"{len(quotes)} quotes")
        return AdapterOutput(quotes=quotes)


def items(document: Any) -> list[dict[str, Any]]:
    if not isinstance(document, dict) or not isinstance(document.get("items"), list):
        raise SourceFormatError("no 'items' list (format changed?)")
    listed: list[Any] = document["items"]
    if not all(isinstance(i, dict) for i in listed):
        raise SourceFormatError("an item is not a JSON object (format changed?)")
    return listed


def parse_item(item: dict[str, Any], parts: dict[str, str], url: str) -> list[RawQuote]:
    """A GPU part → on-demand and modelled spot quotes per shape; anything else → []."""
    for key in ("partNumber", "displayName", "metricName", "currencyCodeLocalizations"):
        if key not in item:
            raise SourceFormatError(f"item lacks {key!r}")
    shape = parts.get(str(item["partNumber"]))
    if shape is None and not _unpinned_gpu(item):
        return []
    if item["metricName"] != GPU_METRIC:
        # A pinned part is stored per GPU: priced per node or per day it would be misread.
        raise SourceFormatError(
            f"part {item['partNumber']} ({shape}) is priced per {item['metricName']!r}, "
            f"not {GPU_METRIC!r}"
        )
    price = _usd_payg(item)
    # A pinned shape's GPU model and count come from the manifest's [instance_types]; an
    # unpinned part is one GPU named by its displayName.
    common: dict[str, Any] = {
        "region": REGION,
        "instance_type": shape or str(item["partNumber"]),
        "price_basis": PriceBasis.GPU,
        "gpu_name_raw": str(item["displayName"]),
        "gpu_count": None if shape else 1.0,
    }
    spot = None if price is None else round(price * PREEMPTIBLE_DISCOUNT, 6)
    return [
        RawQuote(pricing=Pricing.ON_DEMAND, price=price, source_url=url, **common),
        RawQuote(
            pricing=Pricing.SPOT,
            price=spot,
            source_url=PREEMPTIBLE_DOC,
            price_rule=PREEMPTIBLE_RULE,
            **common,
        ),
    ]


def _unpinned_gpu(item: dict[str, Any]) -> bool:
    name = str(item["displayName"])
    return (
        item["metricName"] == GPU_METRIC
        and str(item.get("serviceCategory", "")).startswith("Compute - GPU")
        and not any(marker in name for marker in _LOOKALIKES)
    )


def _usd_payg(item: dict[str, Any]) -> float | None:
    for localization in item["currencyCodeLocalizations"]:
        if localization.get("currencyCode") == "USD":
            for price in localization.get("prices", []):
                if price.get("model") == "PAY_AS_YOU_GO":
                    return exact_price(price.get("value"))  # 10, 10.75 or "10.75"
    return None
