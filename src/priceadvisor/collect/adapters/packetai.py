"""packet.ai price list: the provider's own JSON file in a public GitHub repository (no key).

Format (verified against a real copy of `product_detail.json` from
github.com/KavSh890/packet.ai-Pricing, main branch, as stored by its recorder; the file has no
timestamp and changes by commit): `{"on_demand": [...], "monthly": [...]}`. A row: `gpu_type`
("NVIDIA B200", "NVIDIA RTX PRO 6000 Blackwell"), `gpu_count`, `plan_type` ("dynamic" or
"dedicated"), `vram_gb` (the total of all GPUs), `ram_gb`, `vcpu`, `storage_gb`, `region` (free
text: "Los Angeles, US (LA-1)", "Dallas, US (Texas)", "TBC"), `stock_status` ("in_stock",
"out_of_stock", "launching_soon"), and `price_per_gpu_hour_usd` (on_demand) or
`price_per_month_usd` + `effective_hourly_usd` (monthly).

Traps: `price_per_gpu_hour_usd` is **per instance**, whatever its name (1× B200 dedicated
6.99, 2× 13.98, 4× 27.96, 8× 55.92), so it is stored per node and the core divides; the memory
per GPU is `vram_gb / gpu_count`. Should the file start to state real per-GPU prices under the
same name, a multi-GPU row would cost about what its 1-GPU sibling costs (same GPU, plan and
region): a ratio of N-GPU price to N × 1-GPU price at or below 0.6 fails the run instead of
storing prices N times too low. `dynamic` (cheaper, shared) and `dedicated` are different
products and part of the instance type; the same SKU in two regions (UK-3, UK-4) is two
offers. `stock_status` is the availability: `out_of_stock` rows are stored as not available;
`launching_soon` rows (no price, no specs, region "TBC") are not offers: counted and left out.
`monthly` rows are one-month commitments, stored as pricing `reserved` with `term_months` 1:
`effective_hourly_usd` (per instance, like the on-demand price) is the price, and
`price_per_month_usd` the monthly payment. The two must agree (month ≈ 730 hours, within 5 %:
2728 / 730 = 3.737 → 3.74 for 1× B200 dynamic), else the run fails rather than store a price
whose unit changed. A monthly row's stock status reads like an on-demand row's.

The region is the code in parentheses ("LA-1", "UK-3", "Texas"), placed in regions.toml; a
region without one is passed on as written. An unknown stock status, an unknown plan type or
an unknown top-level section (a new kind of price the adapter would silently miss) fails the
run.

Uncertain: one copy of the file; its repository announces it as the provider's feed but it is
not an API, and staleness is invisible (the conditional GET's ETag is what changes).
"""

from __future__ import annotations

import re
from collections import defaultdict
from decimal import Decimal
from typing import Any, ClassVar

from priceadvisor.collect.adapters.base import (
    Adapter,
    AdapterOutput,
    ProgressCallback,
    SourceFormatError,
    exact_decimal,
    exact_price,
    json_number,
    json_records,
)
from priceadvisor.collect.http import HttpSession
from priceadvisor.collect.pages import ParsedPage
from priceadvisor.records import PriceBasis, Pricing, RawQuote

PRICE = "price_per_gpu_hour_usd"  # per instance, despite its name
REQUIRED = ("gpu_type", "gpu_count", "plan_type", PRICE, "region", "stock_status")
MONTH_PRICE, MONTH_HOURLY = "price_per_month_usd", "effective_hourly_usd"
MONTHLY_REQUIRED = (*REQUIRED[:3], MONTH_PRICE, MONTH_HOURLY, "region", "stock_status")
HOURS_PER_MONTH = Decimal(730)  # 8,760 / 12: the month packet.ai's effective hourly price uses
MONTH_TOLERANCE = Decimal("0.05")
SECTIONS = {"on_demand", "monthly"}
PLANS = {"dynamic", "dedicated"}
STOCK = {"in_stock": True, "out_of_stock": False}
LAUNCHING = "launching_soon"
NOT_LAUNCHED = "rows launching soon (no price)"
PER_GPU_RATIO = Decimal("0.6")
_REGION_CODE = re.compile(r"\(([^()]+)\)\s*$")


class PacketAiAdapter(Adapter):
    id: ClassVar[str] = "packetai"

    async def fetch(self, session: HttpSession, progress: ProgressCallback) -> AdapterOutput:
        url = self.endpoints["product_detail"]
        parsed = parse_price_list(await session.get_json(url), url)
        progress(parsed.summary())
        return AdapterOutput(quotes=parsed.quotes)


