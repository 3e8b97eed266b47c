"""Latitude.sh bare-metal GPU plans, from the public pricing page (Next.js, no authentication).

Format (verified on a capture of https://www.latitude.sh/pricing, 2026-08-22): the page streams
React flight data, `self.__next_f.push([1,"..."])` script strings in which every quote is
written `\\"`; the `plansData.servers` list holds one entry per plan: `attributes.slug`,
`specs.gpu` (`{count, type, vram_per_gpu}`, or `{}` for a CPU plan) and `regions[]`, each with a
`name`, a `stock_level` and `pricing.USD`/`pricing.BRL` `{hour, month, year}`. Prices are per
node (an 8-GPU plan at 48 USD/hour is 6 per GPU).

Traps handled: the string escaping is undone before parsing; CPU plans (`"gpu":{}`) are skipped;
a region whose USD hour price is `null` (with a BRL `0`) is not offered, not a $0 price, and is
counted; a priced region with no stock is still a list price (available = false): a region is
available only when its `stock_level` word ("high", "medium", "low"; "unavailable") and its
`locations.in_stock` sites (empty when none) both say so; a new level word is left to the site
list, and with no site list either the run fails; BRL prices are
a separately set list price, not USD at an FX rate, and are left out (one currency per offer);
Regions are Latitude's country names.

The `month` and `year` figures are commitments, stored as pricing `reserved`: `month` as a
1-month term (price = month / 730 hours, and the monthly payment), `year` as a 12-month term
(price = year / 8,760 hours). Uncertain: the page's data does not say what the two figures are
for; they are read as the price of one month and of one year, because that is the only reading
in which a longer term is not dearer (on the real capture every plan's month is 365 × its hour
price, i.e. half of 730 hours on demand, and its year 3,066 × it, 35 % of 8,760 hours: 1.66 →
606 and 5,090). A figure that is no positive number is passed on for the core to reject.
"""

from __future__ import annotations

import re
from dataclasses import replace
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
            page.skipped["CPU plans"] += 1
            continue
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
    if not isinstance(hour, int | float) or not isinstance(gpu.get("count"), int | float):
        raise SourceFormatError(f"{plan.get('slug')}: hour price or GPU count is not a number")
    on_demand = RawQuote(
        region=_region_code(str(region.get("name", ""))),
        instance_type=str(plan.get("slug", "")),
        pricing=Pricing.ON_DEMAND,
        price=float(hour),
        price_basis=PriceBasis.NODE,
        gpu_name_raw=gpu.get("type"),
        gpu_count=float(gpu["count"]),
        gpu_memory_gb=gpu.get("vram_per_gpu"),
        available=in_stock(region, str(plan.get("slug", ""))),
        stock=stock_level(region.get("stock_level")),
        source_url=url,
    )
    return [on_demand, *commitments(on_demand, prices["USD"])]


# Latitude's figure → (term in months, hours in the term).
TERMS = {"month": (1, 730), "year": (12, 8760)}
# The figures are unlabelled; read as term prices they come to 0.5 (month) and 0.35 (year) of
# the hourly price on every capture. A figure whose hourly rate leaves this band is not what
# that reading assumes (a changed field, a glitch): the run fails rather than store it.
TERM_SHARE_OF_HOURLY = (0.1, 1.0)


def commitments(on_demand: RawQuote, usd: dict[str, Any]) -> list[RawQuote]:
    """The month and year figures of a priced region as commitment quotes."""
    return [_commitment(on_demand, name, usd[name]) for name in TERMS if name in usd]


def _commitment(on_demand: RawQuote, name: str, total: Any) -> RawQuote:
    months, hours = TERMS[name]
    number = total if isinstance(total, int | float) and not isinstance(total, bool) else None
    _check_share(on_demand, name, None if number is None else number / hours)
    return replace(
        on_demand,
        pricing=Pricing.RESERVED,
        price=None if number is None else number / hours,
        term_months=months,
        monthly=number if months == 1 else None,
    )


def _check_share(on_demand: RawQuote, name: str, per_hour: float | None) -> None:
    hourly = on_demand.price
    if not per_hour or not hourly or per_hour <= 0 or hourly <= 0:
        return  # an unreadable or non-positive price is the ingest's to reject and count
    low, high = TERM_SHARE_OF_HOURLY
    if not low <= per_hour / hourly <= high:
        raise SourceFormatError(
            f"Latitude's {name!r} figure for {on_demand.instance_type} in {on_demand.region} is "
            f"{per_hour / hourly:.3g}x its hourly price per hour, outside {low}-{high}: "
            "the term reading no longer holds"
        )


def _region_code(name: str) -> str:
    """ "United States" -> "united-states": Latitude prices per country, named in English."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


# Latitude's level words on the capture; each agrees there with `locations.in_stock`.
LEVELS = {"high": True, "medium": True, "low": True, "unavailable": False}


def in_stock(region: dict[str, Any], slug: str) -> bool | None:
    """Whether the region can be deployed now: its level word and its list of sites with stock
    (`locations.in_stock`) must both say so. A word not known is left to the list; with neither
    readable the run fails rather than guess."""
    sites = (region.get("locations") or {}).get("in_stock")
    by_sites = bool(sites) if isinstance(sites, list) else None
    by_level = LEVELS.get(str(region.get("stock_level")).lower())
    if by_level is None and by_sites is None:
        if region.get("stock_level") is None:
            return None
        raise SourceFormatError(
            f"{slug} in {region.get('name')}: unknown stock level {region['stock_level']!r}"
        )
    return all(v is not False for v in (by_level, by_sites))


def stock_level(value: Any) -> str | None:
    """Latitude's own level word ("high", "medium", "low", "unavailable"), when it gives one."""
    return value if isinstance(value, str) and value else None
