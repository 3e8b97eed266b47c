"""Together AI GPU Clusters, from the public pricing page (Webflow HTML, no authentication).

Format (verified on a capture of https://www.together.ai/pricing, 2026-08-22): the "GPU
Clusters" section (an `<h2>`) holds a `<table>` whose two header rows read "Hardware |
ON-Demand / Pay as you go | Reserved (colspan 4) / 7-30 days, 31-90 days, 91-180 days, 181+
days"; the section says "All prices are per GPU per hour." Cells are "$3.99", " $3.45" (leading
space), "—" (not offered) or "Contact us" (also as one colspan=4 cell).

Traps handled: the "Dedicated Inference" table (HGX H100 $5.49) is another product with the same
markup and is left out by its section heading; a hidden `<div class="hide">` copy of the
on-demand prices is ignored; tenor columns are attributed by their header text, not position.
Reserved tenors are commitments: they are counted and left out, never stored as on-demand. Rows
whose on-demand cell is an em-dash or "Contact us" (GB200/GB300 NVL72, HGX B300) are no offer,
counted. The
page states no node size, so each offer is one GPU at its per-GPU price; there is no region.
"""

from __future__ import annotations

import re
from typing import ClassVar

from priceadvisor.collect.adapters.base import PageAdapter, SourceFormatError
from priceadvisor.collect.pages import (
    Grid,
    ParsedPage,
    find_grids,
    html_tables,
    parse_price,
    section_heading,
    text_of,
    visible_soup,
)
from priceadvisor.records import PriceBasis, Pricing, RawQuote

SECTION = "gpu clusters"
PER_GPU_HOUR = re.compile(r"per gpu per hour", re.I)
COLUMNS = {"model": r"hardware", "on_demand": r"on-?demand"}
RESERVED = re.compile(r"reserved|\d+\+? ?(-\d+ )?days", re.I)


class TogetherAdapter(PageAdapter):
    id: ClassVar[str] = "together"

    def parse(self, html: str, url: str) -> ParsedPage:
        return parse_page(html, url)


def parse_page(html: str, url: str) -> ParsedPage:
    soup = visible_soup(html)
    tables = [
        (grid, cols)
        for grid, cols in find_grids(html_tables(soup), **COLUMNS)
        if SECTION in (section_heading(grid.element, ("h2",)) or "").lower()
    ]
    if len(tables) != 1:
        raise SourceFormatError(f"expected one GPU Clusters price table, found {len(tables)}")
    grid, columns = tables[0]
    _require_per_gpu_hour(grid)
    page = ParsedPage()
    for record in grid.rows:
        quotes = _on_demand(record[columns["model"]], record[columns["on_demand"]], url)
        page.quotes += quotes
        if not quotes:
            page.skipped["rows without an on-demand price (dash, contact us)"] += 1
        page.skipped["reserved-tenor prices"] += _priced_tenors(grid, record)
    return page


def _require_per_gpu_hour(grid: Grid) -> None:
    """The basis is stated once for the section; a page that stops saying so may have changed
    to per-node prices, which must not be read as per-GPU ones."""
    section = next((a for a in grid.element.parents if a.find("h2")), grid.element)
    if not PER_GPU_HOUR.search(text_of(section)):
        raise SourceFormatError("the GPU Clusters table no longer says 'per GPU per hour'")


def _on_demand(model: str, cell: str, url: str) -> list[RawQuote]:
    price = parse_price(cell)
    if price is None:
        return []
    if price.floor or price.other_unit or price.period not in (None, "hour"):
        raise SourceFormatError(f"{model}: on-demand cell is not an hourly price: {cell!r}")
    return [
        RawQuote(
            region="global",
            instance_type=model,
            pricing=Pricing.ON_DEMAND,
            price=price.amount,
            price_basis=PriceBasis.GPU,
            gpu_name_raw=model,
            gpu_count=1,
            source_url=url,
        )
    ]


def _priced_tenors(grid: Grid, record: tuple[str, ...]) -> int:
    tenors = [i for i, header in enumerate(grid.headers) if RESERVED.search(header)]
    return sum(1 for i in tenors if i < len(record) and parse_price(record[i]) is not None)
