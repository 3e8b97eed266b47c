"""fal, from the GPU table of its public pricing page (Next.js HTML, no authentication).

Format (verified on one capture of https://fal.ai/pricing; its date is not recorded): under
"Serverless & Compute Pricing", one `<table>` with exactly the headers GPU | VRAM | List Price |
As low as; a row's GPU cell is an icon and a `<span>` with the chip ("H100", "RTX PRO 6000"),
VRAM reads "80GB", prices read "$4.50/h". Prices are USD per GPU-hour for serverless GPUs,
stored as on-demand list prices, one global list (fal places the workload; no region named).

Traps handled: "As low as" is a contact-sales floor (volume terms), never the list price:
counted per row and left out. Two model-API tables (Model | Unit | Price | Output per $1) share
the same markup and are never read: only the table with the GPU, VRAM and List Price headers
is (by meaning: "List Price (per hour)" and "GPU memory" too; "As low as" is optional), and exactly
one such table must exist (an identical second copy, such as a hidden or flight-rendered
duplicate, is collapsed and counted). A list price not per hour fails the run; an unpriced
list cell ("Contact sales", em-dash) is no offer, and is counted. Chips are named without their
maker ("H100"): read as NVIDIA's unless the cell names a vendor or an AMD Instinct ("MI300X").

Uncertain: one capture only. "H100" with 80GB VRAM does not say SXM or PCIe; it resolves to the
catalog's default H100 (SXM), which fal's serverless fleet is understood to use but the page
does not state.
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
    visible_soup,
)
from priceadvisor.records import PriceBasis, Pricing, RawQuote

COLUMNS = {
    "gpu": r"^gpu( model| type)?$",
    "vram": r"^(vram|gpu memory)\b",
    "list": r"^list price\b",
}
FLOOR = r"^as low as\b"  # optional: a floor column that goes away leaves the list prices
_MEMORY = re.compile(r"(\d+(?:\.\d+)?)\s*GB", re.I)
_VENDOR = re.compile(r"^(nvidia|amd|intel|google)\b", re.I)
_AMD = re.compile(r"^(instinct\s+)?mi\d", re.I)


class FalAdapter(PageAdapter):
    id: ClassVar[str] = "fal"

    def parse(self, html: str, url: str) -> ParsedPage:
        return parse_page(html, url)


def parse_page(html: str, url: str) -> ParsedPage:
    grids = html_tables(visible_soup(html))
    matches = find_grids(grids, **COLUMNS)
    if len(matches) != 1:
        raise SourceFormatError(f"expected one GPU | VRAM | List Price table, found {len(matches)}")
    grid, columns = matches[0]
    if (floor := grid.column(FLOOR)) is not None:
        columns = columns | {"floor": floor}
    page = ParsedPage()
    if (copies := _copies(grids, grid)) > 1:
        page.skipped["duplicate copies of the GPU table"] += copies - 1
    for record in grid.records(columns):
        if parse_price(record.get("floor", "")) is not None:
            page.skipped["'as low as' contact-sales floors"] += 1
        quote = _quote(record, url)
        if quote is None:
            page.skipped["rows without a list price"] += 1
        else:
            page.quotes.append(quote)
    return page


def _copies(grids: list[Grid], grid: Grid) -> int:
    return sum((g.headers, g.rows) == (grid.headers, grid.rows) for g in grids)


def _quote(record: dict[str, str], url: str) -> RawQuote | None:
    gpu = record["gpu"]
    price = parse_price(record["list"])
    if price is None:
        return None
    if price.period != "hour" or price.floor or price.other_unit:
        raise SourceFormatError(f"{gpu}: list price not per hour: {record['list']!r}")
    memory = _MEMORY.search(record["vram"])
    if not gpu or memory is None:
        raise SourceFormatError(f"cannot read the GPU or its VRAM in {gpu!r} / {record['vram']!r}")
    return RawQuote(
        region="global",
        instance_type=gpu,
        pricing=Pricing.ON_DEMAND,
        price=price.amount,
        price_basis=PriceBasis.GPU,
        gpu_name_raw=_with_vendor(gpu),
        gpu_count=1,
        gpu_memory_gb=float(memory.group(1)),
        source_url=url,
    )


def _with_vendor(gpu: str) -> str:
    """The page names chips without their maker ("H100"): NVIDIA's unless the name says
    otherwise (a stated vendor, AMD's "MI300X"), never a vendor the row does not imply."""
    if _VENDOR.match(gpu):
        return gpu
    return f"AMD {gpu}" if _AMD.match(gpu) else f"NVIDIA {gpu}"
