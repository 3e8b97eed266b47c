"""Crusoe Cloud public pricing page (Webflow HTML, no authentication).

Format (verified on a capture of https://www.crusoe.ai/cloud/pricing, 2026-08-22): every table
on the page is a Webflow grid of `<div>`s, a header strip of `.pricing-heading` cells over CMS
rows (`role=listitem`, container class misspelt "prixing-item" on the real site, so rows are
found by role, not class). The GPU table is the grid whose headers mean "GPU model",
"On-demand" and "spot", under the heading "GPU instances pricing". A row's first cell holds the
model (`<h4>`), its memory and its form factor (tags, the latter empty on some rows); the next
cells hold "$D.DD/GPU-hr" or "Contact sales".

Traps handled: CPU, storage, Kubernetes, fine-tuning, token-priced inference and the
"Self-Serve Deployments" rows (a managed endpoint named "NVIDIA H100" at $5.50/hour) reuse the
same row markup: only the grid with all three GPU headers is read, and a price not stated per
GPU-hour is refused. Two "NVIDIA A100" rows differ only by their form-factor tag, so the tag is
part of the instance type. "Contact sales" cells (and today the whole spot column) are no offer,
and are counted. A "from $X" floor is not a price and fails the run like any other unit.
Prices are USD per GPU-hour with no region: one global list.
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
    text_of,
    visible_soup,
)
from priceadvisor.records import PriceBasis, Pricing, RawQuote

GPU_SECTION = "gpu instances"
COLUMNS = {"model": r"gpu model", "on_demand": r"on-?demand", "spot": r"spot"}
ROW, CELL = "[role=listitem]", ".pricing-item-head-part, .pricing-rich"
KINDS = {"on_demand": Pricing.ON_DEMAND, "spot": Pricing.SPOT}


class CrusoeAdapter(PageAdapter):
    id: ClassVar[str] = "crusoe"

    def parse(self, html: str, url: str) -> ParsedPage:
        return parse_page(html, url)


def parse_page(html: str, url: str) -> ParsedPage:
    soup = visible_soup(html)
    grids = div_grids(soup, ".pricing-gap", ".pricing-heading", ROW, CELL)
    matches = [(g, c) for g, c in find_grids(grids, **COLUMNS) if _in_gpu_section(g.element)]
    if len(matches) != 1:
        raise SourceFormatError(f"expected one GPU pricing grid, found {len(matches)}")
    grid, columns = matches[0]
    page = ParsedPage()
    for row in grid.element.select(ROW):
        page.quotes += _row_quotes(row, columns, url, page)
    return page


def _in_gpu_section(element: Tag) -> bool:
    return GPU_SECTION in (section_heading(element, ("h2", "h3")) or "").lower()


def _row_quotes(row: Tag, columns: dict[str, int], url: str, page: ParsedPage) -> list[RawQuote]:
    name_tag = row.find("h4")
    cells = row.select(CELL)
    if name_tag is None or len(cells) <= max(columns.values()):
        raise SourceFormatError("a GPU row has no <h4> name or fewer cells than headers")
    model = text_of(name_tag)
    tags = [text_of(t) for t in row.select(".pricing-tag") if text_of(t)]
    memory = next((t for t in tags if t.upper().endswith("GB")), None)
    form = [t for t in tags if t is not memory]
    quotes = []
    for column, pricing in KINDS.items():
        cell = cells[columns[column]]
        price = parse_price(text_of(cell))
        if price is None:
            page.skipped[f"{pricing} cells without a price (contact sales)"] += 1
            continue
        if price.period != "hour" or not price.per_gpu or price.floor or price.other_unit:
            raise SourceFormatError(f"{model}: price not per GPU-hour: {text_of(cell)!r}")
        quotes.append(
            RawQuote(
                region="global",
                instance_type=" ".join([model, *form]),
                pricing=pricing,
                price=price.amount,
                price_basis=PriceBasis.GPU,
                gpu_name_raw=" ".join([model, *form, *([memory] if memory else [])]),
                gpu_count=1,
                gpu_memory_gb=float(memory[:-2]) if memory else None,
                source_url=url,
            )
        )
    return quotes
