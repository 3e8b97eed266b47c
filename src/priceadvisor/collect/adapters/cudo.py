"""CUDO Compute VM machine types (public listing, no key needed per earlier public use).

Format: `GET /v1/vms/machine-types` returns `{"machineTypes": [...]}`, one entry per machine
type and data centre: `dataCenterId` ("no-luster-1"), `machineType`, `gpuModel` ("RTX A5000"),
`gpuModelId`, unit prices as decimal strings in USD per hour (`gpuPriceHr`, `vcpuPriceHr`,
`memoryGibPriceHr`, `minStorageGibPriceHr`, `ipv4PriceHr`, each `{"value": "0.520000"}`), the
allowed shapes (`minVcpuPerGpu`/`maxVcpuPerGpu`, `minVcpuPerMemoryGib`/`maxVcpuPerMemoryGib`,
vCPUs per GiB) and availability (`maxGpuFree`, `maxVcpuFree`, `maxMemoryGibFree`: GPUs, vCPUs
and GiB free on the emptiest host).

CUDO sells no fixed instance: a VM is assembled from GPUs, vCPUs and memory, each at its unit
price. An offer here is a documented standard shape per GPU count (manifest `[source]`
`gpu_counts`, `vcpus_per_gpu`, `memory_gib_per_gpu`, clamped into the machine type's allowed
ratios), priced per node as GPUs × GPU price + vCPUs × vCPU price + GiB × memory price in
decimal arithmetic; the offer records the vCPUs and RAM it was priced with. Boot disk and IPv4
are extra, as storage is everywhere else. Machine types without a GPU are counted in the
progress line and left out. An offer is available when one host has its GPUs, vCPUs and memory
free (each of the three `max*Free` that the source gives, quoted or not; unknown without a
readable `maxGpuFree`); a unit
price is read from `{"value": "0.52"}` or, should the wrapper go, a bare decimal string or
number.

Uncertain: the only sample is a real-shaped test fixture of another project (two data centres,
2026); CUDO's own docs list this call under the authenticated REST API, and that project
stopped using it in June 2026, so the listing may now need a key or be gone. A response without
`machineTypes` fails the run. That `max*Free` is the most free on one host (and `total*Free`
the sum over hosts) is read from the names and the figures (max ≤ total), not documented.
"""

from __future__ import annotations

import math
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
from priceadvisor.collect.http import HttpSession
from priceadvisor.collect.pages import ParsedPage
from priceadvisor.records import PriceBasis, Pricing, RawQuote

REQUIRED = ("dataCenterId", "machineType", "gpuModel", "gpuPriceHr", "vcpuPriceHr")
NO_GPU = "machine types without a GPU"
# offer amount → the source's "most free on one host" field for it (integers in CUDO's
# published API client, so read as counts)
_FREE = {"gpus": "maxGpuFree", "vcpus": "maxVcpuFree", "memory": "maxMemoryGibFree"}


class CudoAdapter(Adapter):
    id: ClassVar[str] = "cudo"

    async def fetch(self, session: HttpSession, progress: ProgressCallback) -> AdapterOutput:
        url = self.endpoints["machine_types"]
        entries = parse_machine_types(await session.get_json(url))
        parsed = parse_offers(entries, Shape.from_manifest(self.manifest.source), url)
        progress(f"{len(entries)} machine types, " + parsed.summary())
        return AdapterOutput(quotes=parsed.quotes)