def parse_price_list(document: Any, url: str) -> ParsedPage:
    if not isinstance(document, dict) or "on_demand" not in document:
        raise SourceFormatError("no 'on_demand' list in packet.ai's price list (format changed?)")
    unknown = sorted(set(document) - SECTIONS)
    if unknown:
        raise SourceFormatError(f"unknown section(s) in packet.ai's price list: {unknown}")
    rows = json_records(document["on_demand"], REQUIRED, "the on-demand rows", "an on-demand row")
    monthly = document.get("monthly", [])
    if not isinstance(monthly, list):
        raise SourceFormatError("packet.ai's monthly rows are not a JSON list")
    monthly = json_records(monthly, MONTHLY_REQUIRED, "the monthly rows", "a monthly row")
    parsed = ParsedPage()
    offered = [row for row in rows if _is_offer(row, parsed)]
    check_instance_prices(offered)
    parsed.quotes = [row_quote(row, url) for row in offered]
    parsed.quotes += [monthly_quote(row, url) for row in monthly if _is_offer(row, parsed)]
    return parsed


def _is_offer(row: dict[str, Any], parsed: ParsedPage) -> bool:
    status = row["stock_status"]
    if status == LAUNCHING:
        parsed.skipped[NOT_LAUNCHED] += 1
        return False
    if status not in STOCK:
        raise SourceFormatError(f"{_sku(row)}: unknown stock_status {status!r}")
    if row["plan_type"] not in PLANS:
        raise SourceFormatError(f"{_sku(row)}: unknown plan_type {row['plan_type']!r}")
    return True


def check_instance_prices(rows: list[dict[str, Any]]) -> None:
    """Fail when an N-GPU row costs about what one GPU of the same SKU costs: the prices would
    then be per GPU, and storing them per instance would make them N times too cheap."""
    single: dict[tuple[str, str, str], Any] = {}
    multi: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        key = (str(row["gpu_type"]), str(row["plan_type"]), str(row["region"]))
        if row["gpu_count"] == 1:
            single[key] = row[PRICE]
        else:
            multi[key].append(row)
    for key, group in multi.items():
        one = exact_decimal(single.get(key))
        for row in group:
            price, count = exact_decimal(row[PRICE]), exact_decimal(row["gpu_count"])
            if one and one > 0 and price and count and price <= one * count * PER_GPU_RATIO:
                raise SourceFormatError(
                    f"{_sku(row)} costs {price} against {one} for 1 GPU: "
                    f"{PRICE} no longer looks per instance"
                )


def row_quote(row: dict[str, Any], url: str) -> RawQuote:
    count = json_number(row["gpu_count"])
    vram = json_number(row.get("vram_gb"))
    return RawQuote(
        region=region_code(row["region"]),
        instance_type=f"{row['gpu_type']} x{row['gpu_count']} {row['plan_type']}",
        pricing=Pricing.ON_DEMAND,
        price=exact_price(row[PRICE]),
        price_basis=PriceBasis.NODE,
        gpu_name_raw=str(row["gpu_type"]),
        gpu_count=count,
        gpu_memory_gb=vram / count if vram is not None and count else None,
        vcpus=json_number(row.get("vcpu")),
        ram_gb=json_number(row.get("ram_gb")),
        available=STOCK[row["stock_status"]],
        source_url=url,
    )


def monthly_quote(row: dict[str, Any], url: str) -> RawQuote:
    """A monthly plan: a one-month commitment at its effective hourly price (per instance)."""
    check_month_price(row)
    quote = row_quote(row | {PRICE: row[MONTH_HOURLY]}, url)
    quote.pricing = Pricing.RESERVED
    quote.term_months = 1
    quote.monthly = exact_price(row[MONTH_PRICE])
    return quote


def check_month_price(row: dict[str, Any]) -> None:
    """Fail when the monthly price is not about 730 hours of the effective hourly one."""
    month, hourly = exact_decimal(row[MONTH_PRICE]), exact_decimal(row[MONTH_HOURLY])
    if month is None or hourly is None or month <= 0:
        return  # passed on as is: the core rejects a missing price and counts it
    if abs(hourly * HOURS_PER_MONTH - month) > month * MONTH_TOLERANCE:
        raise SourceFormatError(
            f"{_sku(row)}: {MONTH_HOURLY} {hourly} is not {MONTH_PRICE} {month} over a month"
        )


def region_code(text: Any) -> str:
    """ "Reading, UK (UK-3)" → "UK-3"; a region without a code as written."""
    match = _REGION_CODE.search(str(text or ""))
    return match.group(1).strip() if match else str(text or "").strip()


def _sku(row: dict[str, Any]) -> str:
    return f"{row['gpu_type']} x{row['gpu_count']} {row['plan_type']} in {row['region']}"
