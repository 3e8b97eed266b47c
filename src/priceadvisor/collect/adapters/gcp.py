"""Google Cloud Compute Engine via the Cloud Billing Catalog API (needs an API key).

Format: `GET …/services/6F81-5844-456A/skus?key=…`,
paged by `nextPageToken`. Each SKU has a description ("Nvidia Tesla A100 GPU running in
Americas", "Spot Preemptible A2 Instance Core running in EMEA"), category.resourceGroup
(GPU, CPU, RAM, …), category.usageType (OnDemand, Preemptible = spot, Commit…), serviceRegions
and pricingInfo[0].pricingExpression.tieredRates[0].unitPrice {units, nanos}: USD per GPU-hour,
vCPU-hour or GiB-hour.

There is no price per machine type: a machine's price in a region is vCPUs × the family's core
SKU + GiB × its RAM SKU + GPUs × the GPU SKU, each for the same region and usage type. Machine
shapes (vCPUs, RAM, GPU SKU name, count) for A2/A3/A4/G2 are in the manifest ([source.machines]),
as are N1 machines with attached T4/P4/V100/P100 GPUs, priced from the "N1 Predefined Instance
Core/Ram" SKUs plus the GPU SKU (GCP has no named N1 GPU machine type: the manifest names each
documented-valid pairing "n1-standard-8+v100x1").
SKUs for sole tenancy, reservations, commitments, DWS calendar mode, premium and custom shapes
are not on-demand or spot list prices and are skipped.

Each part's price is checked to be USD per hour (RAM: per GiB-hour, "GiBy.h") at a single
rate: a part in another currency or unit, or with tiers at different rates, fails the run
rather than being summed into a wrong machine price; so does a second SKU that prices the same
part in the same region differently (which of the two holds cannot be told).

Uncertain: B200 (A4) is priced per "1 gpu slice" and is read here as the whole per-GPU price of
an A4 machine (core and RAM included); the GPU SKU spellings of A3 Mega / Ultra are taken from
public client code. The API key only travels in the query string, which never appears in logs or
errors (the HTTP layer strips query strings from every message).
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any, ClassVar

from priceadvisor.collect.adapters.base import (
    Adapter,
    AdapterOutput,
    ProgressCallback,
    SourceFormatError,
)
from priceadvisor.collect.http import HttpSession
from priceadvisor.records import PriceBasis, Pricing, RawQuote

MAX_PAGES = 200
_SKIP = re.compile(r"sole tenancy|reserved|commit|premium|custom|suspended|dws", re.IGNORECASE)
_DESCRIPTION = re.compile(
    r"^(?:spot preemptible |preemptible )?(?P<what>.+?) (?P<kind>gpu|instance core|instance ram"
    r"|\(1 gpu slice\))(?: running in .*)?$",
    re.IGNORECASE,
)
_USAGE = {"OnDemand": Pricing.ON_DEMAND, "Preemptible": Pricing.SPOT}
_UNITS = {"gpu": "h", "core": "h", "ram": "GiBy.h"}

# (kind, name, usage) -> region -> unit price
Prices = dict[tuple[str, str, str], dict[str, float]]


class GcpAdapter(Adapter):
    id: ClassVar[str] = "gcp"

    async def fetch(self, session: HttpSession, progress: ProgressCallback) -> AdapterOutput:
        # Without a key the provider is skipped before this runs; offline it is not needed.
        key = self.credential.get_secret_value() if self.credential else ""
        url, token = self.endpoints["skus"], ""
        prices: Prices = defaultdict(dict)
        for page in range(1, MAX_PAGES + 1):
            params = {"key": key, "currencyCode": "USD", "pageSize": "5000"}
            if token:
                params["pageToken"] = token
            skus, token = parse_result_page(await session.get_json(url, params=params))
            for sku in skus:
                collect(sku, prices)
            progress(f"page {page}, {len(prices)} price series")
            if not token:
                machines = self.manifest.source.get("machines", {})
                return AdapterOutput(quotes=assemble(machines, prices, url))
        raise SourceFormatError(f"more than {MAX_PAGES} pages: nextPageToken never ends")


def parse_result_page(document: Any) -> tuple[list[dict[str, Any]], str]:
    if not isinstance(document, dict) or not isinstance(document.get("skus"), list):
        raise SourceFormatError("no 'skus' list (format changed?)")
    token = document.get("nextPageToken") or ""
    if not all(isinstance(s, dict) for s in document["skus"]):
        raise SourceFormatError("a SKU is not a JSON object (format changed?)")
    return document["skus"], str(token)


def collect(sku: dict[str, Any], prices: Prices) -> None:
    """File one SKU's unit price under (kind, name, usage) for each of its regions."""
    try:
        description = str(sku["description"])
        usage = str(sku["category"]["usageType"])
        regions = list(sku.get("serviceRegions") or [])
        expression = sku["pricingInfo"][0]["pricingExpression"]
        rate = expression["tieredRates"][0]["unitPrice"]
    except (KeyError, IndexError, TypeError) as exc:
        raise SourceFormatError(f"SKU {sku.get('skuId', '?')} lacks {exc}") from None
    match = _DESCRIPTION.match(description)
    if usage not in _USAGE or match is None or _SKIP.search(description):
        return
    kind = _kind(match.group("kind"))
    check_terms(sku, kind, expression, rate)
    try:
        price = int(rate.get("units") or 0) + int(rate.get("nanos") or 0) / 1e9
    except (TypeError, ValueError):
        raise SourceFormatError(f"SKU {sku.get('skuId', '?')}: price {rate!r}") from None
    series = prices[kind, match.group("what").strip().lower(), usage]
    for region in regions:
        if region in series and series[region] != price:
            # Two SKUs price one part in one region differently: no way to tell which holds.
            raise SourceFormatError(
                f"SKU {sku.get('skuId', '?')} ({description}) prices {region} at {price}, "
                f"another SKU of the same part at {series[region]}"
            )
        series[region] = price


