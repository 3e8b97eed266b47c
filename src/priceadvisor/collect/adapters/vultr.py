"""Vultr plan listings (public, no key): Cloud GPU plans and bare-metal plans.

Format: `GET /v2/plans?type=all&per_page=500` returns `{"plans": [...], "meta": {"total",
"links": {"next", "prev"}}}` and `GET /v2/plans-metal?per_page=500` the same with
`"plans_metal"`; a non-empty `meta.links.next` is a cursor passed back as `?cursor=` (Vultr API
v2 documentation). Cloud GPU plans (`type: "vcg"`; any plan with a `gpu_type` is read as one)
carry `gpu_type` ("NVIDIA_A100") and `gpu_vram_gb` (the plan's share of GPU memory);
`hourly_cost` is USD per plan (node) per hour. `locations` lists where a plan can be ordered:
one offer per plan and location.

GPU count: not a field. A plan's `gpu_vram_gb` divided by the whole GPU's memory (manifest
`[source.gpu_memory_gb]`, per gpu_type) gives the number of GPUs, and a fraction for plans that
hold part of one GPU (4 GB of an 80 GB A100 is 0.05 of a GPU): such a plan is an offer of that
fraction, so its per-GPU-hour price is the plan price over the fraction. The memory share is the
only share the API states; a MIG slice's compute share can differ slightly from it.

Bare metal: GPU model and count are not fields; they are read from the plan id
("vbm-112c-2048gb-8-h100-gpu": 8 × H100). An id with no count before the GPU
("vbm-72c-480gb-gh200-gpu", a real GH200 plan) is stored with its GPU but no count rather than a
guessed one; an id that mentions a GPU in any other form fails the run rather than being dropped.
`hourly_cost_preemptible` is the only spot-like price (a preemptible server) and is stored as
spot. Plans without a GPU are skipped and counted.

No location: a GPU plan whose `locations` is empty cannot be ordered anywhere, so it yields no
offer; it is counted under "GPU plans listing no location" in the progress line. A listing in
which every GPU plan lists no location fails the run with that reason (the core would fail a
run without offers anyway, but only as "no offers").

Availability and per-location prices: plans state `deploy_ondemand` / `deploy_preemptible`
(whether each kind can be deployed at all: an 8 × A100 plan is preemptible-only although it lists
an on-demand `hourly_cost`) and `location_cost` (per-location prices overriding the plan's),
as public clients of the live API read them. An on-demand price with `deploy_ondemand: false` is
kept but flagged not offered; a preemptible price is a spot offer only where
`deploy_preemptible` is true (or, for a plan that does not say, on bare metal as before).

Uncertain: the only samples are documentation-shaped fixtures of another project (no `meta`
block, three vcg and two metal plans); the cursor paging is from Vultr's API reference only.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any, ClassVar, NamedTuple

from priceadvisor.collect.adapters.base import (
    Adapter,
    AdapterOutput,
    ProgressCallback,
    SourceFormatError,
    exact_price,
    json_number,
    json_object,
)
from priceadvisor.collect.http import HttpSession
from priceadvisor.collect.pages import ParsedPage
from priceadvisor.records import PriceBasis, Pricing, RawQuote

PER_PAGE = "500"
MAX_PAGES = 20


class Hardware(NamedTuple):
    name: str
    gpus: float | None
    memory_gb: float | None  # of one whole GPU


# "…-2048gb-8-h100-gpu": the memory token, then the GPU count (absent on GH200 plans) and model.
_METAL_GPU = re.compile(r"-\d+gb-(?:(\d+)-)?([a-z0-9]+)-gpu$", re.IGNORECASE)


class VultrAdapter(Adapter):
    id: ClassVar[str] = "vultr"

    async def fetch(self, session: HttpSession, progress: ProgressCallback) -> AdapterOutput:
        memory = {str(k): float(v) for k, v in self.manifest.source["gpu_memory_gb"].items()}
        plans_url, metal_url = self.endpoints["plans"], self.endpoints["plans_metal"]
        plans = await walk(session, plans_url, "plans", {"type": "all"})
        metal = await walk(session, metal_url, "plans_metal", {})
        parsed = ParsedPage()
        for plan in plans:
            read_plan(parsed, plan, cloud_hardware(plan, memory), plans_url, metal=False)
        for plan in metal:
            read_plan(parsed, plan, metal_hardware(plan), metal_url, metal=True)
        require_a_location(parsed)
        progress(f"{len(plans)} plans, {len(metal)} bare-metal plans: {parsed.summary()}")
        return AdapterOutput(quotes=parsed.quotes)


async def walk(
    session: HttpSession, url: str, key: str, params: dict[str, str]
) -> list[dict[str, Any]]:
    plans: list[dict[str, Any]] = []
    cursor = ""
    for _ in range(MAX_PAGES):
        query = params | {"per_page": PER_PAGE} | ({"cursor": cursor} if cursor else {})
        page, cursor = parse_result_page(await session.get_json(url, params=query), key)
        plans.extend(page)
        if not cursor:
            return plans
    raise SourceFormatError(f"{key}: more than {MAX_PAGES} pages")


def parse_result_page(document: Any, key: str) -> tuple[list[dict[str, Any]], str]:
    if not isinstance(document, dict) or not isinstance(document.get(key), list):
        raise SourceFormatError(f"no {key!r} list (format changed?)")
    for plan in document[key]:
        if not isinstance(plan, dict) or "id" not in plan or "locations" not in plan:
            raise SourceFormatError(f"a plan in {key!r} lacks 'id' or 'locations'")
    links = (document.get("meta") or {}).get("links") or {}
    return document[key], str(links.get("next") or "")


NO_GPU = "plans without a GPU"
NO_LOCATION = "GPU plans listing no location"


def read_plan(
    parsed: ParsedPage, plan: dict[str, Any], hardware: Hardware | None, url: str, *, metal: bool
) -> None:
    """The plan's quotes into `parsed`; a plan with no GPU, or a GPU plan orderable nowhere
    (`locations` empty), counted by reason instead."""
    if hardware is None:
        parsed.skipped[NO_GPU] += 1
    elif not _locations(plan):
        parsed.skipped[NO_LOCATION] += 1
    else:
        parsed.quotes += plan_quotes(plan, hardware, url, metal=metal)


def require_a_location(parsed: ParsedPage) -> None:
    """A listing whose every GPU plan lists no location fails with that reason (rather than
    the core's bare "no offers"): plans stripped of their locations look like a changed
    format, not like Vultr withdrawing every GPU at once."""
    if parsed.skipped[NO_LOCATION] and not parsed.quotes:
        raise SourceFormatError(
            f"none of Vultr's {parsed.skipped[NO_LOCATION]} GPU plans lists a location "
            "(no location, so no offer; format changed?)"
        )


def parse_cloud_plan(plan: dict[str, Any], memory: dict[str, float], url: str) -> list[RawQuote]:
    hardware = cloud_hardware(plan, memory)
    return [] if hardware is None else plan_quotes(plan, hardware, url, metal=False)


def cloud_hardware(plan: dict[str, Any], memory: dict[str, float]) -> Hardware | None:
    gpu_type = plan.get("gpu_type")
    if not gpu_type:  # a GPU plan is one that names its GPU, whatever its `type` says
        return None
    whole = memory.get(str(gpu_type))
    return Hardware(str(gpu_type), gpu_share(plan.get("gpu_vram_gb"), whole), whole)


def gpu_share(vram: Any, whole_gb: float | None) -> float | None:
    """GPUs in a plan: its memory over one whole GPU's (0.05 for 4 GB of an 80 GB A100)."""
    stated = json_number(vram)
    if stated is None or stated <= 0 or not whole_gb:
        return None
    return round(float(Decimal(str(stated)) / Decimal(str(whole_gb))), 4)


def parse_metal_plan(plan: dict[str, Any], url: str) -> list[RawQuote]:
    hardware = metal_hardware(plan)
    return [] if hardware is None else plan_quotes(plan, hardware, url, metal=True)


def metal_hardware(plan: dict[str, Any]) -> Hardware | None:
    plan_id = str(plan["id"])
    found = _METAL_GPU.search(plan_id)
    if found is None:
        if "gpu" in plan_id.lower():
            raise SourceFormatError(f"bare-metal plan {plan_id!r}: cannot read its GPUs")
        return None
    count = found.group(1)
    return Hardware(found.group(2), float(count) if count else None, None)


def plan_quotes(
    plan: dict[str, Any], hardware: Hardware, url: str, *, metal: bool
) -> list[RawQuote]:
    """On-demand and preemptible quotes of a plan in each location, at the location's own
    price where `location_cost` gives one."""
    quotes = []
    for location in _locations(plan):
        cost = _location_cost(plan, location)
        on_demand = _quote(plan, location, Pricing.ON_DEMAND, cost.get("hourly_cost"), hardware)
        if plan.get("deploy_ondemand") is False:
            on_demand.not_offered_reason = NOT_ON_DEMAND
        quotes.append(on_demand)
        if _preemptible(plan, metal) and cost.get("hourly_cost_preemptible") is not None:
            spot = cost["hourly_cost_preemptible"]
            quotes.append(_quote(plan, location, Pricing.SPOT, spot, hardware))
    for quote in quotes:
        quote.source_url = url
    return quotes


NOT_ON_DEMAND = "Vultr deploy_ondemand: false (the plan is deployed preemptible only)"


def _preemptible(plan: dict[str, Any], metal: bool) -> bool:
    """Whether the plan can be deployed preemptible: `deploy_preemptible` where the plan says;
    plans that do not say (the older listing) only where they are bare metal with a price."""
    stated = plan.get("deploy_preemptible")
    return stated is True or (stated is None and metal)


def _location_cost(plan: dict[str, Any], location: str) -> dict[str, Any]:
    override = json_object(json_object(plan, "location_cost"), location)
    return override or plan


def _locations(plan: dict[str, Any]) -> list[str]:
    locations = plan["locations"]
    if not isinstance(locations, list):
        raise SourceFormatError(f"plan {plan['id']}: 'locations' is not a list")
    return [str(location) for location in locations]


def _quote(
    plan: dict[str, Any], location: str, pricing: str, price: Any, gpu: Hardware
) -> RawQuote:
    return RawQuote(
        region=location,
        instance_type=str(plan["id"]),
        pricing=pricing,
        price=exact_price(price),
        price_basis=PriceBasis.NODE,
        gpu_name_raw=gpu.name,
        gpu_count=gpu.gpus,
        gpu_memory_gb=gpu.memory_gb,
        vcpus=json_number(plan.get("vcpu_count", plan.get("cpu_threads"))),
        ram_gb=_gb(plan.get("ram")),
    )


def _gb(megabytes: Any) -> float | None:
    number = json_number(megabytes)
    return round(number / 1024, 1) if number else None