class Shape:
    """The standard VM priced per GPU count: vCPUs and memory per GPU, before clamping."""

    def __init__(self, gpu_counts: list[int], vcpus_per_gpu: int, memory_gib_per_gpu: int):
        self.gpu_counts, self.vcpus, self.memory = gpu_counts, vcpus_per_gpu, memory_gib_per_gpu

    @classmethod
    def from_manifest(cls, source: dict[str, Any]) -> Shape:
        return cls(
            [int(n) for n in source["gpu_counts"]],
            int(source["vcpus_per_gpu"]),
            int(source["memory_gib_per_gpu"]),
        )

    def size(self, entry: dict[str, Any], gpus: int) -> tuple[int, int]:
        """(vCPUs, GiB) for `gpus`, moved into the machine type's allowed ratios."""
        low, high = _ratio(entry, "minVcpuPerGpu", 1), _ratio(entry, "maxVcpuPerGpu", math.inf)
        vcpus = int(min(max(self.vcpus, low), high)) * gpus
        dense = _ratio(entry, "maxVcpuPerMemoryGib", math.inf)  # vCPUs per GiB, so fewest GiB
        sparse = _ratio(entry, "minVcpuPerMemoryGib", 0)
        fewest = math.ceil(vcpus / dense) if dense != math.inf else 1
        most = math.floor(vcpus / sparse) if sparse else self.memory * gpus
        return vcpus, min(max(self.memory * gpus, fewest), most)


def parse_machine_types(document: Any) -> list[dict[str, Any]]:
    if not isinstance(document, dict) or not isinstance(document.get("machineTypes"), list):
        raise SourceFormatError("no 'machineTypes' list (format changed?)")
    for entry in document["machineTypes"]:
        missing = [k for k in REQUIRED if not isinstance(entry, dict) or k not in entry]
        if missing:
            raise SourceFormatError(f"a machine type lacks {', '.join(missing)}")
    entries: list[dict[str, Any]] = document["machineTypes"]
    return entries


def parse_offers(entries: list[dict[str, Any]], shape: Shape, url: str) -> ParsedPage:
    """Every GPU machine type's standard shapes; the machine types without a GPU counted."""
    parsed = ParsedPage()
    for entry in entries:
        if entry.get("gpuModel"):
            parsed.quotes += offers(entry, shape, url)
        else:
            parsed.skipped[NO_GPU] += 1
    return parsed


def offers(entry: dict[str, Any], shape: Shape, url: str) -> list[RawQuote]:
    if not entry.get("gpuModel"):
        return []
    return [_quote(entry, gpus, *shape.size(entry, gpus), url) for gpus in shape.gpu_counts]


def node_price(entry: dict[str, Any], gpus: int, vcpus: int, memory_gib: int) -> float | None:
    """GPUs, vCPUs and memory at their unit prices, summed exactly; None if a price is bad."""
    amounts = {"gpuPriceHr": gpus, "vcpuPriceHr": vcpus, "memoryGibPriceHr": memory_gib}
    return sum_of_units([(_unit_price(entry, k), n) for k, n in amounts.items()])


def _unit_price(entry: dict[str, Any], key: str) -> Any:
    """`{"value": "0.52"}` as CUDO wraps it, or a bare value should the wrapper go."""
    value = entry.get(key)
    return json_object(entry, key).get("value") if isinstance(value, dict) else value


def fits_one_host(entry: dict[str, Any], needs: dict[str, int]) -> bool | None:
    """Whether one host has every amount free that the source states; None when it does not
    say how many GPUs are free."""
    known = {k: json_count(entry.get(field)) for k, field in _FREE.items()}
    if known["gpus"] is None:
        return None
    return all(needs[k] <= free for k, free in known.items() if free is not None)


def _quote(entry: dict[str, Any], gpus: int, vcpus: int, memory: int, url: str) -> RawQuote:
    model = entry.get("gpuModelId") or entry["gpuModel"]
    return RawQuote(
        region=str(entry["dataCenterId"]),
        instance_type=f"{entry['machineType']} {gpus}x{model}",
        pricing=Pricing.ON_DEMAND,
        price=node_price(entry, gpus, vcpus, memory),
        price_basis=PriceBasis.NODE,
        gpu_name_raw=str(entry["gpuModel"]),
        gpu_count=float(gpus),
        vcpus=float(vcpus),
        ram_gb=float(memory),
        available=fits_one_host(entry, {"gpus": gpus, "vcpus": vcpus, "memory": memory}),
        stock=gpus_free(entry.get("maxGpuFree")),
        source_url=url,
    )


def _ratio(entry: dict[str, Any], key: str, default: float) -> float:
    value = json_number(entry.get(key))
    return value if value is not None and value > 0 else default
