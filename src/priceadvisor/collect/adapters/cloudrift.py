"""CloudRift VM instance types (no key needed for the list call).

Uncertain: built from the documented response shape and public client code that reads it, not
from a captured response (none existed). The manifest keeps the provider disabled by default
until a live response has been recorded (`fetch --provider cloudrift --record DIR`) and
checked against this docstring.

Format: `POST /api/v1/instance-types/list` with `{"version": "2025-03-21", "data": {"selector":
{"ByServiceAndLocation": {"services": ["vm"]}}}}`; the server ignores the version pin. Answer:
`{"version", "data": {"instance_types": [{name, brand_short ("RTX 4090", "MI350X"),
datacenters, variants: [{name ("rtx49-8c-nr.1"), gpu_count, vram, cpu_count,
logical_cpu_count, dram, disk, cost_per_hour, available_nodes, available_nodes_per_dc,
nodes_per_dc, …}]}]}}`.

Traps: `cost_per_hour` is US **cents** per hour for the whole variant, with fractions (139.36 is
$1.3936), stored per node; `vram` (per GPU), `dram` and `disk` are **bytes** (read as GiB);
`nodes_per_dc` lists every node per datacenter and `available_nodes_per_dc` the free ones: one
offer per variant and datacenter of `nodes_per_dc`, in stock when that datacenter has a free
node; a variant with no datacenter at all, or with no GPU (`gpu_count` 0), is no offer
(counted in the progress line). vCPUs are
`logical_cpu_count` (threads, what a VM is sold by), else `cpu_count`. Datacenter names are the
regions as given (their spelling is inconsistent: `us-east-nc-nr-1`, `ustx1a_a01`). An error
can come back as a bare JSON string instead of the object: a format error quoting its start.
There is no spot pricing.
"""

from __future__ import annotations

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

REQUEST = {
    "version": "2025-03-21",
    "data": {"selector": {"ByServiceAndLocation": {"services": ["vm"]}}},
}
TYPE_KEYS = ("name", "brand_short", "variants")
VARIANT_KEYS = ("name", "gpu_count", "cost_per_hour", "nodes_per_dc")
GIB = 2**30


class CloudRiftAdapter(Adapter):
    id: ClassVar[str] = "cloudrift"

    async def fetch(self, session: HttpSession, progress: ProgressCallback) -> AdapterOutput:
        url = self.endpoints["instance_types"]
        kinds = parse_instance_types(await session.post_json(url, REQUEST))
        quotes, unplaced = [], 0
        for kind in kinds:
            for variant in parse_variants(kind):
                offers = variant_quotes(kind, variant, url)
                quotes.extend(offers)
                unplaced += not offers
        progress(f"{len(quotes)} offers; {unplaced} variants without GPUs or datacenter")
        return AdapterOutput(quotes=quotes)


def parse_instance_types(document: Any) -> list[dict[str, Any]]:
    if isinstance(document, str):
        text = " ".join(document.split())[:120]
        raise SourceFormatError(f"CloudRift answered with a message, not instance types: {text!r}")
    data = document.get("data") if isinstance(document, dict) else None
    if not isinstance(data, dict) or "instance_types" not in data:
        raise SourceFormatError("no data.instance_types in the answer (format changed?)")
    return json_records(data["instance_types"], TYPE_KEYS, "the instance types", "an instance type")


def parse_variants(kind: dict[str, Any]) -> list[dict[str, Any]]:
    return json_records(kind["variants"], VARIANT_KEYS, "a type's variants", "a variant")


def variant_quotes(kind: dict[str, Any], variant: dict[str, Any], url: str) -> list[RawQuote]:
    """One quote per datacenter holding nodes of this variant (none for a CPU-only one)."""
    if not json_number(variant["gpu_count"]):
        return []
    nodes = _counts(variant, "nodes_per_dc")
    free = _counts(variant, "available_nodes_per_dc")
    return [
        _quote(kind, variant, datacenter, free.get(datacenter, 0) > 0, url)
        for datacenter, count in nodes.items()
        if count > 0
    ]


def _quote(
    kind: dict[str, Any], variant: dict[str, Any], datacenter: str, free: bool, url: str
) -> RawQuote:
    vram, dram = json_number(variant.get("vram")), json_number(variant.get("dram"))
    return RawQuote(
        region=datacenter,
        instance_type=str(variant["name"]),
        pricing=Pricing.ON_DEMAND,
        price=exact_price(variant["cost_per_hour"], scale=2),
        price_basis=PriceBasis.NODE,
        gpu_name_raw=str(kind["brand_short"]),
        gpu_count=json_number(variant["gpu_count"]),
        gpu_memory_gb=vram / GIB if vram else None,
        vcpus=json_number(variant.get("logical_cpu_count", variant.get("cpu_count"))),
        ram_gb=dram / GIB if dram else None,
        available=free,
        source_url=url,
    )


def _counts(variant: dict[str, Any], key: str) -> dict[str, int]:
    """A {datacenter: count} map; a quoted count is read as its number, and anything that is no
    whole count ("many", 1.5, -1) is a format error."""
    counts = json_object(variant, key)
    out: dict[str, int] = {}
    for datacenter, value in counts.items():
        number = json_count(value)
        if number is None:
            raise SourceFormatError(
                f"{key} of {variant['name']!r} has {value!r} for {datacenter}, not a count"
            )
        out[str(datacenter)] = number
    return out
