"""Hyperbolic on-demand rental options (no key needed).

Format (verified against a real capture of 2026-08): `GET /v2/alpha/on-demand/rental-options`
returns a bare JSON list, no envelope. Each option has `enabled`, `region`, `gpuType` ("h100"),
`gpuFormFactor` ("sxm5", "pcie"), `gpuCount`, `machineType` ("virtual-machine", "bare-metal"),
`connectionType` ("ethernet", "infiniband") with an optional `ethernetVariant` ("rocev2"),
`nodes` (CPU, RAM, storage) and an optional `totalAvailable`.

`costPerHourCents` is the customer price of the WHOLE option in integer US cents per hour, so it
is stored per node (cents / 100, exactly), and the per-GPU price comes from dividing by
gpuCount in the core. `providerCostPerHourCents` is Hyperbolic's supplier cost: it looks like a
price (and may even exceed the customer price) but is never read. The same chip is sold in
several regions at different prices, and PCIe and SXM parts are different products, so the
form factor, count, machine type and fabric are all part of the offer's identity. A missing
`totalAvailable` means unknown, not sold out; a quoted one ("0") is read as its number, and one
that is no whole count ("many", -1) is unknown too. The vCPUs and RAM of an option are summed
over its `nodes` (a list: every capture has one node per option, whose `gpuCount` equals the
option's).

Uncertain: whether `totalAvailable` counts GPUs or whole options is not documented (the capture
has it on one 1-GPU option only); it is stored as the stock level as given, and any positive
value makes the option available. Disabled options (`enabled: false`) are not
offered: counted in the progress line and left out. An `enabled` that is not a JSON boolean
(null, "true") fails the run: whether the option exists cannot be told.
"""

from __future__ import annotations

from typing import Any, ClassVar

from priceadvisor.collect.adapters.base import (
    Adapter,
    AdapterOutput,
    ProgressCallback,
    SourceFormatError,
    exact_price,
    gpus_free,
    json_count,
    json_number,
    json_records,
)
from priceadvisor.collect.http import HttpSession
from priceadvisor.collect.pages import ParsedPage
from priceadvisor.records import PriceBasis, Pricing, RawQuote

REQUIRED = ("enabled", "region", "gpuType", "gpuFormFactor", "gpuCount", "costPerHourCents")
DISABLED = "disabled options"


class HyperbolicAdapter(Adapter):
    id: ClassVar[str] = "hyperbolic"

    async def fetch(self, session: HttpSession, progress: ProgressCallback) -> AdapterOutput:
        url = self.endpoints["rental_options"]
        parsed = parse_rental_options(await session.get_json(url), url)
        progress(parsed.summary())
        return AdapterOutput(quotes=parsed.quotes)


def parse_rental_options(document: Any, url: str) -> ParsedPage:
    """The enabled options as quotes; the disabled ones counted, never silently dropped."""
    parsed = ParsedPage()
    for option in parse_options(document):
        if option["enabled"]:
            parsed.quotes.append(parse_option(option, url))
        else:
            parsed.skipped[DISABLED] += 1
    return parsed


def parse_options(document: Any) -> list[dict[str, Any]]:
    options = json_records(document, REQUIRED, "the rental options", "a rental option")
    for option in options:
        if not isinstance(option["enabled"], bool):
            raise SourceFormatError(
                f"rental option {instance_type(option)} in {option['region']}: "
                f"enabled is {option['enabled']!r}, not true or false"
            )
    return options


def parse_option(option: dict[str, Any], url: str) -> RawQuote:
    gpus = json_number(option["gpuCount"])
    available = option.get("totalAvailable")
    return RawQuote(
        region=str(option["region"]),
        instance_type=instance_type(option),
        pricing=Pricing.ON_DEMAND,
        price=exact_price(option["costPerHourCents"], scale=2),
        price_basis=PriceBasis.NODE,
        gpu_name_raw=f"{option['gpuType']} {option['gpuFormFactor']}",
        gpu_count=gpus,
        vcpus=_over_nodes(option, "vcpuCount", "cpuCount"),
        ram_gb=_over_nodes(option, "ramGb"),
        available=_positive(available),
        stock=gpus_free(available),
        source_url=url,
    )


def instance_type(option: dict[str, Any]) -> str:
    """ "h100-sxm5 x8 bare-metal infiniband": every attribute that makes a different product."""
    fabric = str(option.get("connectionType") or "")
    variant = option.get("ethernetVariant")
    if variant and variant != "normal":
        fabric = f"{fabric}-{variant}"
    parts = (
        f"{option['gpuType']}-{option['gpuFormFactor']}",
        f"x{option['gpuCount']}",
        option.get("machineType"),
        fabric,
    )
    return " ".join(str(p) for p in parts if p)


def _over_nodes(option: dict[str, Any], *keys: str) -> float | None:
    """The sum over the option's nodes of the first of `keys` each node states; None when a
    node states none of them (a part is unknown, so the whole is)."""
    nodes = option.get("nodes")
    if not isinstance(nodes, list) or not nodes:
        return None
    total = 0.0
    for node in nodes:
        found = [json_number(node.get(k)) for k in keys] if isinstance(node, dict) else [None]
        value = next((v for v in found if v is not None), None)
        if value is None:
            return None
        total += value
    return total


def _positive(value: Any) -> bool | None:
    count = json_count(value)
    return None if count is None else count > 0
