"""OVHcloud Public Cloud order catalog (public, no key).

Format (from OVHcloud's API reference for `GET /1.0/order/catalog/public/cloud?ovhSubsidiary=FR`
and the field list of another project's parser; no capture of our own): `{"catalogId",
"locale": {"currencyCode", "subsidiary", "taxRate"}, "plans": [...], "addons": [...]}`. Each
instance flavour is an addon per billing mode: `planCode` "h100-380.consumption" (hourly) or
"h100-380.monthly.postpaid" (monthly), `invoiceName`, `product`, `pricings: [{price,
formattedPrice, interval, intervalUnit, ...}]`, `blobs {commercial {brick}, tags, technical
{cpu {cores}, memory {size}, gpu {model, number, memory {size}}, os {family}}}`.

`price` is an integer in 1e-8 currency units (280000000 = 2.80), per flavour (node) per hour,
before VAT; it is converted exactly and cross-checked against `formattedPrice` (a price that
disagrees by more than display rounding is passed on as unusable, for the core to reject; a
pricing without `formattedPrice`, as other public parsers' fixtures show it, keeps its exact
price).
Only `.consumption` plans are on-demand: `.monthly.postpaid` is a monthly commitment and is
never stored. Only `brick == "gpu"` addons are GPU instances (`ai-*` addons carry GPU blobs but
are priced per minute); Windows flavours (`win-*`) carry a licence and are skipped. A flavour
tagged "coming_soon" is stored as not available and passed on as not offered (listed with a
price, not orderable yet): the core's offer guard flags it, so it is never ranked. Currency
comes from `locale.currencyCode` (EUR for FR) and goes through the FX path; a catalog of
another subsidiary fails the run.

The public catalog names no data centres: prices hold for every Public Cloud region of the
billing subsidiary, so offers are stored under region "global" (like Lambda's list prices) and
have no country. Per-region availability would need the authenticated project flavour API.

The FR body is about 8 MB; it is parsed once and only GPU addons are kept.
"""

from __future__ import annotations

import re
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
from priceadvisor.collect.http import HttpSession
from priceadvisor.records import PriceBasis, Pricing, RawQuote

REGION = "global"
HOURLY = ".consumption"
_FORMATTED = re.compile(r"(\d+(?:\.\d+)?)")
DISPLAY_ROUNDING = 0.005  # formattedPrice shows cents


class OvhAdapter(Adapter):
    id: ClassVar[str] = "ovh"

    async def fetch(self, session: HttpSession, progress: ProgressCallback) -> AdapterOutput:
        url = self.endpoints["catalog"]
        subsidiary = str(self.manifest.source["subsidiary"])
        catalog = await session.get_json(url, params={"ovhSubsidiary": subsidiary})
        currency, addons = parse_catalog(catalog, subsidiary)
        gpu_addons = [a for a in addons if is_hourly_gpu_flavour(a)]
        progress(f"{len(addons)} addons, {len(gpu_addons)} hourly GPU flavours")
        return AdapterOutput(quotes=[parse_addon(a, currency, url) for a in gpu_addons])


def parse_catalog(document: Any, subsidiary: str) -> tuple[str, list[dict[str, Any]]]:
    if not isinstance(document, dict) or not isinstance(document.get("addons"), list):
        raise SourceFormatError("no 'addons' list (format changed?)")
    locale = json_object(document, "locale")
    if str(locale.get("subsidiary", "")).upper() != subsidiary.upper():
        raise SourceFormatError(
            f"catalog of subsidiary {locale.get('subsidiary')!r}, not {subsidiary!r}"
        )
    currency = locale.get("currencyCode")
    if not isinstance(currency, str) or len(currency) != 3:
        raise SourceFormatError("the catalog names no currency (locale.currencyCode)")
    addons: list[Any] = document["addons"]
    if not all(isinstance(a, dict) for a in addons):
        raise SourceFormatError("an addon is not a JSON object (format changed?)")
    return currency.upper(), addons


def is_hourly_gpu_flavour(addon: dict[str, Any]) -> bool:
    blobs = json_object(addon, "blobs")
    plan = str(addon.get("planCode", ""))
    return (
        json_object(blobs, "commercial").get("brick") == "gpu"
        and plan.endswith(HOURLY)
        and not plan.startswith("win-")
        and json_object(json_object(blobs, "technical"), "os").get("family", "linux") != "windows"
    )


def parse_addon(addon: dict[str, Any], currency: str, url: str) -> RawQuote:
    blobs = json_object(addon, "blobs")
    technical = json_object(blobs, "technical")
    gpu = json_object(technical, "gpu")
    tags = blobs.get("tags")
    coming = isinstance(tags, list) and "coming_soon" in tags
    return RawQuote(
        region=REGION,
        instance_type=str(addon.get("invoiceName") or addon["planCode"]).removesuffix(HOURLY),
        pricing=Pricing.ON_DEMAND,
        price=hourly_price(addon),
        price_basis=PriceBasis.NODE,
        currency=currency,
        gpu_name_raw=str(gpu.get("model") or "") or None,
        gpu_count=json_number(gpu.get("number")),
        gpu_memory_gb=json_number(json_object(gpu, "memory").get("size")),
        vcpus=json_number(json_object(technical, "cpu").get("cores")),
        ram_gb=json_number(json_object(technical, "memory").get("size")),
        available=not coming,
        source_url=url,
        not_offered_reason=COMING_SOON if coming else None,
    )


COMING_SOON = "OVHcloud tags it coming_soon: listed with a price, not orderable yet"


def hourly_price(addon: dict[str, Any]) -> float | None:
    """The one pricing phase's price in currency units, if it matches its own display."""
    pricings = addon.get("pricings")
    if not isinstance(pricings, list) or len(pricings) != 1 or not isinstance(pricings[0], dict):
        return None
    price = exact_price(pricings[0].get("price"), scale=8)
    if "formattedPrice" not in pricings[0]:
        return price  # the display copy is a cross-check; without it the exact price stands
    shown = _FORMATTED.search(str(pricings[0].get("formattedPrice", "")).replace(",", "."))
    if price is None or shown is None or abs(price - float(shown.group(1))) > DISPLAY_ROUNDING:
        return None
    return price
