"""TensorDock marketplace locations (API v2).

Format (from TensorDock's API documentation, "fetch hostnodes" example; no live capture):
`GET /api/v2/locations` returns `{"data": {"locations": [{id, city, stateprovince, country,
tier, gpus: [{v0Name ("h100-sxm5-80gb"), displayName, max_count, price_per_hr, resources
{max_vcpus, max_ram_gb, max_storage_gb}, pricing {per_vcpu_hr, per_gb_ram_hr,
per_gb_storage_hr}, network_features}]}]}}`.

`price_per_hr` is USD per GPU-hour for the GPU alone; vCPUs and RAM are billed on top at the
location's unit prices. An offer is a standard VM per GPU count (manifest `[source]`:
`gpu_counts`, `vcpus_per_gpu`, `ram_gb_per_gpu`, capped at the location's `max_vcpus` and
`max_ram_gb`), priced per node as GPUs × GPU price + vCPUs × vCPU price + GB × RAM price in
decimal arithmetic; the offer records the vCPUs and RAM priced. Storage is extra, as elsewhere.
`max_count` (GPUs rentable now; a quoted one is read as its number) is availability: an offer
for more GPUs is not available, and one that is no whole count leaves availability unknown.

Locations are marketplace hosts named by id: the region is the ISO code of the location's
country (so country and continent filters work), the location id is the zone.

Uncertain: the documentation tells users to create an API key (Bearer); whether `/locations`
answers anonymously is not verified. The key is optional here (`TENSORDOCK_API_KEY`); a 401 or
403 without one fails the run with a message saying to set it.
"""

from __future__ import annotations

from typing import Any, ClassVar

from priceadvisor.collect.adapters.base import (
    Adapter,
    AdapterOutput,
    ProgressCallback,
    SourceFormatError,
    gpus_free,
    json_count,
    json_number,
    json_object,
    sum_of_units,
)
from priceadvisor.collect.http import FetchError, HttpSession, decode_json
from priceadvisor.gpu_specs import country_codes
from priceadvisor.records import PriceBasis, Pricing, RawQuote

UNKNOWN_COUNTRY = "unknown"


class TensorDockAdapter(Adapter):
    id: ClassVar[str] = "tensordock"

    async def fetch(self, session: HttpSession, progress: ProgressCallback) -> AdapterOutput:
        url = self.endpoints["locations"]
        locations = parse_locations(await self._get(session, url))
        progress(f"{len(locations)} locations")
        shape = self.manifest.source
        return AdapterOutput(
            quotes=[
                q for loc in locations for gpu in loc["gpus"] for q in offers(loc, gpu, shape, url)
            ]
        )

    async def _get(self, session: HttpSession, url: str) -> Any:
        headers = {"Accept": "application/json"}
        if self.credential is not None:
            headers["Authorization"] = f"Bearer {self.credential.get_secret_value()}"
        try:
            response = await session.request("GET", url, headers=headers)
        except FetchError as exc:
            if self.credential is None and str(exc).startswith(("HTTP 401", "HTTP 403")):
                raise FetchError(f"{exc}: the API wants a key, set TENSORDOCK_API_KEY") from None
            raise
        return decode_json(response)


def parse_locations(document: Any) -> list[dict[str, Any]]:
    data = document.get("data") if isinstance(document, dict) else None
    locations = data.get("locations") if isinstance(data, dict) else None
    if not isinstance(locations, list):
        raise SourceFormatError("no 'data.locations' list (format changed?)")
    for location in locations:
        if not isinstance(location, dict) or not isinstance(location.get("gpus"), list):
            raise SourceFormatError("a location lacks its 'gpus' list")
        if "id" not in location or not all(isinstance(g, dict) for g in location["gpus"]):
            raise SourceFormatError("a location lacks 'id' or has a GPU that is not an object")
    return locations


def country_code(name: Any) -> str:
    return country_codes().get(str(name or "").strip().casefold(), UNKNOWN_COUNTRY)


def offers(
    location: dict[str, Any], gpu: dict[str, Any], shape: dict[str, Any], url: str
) -> list[RawQuote]:
    free = json_count(gpu.get("max_count"))
    return [
        _quote(location, gpu, count, *size(gpu, count, shape), free, url)
        for count in (int(n) for n in shape["gpu_counts"])
    ]


def size(gpu: dict[str, Any], count: int, shape: dict[str, Any]) -> tuple[int, int]:
    """(vCPUs, RAM GB) of the standard VM for `count` GPUs, capped at what the host offers."""
    resources = json_object(gpu, "resources")
    vcpus = _capped(int(shape["vcpus_per_gpu"]) * count, resources.get("max_vcpus"))
    return vcpus, _capped(int(shape["ram_gb_per_gpu"]) * count, resources.get("max_ram_gb"))


def _capped(wanted: int, most: Any) -> int:
    limit = json_number(most)
    return min(wanted, int(limit)) if limit else wanted


def node_price(gpu: dict[str, Any], count: int, vcpus: int, ram_gb: int) -> float | None:
    """GPUs at the per-GPU price plus vCPUs and RAM at their unit prices, summed exactly."""
    pricing = json_object(gpu, "pricing")
    return sum_of_units(
        [
            (gpu.get("price_per_hr"), count),
            (pricing.get("per_vcpu_hr"), vcpus),
            (pricing.get("per_gb_ram_hr"), ram_gb),
        ]
    )


def _quote(
    location: dict[str, Any],
    gpu: dict[str, Any],
    count: int,
    vcpus: int,
    ram: int,
    free: int | None,
    url: str,
) -> RawQuote:
    name = str(gpu.get("v0Name") or gpu.get("displayName") or "")
    return RawQuote(
        region=country_code(location.get("country")),
        zone=str(location["id"]),
        instance_type=f"{name} x{count}",
        pricing=Pricing.ON_DEMAND,
        price=node_price(gpu, count, vcpus, ram),
        price_basis=PriceBasis.NODE,
        gpu_name_raw=str(gpu.get("displayName") or name),
        gpu_count=float(count),
        vcpus=float(vcpus),
        ram_gb=float(ram),
        available=None if free is None else free >= count,
        stock=gpus_free(free),
        source_url=url,
    )
