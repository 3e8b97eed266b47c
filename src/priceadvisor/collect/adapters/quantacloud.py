"""QuantaCloud GPU offers (public, no key).

Uncertain: built from the documented response shape and public client code that reads it, not
from a captured response (none existed). The manifest keeps the provider disabled by default
until a live response has been recorded (`fetch --provider quantacloud --record DIR`) and
checked against this docstring.

Format: `GET /api/v1/offers?page=<0-based>&size=100` (100 is the largest page) answers
`{"offers": [...], "totalElements": n}`; pages are read until a short one. An offer has `id` (an
ephemeral UUID: never part of the offer's identity), `gpu {slug ("h100-sxm-80gb"), count,
vramGB}`, `priceHourly` (the whole box, a number or a string), `pricePerGpu`, `isAvailable`,
`region` ("us-east-1") and `specs {vcpu, ram}`. `GET /api/v1/gpu-families` answers
`{"data": [{key, label, availableCount}]}`.

Traps: the offers endpoint lists in-stock offers only, and answers an empty list the same way
for "sold out" and for a filter that matched nothing: it is fetched unfiltered, and an empty
list while the families report GPUs available is a format error, never an empty success that
would close every offer; so is a family count that cannot be read (quoted ones are).
`priceHourly` is stored per node; `pricePerGpu` is another unit, read only as a cross-check
(more than 1 % apart from priceHourly / count: the price is passed as unreadable, for the core
to reject and count). MIG slugs (`…-mig-48gb`) are a slice of a GPU, never priced as a whole
one: skipped and counted. Rate limit: 3000 requests per 15 minutes.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from priceadvisor.collect.adapters.base import (
    Adapter,
    AdapterOutput,
    ProgressCallback,
    SourceFormatError,
    exact_price,
    json_count,
    json_number,
    json_object,
    json_records,
)
from priceadvisor.collect.http import HttpSession
from priceadvisor.records import PriceBasis, Pricing, RawQuote

PAGE_SIZE = 100
MAX_PAGES = 200  # 20,000 offers: far beyond any listing; a server that never ends is refused
OFFER_KEYS = ("gpu", "priceHourly", "region", "isAvailable")
PRICE_TOLERANCE = 0.01


class QuantaCloudAdapter(Adapter):
    id: ClassVar[str] = "quantacloud"

    async def fetch(self, session: HttpSession, progress: ProgressCallback) -> AdapterOutput:
        url = self.endpoints["offers"]
        offers = await self._all_offers(session, url, progress)
        if not offers:
            available = parse_families(await session.get_json(self.endpoints["families"]))
            if available:
                raise SourceFormatError(
                    f"no offers listed while gpu-families reports {available} GPUs available"
                )
        quotes = [parse_offer(o, url) for o in offers if not is_mig(o)]
        progress(f"{len(quotes)} offers; {len(offers) - len(quotes)} MIG slices skipped")
        return AdapterOutput(quotes=quotes)

    async def _all_offers(
        self, session: HttpSession, url: str, progress: ProgressCallback
    ) -> list[dict[str, Any]]:
        offers: list[dict[str, Any]] = []
        for page in range(MAX_PAGES):
            params = {"page": str(page), "size": str(PAGE_SIZE)}
            batch, total = parse_page(await session.get_json(url, params))
            offers.extend(batch)
            progress(f"page {page + 1}: {len(offers)} of {total} offers")
            if len(batch) < PAGE_SIZE or len(offers) >= total:
                return offers
        raise SourceFormatError(f"more than {MAX_PAGES} pages of offers (paging broken?)")


def parse_page(document: Any) -> tuple[list[dict[str, Any]], int]:
    if not isinstance(document, dict) or "offers" not in document:
        raise SourceFormatError("no offers list in the answer (format changed?)")
    total = json_number(document.get("totalElements"))
    if total is None:
        raise SourceFormatError("no totalElements in the answer (format changed?)")
    offers = json_records(document["offers"], OFFER_KEYS, "the offers", "an offer")
    for offer in offers:
        if not isinstance(offer["gpu"], dict) or not {"slug", "count"} <= set(offer["gpu"]):
            raise SourceFormatError("an offer's gpu lacks slug or count")
    return offers, int(total)


def parse_families(document: Any) -> int:
    """GPUs available across all families, as gpu-families reports them. A family whose count
    cannot be read fails the run: read as 0 it would pass an empty listing as "sold out"."""
    families = json_records(
        _data(document), ("key", "availableCount"), "the GPU families", "a GPU family"
    )
    return sum(_available_count(family) for family in families)


def _available_count(family: dict[str, Any]) -> int:
    count = json_count(family["availableCount"])
    if count is None:
        raise SourceFormatError(
            f"GPU family {family['key']!r} has availableCount {family['availableCount']!r},"
            " not a count"
        )
    return count


def _data(document: Any) -> Any:
    if not isinstance(document, dict) or "data" not in document:
        raise SourceFormatError("no data list in the gpu-families answer (format changed?)")
    return document["data"]


def is_mig(offer: dict[str, Any]) -> bool:
    return "-mig-" in f"{str(offer['gpu']['slug']).lower()}-"


def parse_offer(offer: dict[str, Any], url: str) -> RawQuote:
    gpu, specs = offer["gpu"], json_object(offer, "specs")
    count = json_number(gpu["count"])
    return RawQuote(
        region=str(offer["region"]),
        instance_type=instance_type(offer),
        pricing=Pricing.ON_DEMAND,
        price=checked_price(offer, count),
        price_basis=PriceBasis.NODE,
        gpu_name_raw=str(gpu["slug"]),
        gpu_count=count,
        gpu_memory_gb=json_number(gpu.get("vramGB")),
        vcpus=json_number(specs.get("vcpu")),
        ram_gb=json_number(specs.get("ram")),
        available=offer["isAvailable"] is True,
        source_url=url,
    )


def instance_type(offer: dict[str, Any]) -> str:
    """ "h100-sxm-80gb x8 96vcpu 1024gb": what makes a different product (the id changes on
    every listing and is left out)."""
    gpu, specs = offer["gpu"], json_object(offer, "specs")
    parts = [f"{gpu['slug']} x{gpu['count']}"]
    if specs.get("vcpu") is not None:
        parts.append(f"{specs['vcpu']}vcpu")
    if specs.get("ram") is not None:
        parts.append(f"{specs['ram']}gb")
    return " ".join(parts)


def checked_price(offer: dict[str, Any], count: float | None) -> float | None:
    """priceHourly for the box, unless pricePerGpu x count says otherwise (then None)."""
    box = exact_price(offer["priceHourly"])
    per_gpu = exact_price(offer.get("pricePerGpu"))
    if box is None or per_gpu is None or not count:
        return box
    agree = math.isclose(per_gpu * count, box, rel_tol=PRICE_TOLERANCE)
    return box if agree else None
