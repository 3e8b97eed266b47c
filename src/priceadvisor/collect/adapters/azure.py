"""Azure Retail Prices API (no authentication).

Format: `GET https://prices.azure.com/api/retail/prices` with an OData `$filter`. One paged walk
over every region, following `NextPageLink` (rebased onto the configured endpoint). Prices are
per VM (node) per hour in USD. Spot meters are told apart only by a " Spot" suffix on
skuName/meterName; "Low Priority" meters (being retired), Windows products (productName ending
in "Windows"/"Win"), Cloud Services and dev/test rows are skipped here because they are not
offers of the product this tool tracks; zero prices are passed on so the core rejects and counts
them.

Reservations (`type` "Reservation", `reservationTerm` "1 Year" / "3 Years") are commitments,
stored as pricing `reserved`. Trap: their `unitPrice` is the price of the WHOLE term although
`unitOfMeasure` says "1 Hour" (a 1-year NC24ads A100 v4 row in eastus reads about 20,000,
which as an hourly price would be ~5,500 times its pay-as-you-go price); it is divided by the
hours in the term (8,760 a year: 365 × 24, the hours Azure's own calculator counts) into the
effective hourly price, and kept whole as the upfront payment (Azure also lets the same total
be paid monthly:
learn.microsoft.com/azure/cost-management-billing/reservations/prepare-buy-reservation). A term
the adapter cannot read fails the run.

The feed has no hardware data: armSkuName → GPU model/count comes from the manifest table.

Spot meters equal to pay-as-you-go (real captures: ND H200 v5 and ND GB200 v6) are passed on as
they are and rejected by the core's rule that spot must be below the same offer's on-demand
price. Azure documents a Spot price as capped at the pay-as-you-go price (a max price of -1 means
"up to on-demand": learn.microsoft.com/azure/virtual-machines/spot-vms and the Compute API's
BillingProfile.maxPrice), so a Spot meter at that cap carries no discount: there is no Spot
offer to store, and doctor counts the rejection.

Uncertain: rows with `isPrimaryMeterRegion: false` (the API returns primary and non-primary
meters unless asked for `meterRegion='primary'`) are read like the others; whether a non-primary
meter can price a region differently from its primary one is not documented, and a second row
of the same offer is collapsed and counted by the core. The server-side `$filter` on
armSkuName assumes `contains` works on that field as it does on productName (documented); the
client-side filters below hold either way.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from priceadvisor.collect.adapters.base import (
    Adapter,
    AdapterOutput,
    ProgressCallback,
    SourceFormatError,
    rebase_link,
)
from priceadvisor.collect.http import HttpSession
from priceadvisor.records import Pricing, RawQuote

# GPU VM families are the N series (NC, ND, NG, NV); NP is FPGA, not GPU.
FILTER = (
    "serviceName eq 'Virtual Machines' "
    "and (priceType eq 'Consumption' or priceType eq 'Reservation') "
    "and contains(armSkuName, 'Standard_N') and contains(productName, 'Windows') eq false"
)
REQUIRED = (
    "armRegionName",
    "armSkuName",
    "retailPrice",
    "skuName",
    "productName",
    "type",
    "unitOfMeasure",
    "currencyCode",
)
_WINDOWS = re.compile(r"\b(Windows|Win)\s*$")
_NOT_GPU = re.compile(r"^Standard_NP", re.IGNORECASE)
_TERM = re.compile(r"^\s*(\d+)\s+Years?\s*$")
HOURS_PER_YEAR = 8760  # 365 × 24
MAX_PAGES = 500  # ~150 pages hold every region's VM meters; a loop beyond this is a server bug


class AzureAdapter(Adapter):
    id: ClassVar[str] = "azure"

    async def fetch(self, session: HttpSession, progress: ProgressCallback) -> AdapterOutput:
        endpoint = self.endpoints["prices"]
        url = endpoint
        params: dict[str, str] | None = {"$filter": FILTER}
        output, left_out = AdapterOutput(), 0
        for page_number in range(1, MAX_PAGES + 1):
            page = await session.get_json(url, params=params)
            items, next_link = parse_result_page(page, page_number)
            quotes = [q for q in map(parse_item, items) if q is not None]
            output.quotes.extend(quotes)
            left_out += len(items) - len(quotes)
            progress(
                f"page {page_number}, {len(output.quotes)} quotes; left out: {left_out} meters "
                "not of a Linux GPU VM (Windows, Low Priority, dev/test, FPGA)"
            )
            if not next_link:
                return output
            url, params = rebase_link(next_link, endpoint), None
        raise SourceFormatError(f"more than {MAX_PAGES} pages: NextPageLink never ends")


def parse_result_page(page: Any, number: int) -> tuple[list[dict[str, Any]], str | None]:
    if not isinstance(page, dict) or not isinstance(page.get("Items"), list):
        raise SourceFormatError(f"page {number} has no 'Items' list (format changed?)")
    next_link = page.get("NextPageLink")
    if next_link is not None and not isinstance(next_link, str):
        raise SourceFormatError(f"page {number}: NextPageLink is not a string")
    return page["Items"], next_link


def parse_item(item: Any) -> RawQuote | None:
    """One meter row → a quote, or None for rows that are not Linux VM offers."""
    if not isinstance(item, dict):
        raise SourceFormatError("an item is not a JSON object")
    missing = [key for key in REQUIRED if key not in item]
    if missing:
        raise SourceFormatError(f"item lacks {', '.join(repr(k) for k in missing)}")
    if item["type"] == "Reservation" and _is_linux_vm(item):
        return reservation_quote(item)
    if not _is_linux_vm_offer(item):
        return None
    sku_name = str(item["skuName"])
    return RawQuote(
        region=str(item["armRegionName"]),
        instance_type=str(item["armSkuName"]),
        pricing=Pricing.SPOT if sku_name.endswith(" Spot") else Pricing.ON_DEMAND,
        price=_number(item["retailPrice"]),
        currency=str(item["currencyCode"]),
        source_url="https://prices.azure.com/api/retail/prices",
    )


def reservation_quote(item: dict[str, Any]) -> RawQuote:
    """A reservation row → a `reserved` quote: the term's price spread over its hours."""
    years = reservation_years(item)
    total = _number(item["retailPrice"])
    return RawQuote(
        region=str(item["armRegionName"]),
        instance_type=str(item["armSkuName"]),
        pricing=Pricing.RESERVED,
        price=None if total is None else total / (years * HOURS_PER_YEAR),
        currency=str(item["currencyCode"]),
        term_months=12 * years,
        upfront=total,
        source_url="https://prices.azure.com/api/retail/prices",
    )


def reservation_years(item: dict[str, Any]) -> int:
    match = _TERM.match(str(item.get("reservationTerm", "")))
    if not match or int(match.group(1)) <= 0 or item["unitOfMeasure"] != "1 Hour":
        raise SourceFormatError(
            f"{item['armSkuName']}: reservation term {item.get('reservationTerm')!r} "
            f"per {item['unitOfMeasure']!r} is not a term the adapter reads"
        )
    return int(match.group(1))


def _is_linux_vm_offer(item: dict[str, Any]) -> bool:
    return (
        item["type"] == "Consumption" and item["unitOfMeasure"] == "1 Hour" and _is_linux_vm(item)
    )


def _is_linux_vm(item: dict[str, Any]) -> bool:
    product = str(item["productName"])
    return (
        item.get("serviceName", "Virtual Machines") == "Virtual Machines"
        and not str(item["skuName"]).endswith("Low Priority")
        and not _WINDOWS.search(product)
        and "Cloud Services" not in product
        and not _NOT_GPU.match(str(item["armSkuName"]))
    )


def _number(value: Any) -> float | None:
    """Prices are JSON numbers; anything else is passed as None for the core to reject."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)
