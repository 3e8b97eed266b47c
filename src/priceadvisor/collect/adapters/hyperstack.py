"""Hyperstack (NexGen Cloud), from the public GPU pricing page (HubSpot HTML, no authentication).

Format (verified on a capture of https://www.hyperstack.cloud/gpu-pricing, about 2026-09): the
"AI Cloud Pricing" section holds cards, each an `<h3>` over a `<div>` grid (a head strip of
`.page-price_card_head_item` cells over `.page-price_card_row_item` rows). The cards read:
"On-Demand GPU Pricing" (GPU Model | VRAM (GB) | Max pCPUs per GPU | Max RAM (GB) per GPU |
Pricing Per Hour), "Reservation Pricing" (GPU Model | Starting from | Reserve), "Spot VM
Pricing" (GPU Model | Spot VM), then CPU, storage and other services in the same markup.
Prices are USD per GPU-hour (billed per minute), one global list (the fleet is mostly in Europe
and Canada). The authenticated pricebook API (`api_key` header) is not used.

Traps handled: grids are chosen by header meaning (a "GPU Model" column and an hourly or spot
price column), so the CPU card (which even has a "GPU Cores" header), storage ("$0.000096774
per GB per hour") and public IP rows are never read; "Starting from" reservation prices are
floors of a commitment and are counted and left out; "&nbsp;$1.40" and " $0.80" cells parse;
the on-demand and spot cards name GPUs differently ("NVIDIA H100" vs "NVIDIA H100 PCIe"), so
each keeps its own label and the manifest maps both; GB200/GB300/B300 named in the site menu
carry no price and are not offers. A GPU row whose price cell has no price ("Sold out",
"Contact us", a dash) is no offer, counted. Both the on-demand and the spot card must be present.
"""

from __future__ import annotations

from typing import ClassVar

from bs4 import Tag

from priceadvisor.collect.adapters.base import PageAdapter, SourceFormatError
from priceadvisor.collect.pages import (
    ParsedPage,
    div_grids,
    find_grids,
    parse_price,
    section_heading,
    visible_soup,
)
from priceadvisor.records import PriceBasis, Pricing, RawQuote

CARD = (
    ".page-price_card_main",
    ".page-price_card_head_item",
    ".page-price_card_row_item",
    ".page-price_card_row_item_col",
)
ON_DEMAND = {"model": r"gpu model", "price": r"pricing per hour", "memory": r"vram"}
SPOT = {"model": r"gpu model", "price": r"^spot"}
RESERVED = {"model": r"gpu model", "price": r"starting from"}


class HyperstackAdapter(PageAdapter):
    id: ClassVar[str] = "hyperstack"

    def parse(self, html: str, url: str) -> ParsedPage:
        return parse_page(html, url)


def parse_page(html: str, url: str) -> ParsedPage:
    grids = div_grids(visible_soup(html), *CARD)
    page = ParsedPage()
    for kind, meanings in ((Pricing.ON_DEMAND, ON_DEMAND), (Pricing.SPOT, SPOT)):
        found = find_grids(grids, **meanings)
        if len(found) != 1:
            raise SourceFormatError(f"expected one {kind} GPU card, found {len(found)}")
        grid, columns = found[0]
        _require_gpu_heading(grid.element)
        page.quotes += [_quote(record, kind, url) for record in grid.records(columns)]
    page.skipped["reservation floors"] = sum(len(g.rows) for g, _ in find_grids(grids, **RESERVED))
    priced = [q for q in page.quotes if q.price is not None]
    if unpriced := len(page.quotes) - len(priced):
        page.skipped["GPU rows without a price (sold out, contact us)"] = unpriced
    page.quotes = priced
    return page


def _require_gpu_heading(element: Tag) -> None:
    heading = section_heading(element, ("h3",)) or ""
    if "gpu" not in heading.lower() and "spot" not in heading.lower():
        raise SourceFormatError(f"a GPU price card sits under {heading!r}")


def _quote(record: dict[str, str], kind: Pricing, url: str) -> RawQuote:
    price = parse_price(record["price"])
    if price is not None and (
        price.floor or price.other_unit or price.period not in (None, "hour")
    ):
        raise SourceFormatError(f"{record['model']}: not a GPU-hour price: {record['price']!r}")
    memory = record.get("memory", "")
    return RawQuote(
        region="global",
        instance_type=record["model"],
        pricing=kind,
        price=price.amount if price else None,
        price_basis=PriceBasis.GPU,
        gpu_name_raw=record["model"],
        gpu_count=1,
        gpu_memory_gb=float(memory) if memory.replace(".", "", 1).isdigit() else None,
        source_url=url,
    )
