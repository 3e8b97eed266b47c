"""Civo, from the NVIDIA GPU section of its public pricing page (server-rendered HTML, no
authentication).

Format (verified on one capture of https://www.civo.com/pricing, the L40S table; its date is
not recorded): the GPUs sit in `<section class="pricing-product" id="nvidia-gpus">` (the id is
given twice: the section and a `<div>` inside it), one `<table>` per chip (L40S 48GB, A100
40GB and 80GB, H100 SXM, H200 SXM, B200) with the headers Size | RAM | vCPU | Storage | Data
Transfer | On-demand | Commitment. A row's Size cell names the size and the hardware ("Small"
over "1 x NVIDIA L40S - 48GB"); the On-demand cell holds "$1.29 per hour" and a hidden monthly
copy. Prices are USD per **instance**-hour ($2.58 for 2 x L40S), stored per node with the GPU
count the row states, for the core to divide.

Traps handled: about 23 pricing tables share the `pricing-product` class (Kubernetes, object
storage, ...): only tables inside the element with id `nvidia-gpus` are read (the outer of the
two), and only those whose headers mean "Size" and "On-demand". The Commitment cell holds
hidden 6/12/24/36-month divs (the 36-month one shown): a commitment, never stored, counted per
row. The monthly copies are hidden and not read; an on-demand price not per hour fails the
run. A row whose on-demand cell says "N/A" (B200 today: the headline $3.79 is its 36-month
term) is commitment-only: counted and left out. A row whose Size cell states no "N x GPU"
fails the run.

Uncertain: only the L40S table was captured; the A100, H100, H200 and B200 tables are read on
the assumption that they share its markup. The page names no region although Civo runs several
(LON1, FRA1, NYC1, ...), and GPU stock differs between them: one global list, availability
unknown.
"""

from __future__ import annotations

import re
from typing import ClassVar

from bs4 import Tag

from priceadvisor.collect.adapters.base import PageAdapter, SourceFormatError
from priceadvisor.collect.pages import (
    ParsedPage,
    Price,
    find_grids,
    html_tables,
    parse_price,
    visible_soup,
)
from priceadvisor.records import PriceBasis, Pricing, RawQuote

SECTION_ID = "nvidia-gpus"
COLUMNS = {
    "size": r"^size$",
    "on_demand": r"on-?demand",
    "commitment": r"commit",
    "ram": r"^ram|memory",
    "vcpus": r"vcpu|cpu",
}
_HARDWARE = re.compile(r"^(?P<size>.*?)\s*(?P<count>\d+)\s*x\s*(?P<gpu>\S.*)$", re.I)
_MEMORY = re.compile(r"(\d+)\s*GB\b", re.I)
_UNIT_LABEL = re.compile(r"\bper\s+(hour|month)\b", re.I)
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


class CivoAdapter(PageAdapter):
    id: ClassVar[str] = "civo"

    def parse(self, html: str, url: str) -> ParsedPage:
        return parse_page(html, url)


def parse_page(html: str, url: str) -> ParsedPage:
    section = visible_soup(html).find(id=SECTION_ID)
    if not isinstance(section, Tag):
        raise SourceFormatError(f"no element with id {SECTION_ID!r} (layout changed?)")
    required = {k: v for k, v in COLUMNS.items() if k in ("size", "on_demand")}
    tables = find_grids(html_tables(section), **required)
    if not tables:
        raise SourceFormatError("no GPU table with Size and On-demand columns (layout changed?)")
    page = ParsedPage()
    for grid, _ in tables:
        columns = {k: i for k, p in COLUMNS.items() if (i := grid.column(p)) is not None}
        for record in grid.records(columns):
            quote = _row_quote(record, url, page)
            if quote is not None:
                page.quotes.append(quote)
    return page


def _row_quote(record: dict[str, str], url: str, page: ParsedPage) -> RawQuote | None:
    hardware = _HARDWARE.match(record["size"])
    if hardware is None:
        raise SourceFormatError(f"cannot read 'N x GPU' in the size {record['size']!r}")
    if parse_price(record.get("commitment", "")) is not None:
        page.skipped["commitment terms (6-36 months)"] += 1
    price = on_demand_price(record["on_demand"])
    if price is None:
        page.skipped["commitment-only rows (no on-demand price)"] += 1
        return None
    if price.period != "hour" or price.floor or price.other_unit or price.per_gpu:
        raise SourceFormatError(f"not an instance-hour price: {record['on_demand']!r}")
    gpu, count = hardware["gpu"], int(hardware["count"])
    memory = _MEMORY.search(gpu)
    return RawQuote(
        region="global",
        instance_type=f"{hardware['size'] or 'unnamed'} {count}x {gpu}",
        pricing=Pricing.ON_DEMAND,
        price=price.amount,
        price_basis=PriceBasis.NODE,
        gpu_name_raw=gpu,
        gpu_count=count,
        gpu_memory_gb=float(memory.group(1)) if memory else None,
        vcpus=_number(record.get("vcpus")),
        ram_gb=_number(record.get("ram")),
        source_url=url,
    )


def on_demand_price(text: str) -> Price | None:
    """The cell's price; "N/A per hour" (the unit label kept beside an absent price) is none."""
    if "$" not in text:
        return parse_price(_UNIT_LABEL.sub("", text).strip())
    return parse_price(text)


def _number(text: str | None) -> float | None:
    match = _NUMBER.search(text or "")
    return float(match.group()) if match else None
