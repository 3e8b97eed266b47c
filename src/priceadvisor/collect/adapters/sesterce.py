"""Sesterce (French GPU cloud), from the live-offers table on its home page (no authentication).

Format (verified on one capture of https://www.sesterce.com/, the page's own clock reading
2026-08-22 18:31 UTC): inside `<section id="pricing">`, one `<table>` with the headers Model |
From / GPU / hr | Available now | Listed GPUs | Live regions. A row's header cell holds the chip
("H200") and a vendor line ("NVIDIA Hopper · SXM5"); the price cell is a bare "$2.48", its
period and basis stated once by the column header. The section says the rows are "live
on-demand offers" (footer: "LIVE OFFERS · CLOUD.SESTERCE.COM · USD · ON-DEMAND"), each with a
"Book" link: the "from" price is the cheapest live offer of that chip across configurations and
regions, so it is an orderable on-demand price, stored per GPU-hour under one "global" region
(the page names no region for it). The adapter checks that the section still says "on-demand"
and refuses the page otherwise, since a bare floor would not be an offer.

Traps handled: the same prices repeat in a ticker marquee (twice) and in the Next.js flight
data; only the table inside the pricing section is read. Rows whose vendor line blends two
form factors ("SXM5 / PCIe": today H100 and A100) do not say which product the floor belongs
to; they are counted and left out rather than attributed to one. "Limited" rows with "0/7
regions" live still carry a price: they are stored as unavailable (`available = False`). The
"Available now" column is the stock: "9 GPUs" is stored as stock "9", "Limited" as "limited";
a count of 0 or a word saying none ("Sold out") makes the offer unavailable even with live
regions, and a word not known fails the run. Without that column the live regions alone decide
(it is read by its header, not required, as only one capture shows it).

Uncertain: one capture only; the table is rendered from a live book cached for five minutes,
so rows may come and go between runs. The page is the home page, which may be redesigned
without notice: a missing section or table fails the run.
"""

from __future__ import annotations

import re
from typing import ClassVar

from bs4 import Tag

from priceadvisor.collect.adapters.base import PageAdapter, SourceFormatError
from priceadvisor.collect.pages import (
    Grid,
    ParsedPage,
    find_grids,
    html_tables,
    parse_price,
    text_of,
    visible_soup,
)
from priceadvisor.records import PriceBasis, Pricing, RawQuote

SECTION_ID = "pricing"
COLUMNS = {
    "model": r"^model",
    "price": r"/\s*gpu|per gpu|price",
    "regions": r"live regions|regions",
}
NOW = r"available now"
ON_DEMAND = re.compile(r"on-?demand", re.I)
_FREE = re.compile(r"^(\d[\d,]*)\s*gpus?$", re.I)
# "Available now" words: "limited" leaves the verdict to the live regions; the others say none.
_LIMITED = re.compile(r"^limited$", re.I)
_NONE_NOW = re.compile(r"^(sold out|unavailable|none|out of stock|waitlist|coming soon)$", re.I)
_MODEL = re.compile(r"^(?P<chip>\S+)\s+(?P<vendor>.*?)\s*·\s*(?P<form>.+)$")
_LIVE = re.compile(r"^(\d+)\s*/\s*\d+")


class SesterceAdapter(PageAdapter):
    id: ClassVar[str] = "sesterce"

    def parse(self, html: str, url: str) -> ParsedPage:
        return parse_page(html, url)


def parse_page(html: str, url: str) -> ParsedPage:
    section = pricing_section(visible_soup(html))
    matches = find_grids(html_tables(section), **COLUMNS)
    if len(matches) != 1:
        raise SourceFormatError(f"expected one live-offers table, found {len(matches)}")
    grid, columns = matches[0]
    _check_period(grid, columns["price"])
    if (now := grid.column(NOW)) is not None:
        columns = columns | {"now": now}
    page = ParsedPage()
    for record in grid.records(columns):
        quote = _quote(record, url)
        if quote is None:
            page.skipped["rows blending two form factors"] += 1
        else:
            page.quotes.append(quote)
    return page


def pricing_section(soup: Tag) -> Tag:
    """The pricing section, which must still call its prices on-demand offers."""
    section = soup.find(id=SECTION_ID)
    if not isinstance(section, Tag):
        raise SourceFormatError(f"no section with id {SECTION_ID!r} (layout changed?)")
    if not ON_DEMAND.search(text_of(section)):
        raise SourceFormatError("the pricing section no longer says its prices are on-demand")
    return section


def _check_period(grid: Grid, column: int) -> None:
    header = grid.headers[column]
    if not re.search(r"/\s*gpu\s*/\s*h(ou)?r", header, re.I):
        raise SourceFormatError(f"price column is not per GPU-hour: {header!r}")


def _quote(record: dict[str, str], url: str) -> RawQuote | None:
    model = _MODEL.match(record["model"])
    if model is None:
        raise SourceFormatError(f"cannot read the model cell {record['model']!r}")
    chip, form = model["chip"], model["form"]
    if "/" in form:
        return None
    price, stock = parse_price(record["price"]), _stock(record.get("now"))
    if price is not None and (price.period not in (None, "hour") or price.other_unit):
        raise SourceFormatError(f"{chip}: not an hourly price: {record['price']!r}")
    return RawQuote(
        region="global",
        instance_type=f"{chip} {form}",
        pricing=Pricing.ON_DEMAND,
        price=price.amount if price else None,
        price_basis=PriceBasis.GPU,
        gpu_name_raw=f"NVIDIA {chip} {form}",
        gpu_count=1,
        available=_live_regions(record["regions"]) > 0 and stock != "0",
        stock=stock,
        source_url=url,
    )


def _stock(text: str | None) -> str | None:
    """The "Available now" cell as a stock level: "9 GPUs" -> "9", "Limited" -> "limited", a
    word saying none -> "0"; None without the column. Anything else fails the run."""
    if text is None:
        return None
    if match := _FREE.match(text.strip()):
        return match.group(1).replace(",", "")
    if _LIMITED.match(text.strip()):
        return "limited"
    if _NONE_NOW.match(text.strip()):
        return "0"
    raise SourceFormatError(f"cannot read 'Available now' in {text!r}")


def _live_regions(text: str) -> int:
    match = _LIVE.match(text)
    if match is None:
        raise SourceFormatError(f"cannot read live regions in {text!r}")
    return int(match.group(1))
