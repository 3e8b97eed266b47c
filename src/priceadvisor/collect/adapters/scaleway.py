"""Scaleway Instances product catalog (public, no key), one walk per zone.

Format (verified against real captures of 2026-08-22): per zone,
`GET {zones}/{zone}/products/servers?per_page=100&page=N` returns
`{"servers": {"<commercial type>": {ncpus, ram (bytes), gpu (count), gpu_info {gpu_manufacturer,
gpu_name, gpu_memory (bytes)}, mig_profile, hourly_price, monthly_price, end_of_service, ...}}}`
and `.../products/servers/availability` the same keys with `{"availability": "available" |
"scarce" | "shortage"}`. `per_page` is at most 100; a page shorter than that is the last.

`hourly_price` is the price of the whole server per hour in EUR, although the payload names no
currency; it is stored as EUR and converted through the ECB rate like any other. Servers
without GPUs are not offers of this tool. Servers with a `mig_profile` are slices of a GPU whose
share the catalog does not state in a form read here, so they are skipped rather than priced as
whole GPUs (counted per zone in the progress line). "shortage" is stored as not available,
"available"/"scarce" as available. A type with `end_of_service: true` still carries its price
but is no longer sold: it is passed on unavailable with a not-offered reason, never ranked.

Each zone is its own scope: a zone that fails leaves the run partial and closes offers only in
the zones that completed.
"""

from __future__ import annotations

from typing import Any, ClassVar

from priceadvisor.collect.adapters.base import (
    Adapter,
    AdapterOutput,
    ProgressCallback,
    SourceFormatError,
    exact_price,
    json_number,
    json_object,
)
from priceadvisor.collect.http import FetchError, HttpSession
from priceadvisor.records import PriceBasis, Pricing, RawQuote

PER_PAGE = 100
MAX_PAGES = 20
GIB = 1024**3
IN_STOCK = {"available": True, "scarce": True, "shortage": False}
END_OF_SERVICE = "Scaleway marks the type end_of_service: listed with a price, no longer sold"


class ScalewayAdapter(Adapter):
    id: ClassVar[str] = "scaleway"

    async def fetch(self, session: HttpSession, progress: ProgressCallback) -> AdapterOutput:
        output = AdapterOutput()
        zones: list[str] = list(self.manifest.source.get("zones", []))
        for number, zone in enumerate(zones, 1):
            try:
                quotes, slices = await self._zone(session, zone)
            except (FetchError, SourceFormatError) as exc:
                output.failed_scopes[zone] = str(exc)
            else:
                output.quotes.extend(quotes)
                output.complete_scopes.add(zone)
                progress(f"{zone}: {len(quotes)} GPU types, {slices} GPU slices (MIG) left out")
            progress(f"{number}/{len(zones)} zones, {len(output.quotes)} quotes")
        return output

    async def _zone(self, session: HttpSession, zone: str) -> tuple[list[RawQuote], int]:
        url = f"{self.endpoints['zones'].rstrip('/')}/{zone}/products/servers"
        servers = await walk(session, url)
        availability = await walk(session, f"{url}/availability")
        quotes = [
            parse_server(zone, name, spec, availability.get(name), url)
            for name, spec in servers.items()
            if is_gpu_offer(spec)
        ]
        return quotes, sum(1 for spec in servers.values() if is_gpu_slice(spec))


async def walk(session: HttpSession, url: str) -> dict[str, Any]:
    """Every page of a `{"servers": {...}}` listing, merged."""
    merged: dict[str, Any] = {}
    for page in range(1, MAX_PAGES + 1):
        params = {"per_page": str(PER_PAGE), "page": str(page)}
        servers = parse_servers(await session.get_json(url, params=params))
        merged.update(servers)
        if len(servers) < PER_PAGE:
            return merged
    raise SourceFormatError(f"more than {MAX_PAGES} pages of servers")


def parse_servers(document: Any) -> dict[str, Any]:
    if not isinstance(document, dict) or not isinstance(document.get("servers"), dict):
        raise SourceFormatError("no 'servers' object (format changed?)")
    if not all(isinstance(spec, dict) for spec in document["servers"].values()):
        raise SourceFormatError("a server entry is not a JSON object")
    servers: dict[str, Any] = document["servers"]
    return servers


def is_gpu_offer(spec: dict[str, Any]) -> bool:
    gpus = json_number(spec.get("gpu"))
    return gpus is not None and gpus > 0 and spec.get("mig_profile") is None


def is_gpu_slice(spec: dict[str, Any]) -> bool:
    gpus = json_number(spec.get("gpu"))
    return gpus is not None and gpus > 0 and spec.get("mig_profile") is not None


def parse_server(
    zone: str, name: str, spec: dict[str, Any], availability: Any, url: str
) -> RawQuote:
    info = json_object(spec, "gpu_info")
    status = availability.get("availability") if isinstance(availability, dict) else None
    retired = spec.get("end_of_service") is True
    return RawQuote(
        region=zone,
        instance_type=name,
        pricing=Pricing.ON_DEMAND,
        price=exact_price(spec.get("hourly_price")),
        price_basis=PriceBasis.NODE,
        currency="EUR",
        gpu_name_raw=str(info.get("gpu_name") or name),
        gpu_count=json_number(spec.get("gpu")),
        gpu_memory_gb=_gib(info.get("gpu_memory")),
        vcpus=json_number(spec.get("ncpus")),
        ram_gb=_gib(spec.get("ram")),
        available=False if retired else IN_STOCK.get(str(status)),
        stock=status if isinstance(status, str) and status else None,
        source_url=url,
        not_offered_reason=END_OF_SERVICE if retired else None,
    )


def _gib(value: Any) -> float | None:
    number = json_number(value)
    return round(number / GIB, 1) if number else None
