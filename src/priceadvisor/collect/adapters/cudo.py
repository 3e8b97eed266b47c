"""CUDO Compute VM machine types (public listing, no key needed per earlier public use).

Format: `GET /v1/vms/machine-types` returns `{"machineTypes": [...]}`, one entry per machine
type and data centre: `dataCenterId` ("no-luster-1"), `machineType`, `gpuModel` ("RTX A5000"),
`gpuModelId`, unit prices as decimal strings in USD per hour (`gpuPriceHr`, `vcpuPriceHr`,
`memoryGibPriceHr`, `minStorageGibPriceHr`, `ipv4PriceHr`, each `{"value": "0.520000"}`), the
allowed shapes (`minVcpuPerGpu`/`maxVcpuPerGpu`, `minVcpuPerMemoryGib`/`maxVcpuPerMemoryGib`,
vCPUs per GiB) and availability (`maxGpuFree`: GPUs free on one host).

CUDO sells no fixed instance: a VM is assembled from GPUs, vCPUs and memory, each at its unit
price. An offer here is a documented standard shape per GPU count (manifest `[source]`
`gpu_counts`, `vcpus_per_gpu`, `memory_gib_per_gpu`, clamped into the machine type's allowed
ratios), priced per node as GPUs × GPU price + vCPUs × vCPU price + GiB × memory price in
decimal arithmetic; the offer records the vCPUs and RAM it was priced with. Boot disk and IPv4
are extra, as storage is everywhere else. Machine types without a GPU are skipped.

Uncertain: the only sample is a real-shaped test fixture of another project (two data centres,
2026); CUDO's own docs list this call under the authenticated REST API, and that project
stopped using it in June 2026, so the listing may now need a key or be gone. A response without
`machineTypes` fails the run.
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
    json_number,
    json_object,
    sum_of_units,
)
from priceadvisor.collect.http import HttpSession
from priceadvisor.records import PriceBasis, Pricing, RawQuote

REQUIRED = ("dataCenterId", "machineType", "gpuModel", "gpuPriceHr", "vcpuPriceHr")


class CudoAdapter(Adapter):
    id: ClassVar[str] = "cudo"

    async def fetch(self, session: HttpSession, progress: ProgressCallback) -> AdapterOutput:
        url = self.endpoints["machine_types"]
        entries = parse_machine_types(await session.get_json(url))
        progress(f"{len(entries)} machine types")
        shape = Shape.from_manifest(self.manifest.source)
        return AdapterOutput(quotes=[q for e in entries for q in offers(e, shape, url)])


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


def offers(entry: dict[str, Any], shape: Shape, url: str) -> list[RawQuote]:
    if not entry.get("gpuModel"):
        return []
    free = json_number(entry.get("maxGpuFree"))
    return [_quote(entry, gpus, *shape.size(entry, gpus), free, url) for gpus in shape.gpu_counts]


def node_price(entry: dict[str, Any], gpus: int, vcpus: int, memory_gib: int) -> float | None:
    """GPUs, vCPUs and memory at their unit prices, summed exactly; None if a price is bad."""
    amounts = {"gpuPriceHr": gpus, "vcpuPriceHr": vcpus, "memoryGibPriceHr": memory_gib}
    return sum_of_units([(json_object(entry, k).get("value"), n) for k, n in amounts.items()])


def _quote(
    entry: dict[str, Any], gpus: int, vcpus: int, memory: int, free: float | None, url: str
) -> RawQuote:
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
        available=None if free is None else free >= gpus,
        stock=gpus_free(free),
        source_url=url,
    )


def _ratio(entry: dict[str, Any], key: str, default: float) -> float:
    value = json_number(entry.get(key))
    return value if value is not None and value > 0 else default
