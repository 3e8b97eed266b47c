"""Latitude.sh bare-metal GPU plans, from the public pricing page (Next.js, no authentication).

Format (verified on a capture of https://www.latitude.sh/pricing, 2026-08-22): the page streams
React flight data, `self.__next_f.push([1,"..."])` script strings in which every quote is
written `\\"`; the `plansData.servers` list holds one entry per plan: `attributes.slug`,
`specs.gpu` (`{count, type, vram_per_gpu}`, or `{}` for a CPU plan) and `regions[]`, each with a
`name`, a `stock_level` and `pricing.USD`/`pricing.BRL` `{hour, month, year}`. Prices are per
node (an 8-GPU plan at 48 USD/hour is 6 per GPU).

Traps handled: the string escaping is undone before parsing; CPU plans (`"gpu":{}`) are skipped;
a region whose USD hour price is `null` (with a BRL `0`) is not offered, not a $0 price, and is
counted; a priced region with no stock is still a list price (available = false); BRL prices are
a separately set list price, not USD at an FX rate, and are left out (one currency per offer);
month and year figures are commitments and are left out. Regions are Latitude's country names.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from priceadvisor.collect.adapters.base import PageAdapter, SourceFormatError
from priceadvisor.collect.pages import ParsedPage, flight_text, json_values
from priceadvisor.records import PriceBasis, Pricing, RawQuote


class LatitudeAdapter(PageAdapter):
    id: ClassVar[str] = "latitude"

    def parse(self, html: str, url: str) -> ParsedPage:
        return parse_page(html, url)


def parse_page(html: str, url: str) -> ParsedPage:
    page = ParsedPage()
    for plan in _plans(html):
        attributes = plan.get("attributes") or {}
        gpu = (attributes.get("specs") or {}).get("gpu") or {}
        if not gpu:
            continue  # a CPU plan
        for region in attributes.get("regions") or []:
            page.quotes += _quotes(attributes, gpu, region, url, page)
    return page


def _plans(html: str) -> list[dict[str, Any]]:
    found = [v for v in json_values(flight_text(html), "plansData") if isinstance(v, dict)]
    servers = [s for v in found if isinstance(s := v.get("servers"), list)]
    if not servers:
        raise SourceFormatError("no plansData.servers in the page's flight data (layout changed?)")
    return [p for p in servers[0] if isinstance(p, dict)]


def _quotes(
    plan: dict[str, Any], gpu: dict[str, Any], region: dict[str, Any], url: str, page: ParsedPage
) -> list[RawQuote]:
    prices = region.get("pricing") or {}
    hour = (prices.get("USD") or {}).get("hour")
    page.skipped["BRL list prices"] += int("BRL" in prices)
    if hour is None:
        page.skipped["regions without a USD price"] += 1
        return []
    page.skipped["monthly/yearly commitment prices"] += 1
    if not isinstance(hour, int | float) or not isinstance(gpu.get("count"), int | float):
        raise SourceFormatError(f"{plan.get('slug')}: hour price or GPU count is not a number")
    return [
        RawQuote(
            region=_region_code(str(region.get("name", ""))),
            instance_type=str(plan.get("slug", "")),
            pricing=Pricing.ON_DEMAND,
            price=float(hour),
            price_basis=PriceBasis.NODE,
            gpu_name_raw=gpu.get("type"),
            gpu_count=float(gpu["count"]),
            gpu_memory_gb=gpu.get("vram_per_gpu"),
            available=region.get("stock_level") not in ("unavailable", None),
            stock=stock_level(region.get("stock_level")),
            source_url=url,
        )
    ]


def _region_code(name: str) -> str:
    """ "United States" -> "united-states": Latitude prices per country, named in English."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def stock_level(value: Any) -> str | None:
    """Latitude's own level word ("high", "medium", "low", "unavailable"), when it gives one."""
    return value if isinstance(value, str) and value else None