def check_terms(sku: dict[str, Any], kind: str, expression: Any, rate: Any) -> None:
    """A part's price must be USD per hour (per GiB-hour for RAM) at one rate: the machine's
    price is their sum, so another currency, unit or a tiered rate would be summed wrongly."""
    currency = rate.get("currencyCode", "USD") if isinstance(rate, dict) else None
    unit = expression.get("usageUnit") if isinstance(expression, dict) else None
    prices = {str(t.get("unitPrice")) for t in expression.get("tieredRates", [])}
    if currency != "USD" or unit != _UNITS[kind] or len(prices) > 1:
        raise SourceFormatError(
            f"SKU {sku.get('skuId', '?')}: priced in {currency!r} per {unit!r} over "
            f"{len(prices)} tiers, not USD per {_UNITS[kind]!r} at one rate"
        )


def _kind(text: str) -> str:
    lowered = text.lower()
    return {"instance core": "core", "instance ram": "ram"}.get(lowered, "gpu")


def assemble(machines: dict[str, Any], prices: Prices, url: str) -> list[RawQuote]:
    quotes = []
    for name, shape in machines.items():
        for usage, pricing in _USAGE.items():
            for region, price in _machine_prices(shape, usage, prices).items():
                quotes.append(
                    RawQuote(
                        region=region,
                        instance_type=name,
                        pricing=pricing,
                        price=price,
                        price_basis=PriceBasis.NODE,
                        gpu_name_raw=str(shape["gpu"]),
                        gpu_count=float(shape["gpus"]),
                        vcpus=float(shape["vcpus"]),
                        ram_gb=float(shape["ram_gb"]),
                        source_url=url,
                    )
                )
    return quotes


def _machine_prices(shape: dict[str, Any], usage: str, prices: Prices) -> dict[str, float]:
    """Regions where every part of the machine has a price, and the machine's price there."""
    gpu = prices.get(("gpu", str(shape["gpu"]).lower(), usage), {})
    family = str(shape.get("family", "")).lower()
    parts_included = bool(shape.get("slice_includes_host", False))
    core = prices.get(("core", family, usage), {})
    ram = prices.get(("ram", family, usage), {})
    out = {}
    for region, gpu_price in gpu.items():
        total = gpu_price * shape["gpus"]
        if not parts_included:
            if region not in core or region not in ram:
                continue
            total += core[region] * shape["vcpus"] + ram[region] * shape["ram_gb"]
        out[region] = round(total, 6)
    return out
