"""Modal (serverless GPUs), from the public pricing page.

Built from documentation, not from a capture: no recording of https://modal.com/pricing was
available. What is documented (Modal's pricing page as quoted by public price comparisons,
May 2026: "H100 ... $0.001097/sec", "$3.9492/hr"): a "GPU Tasks" list of one GPU name and one
price per second each ("Nvidia H100", "$0.001097 / sec"), followed by CPU ("/ core / sec") and
memory ("/ GiB / sec") lists. The markup around those texts is unknown, so the adapter reads
the page's visible *text* in document order, not its tags: from the heading naming GPUs to the
next heading of the same or a higher level, each price line belongs to the name line before it.

Prices are USD per GPU-second for a Function with no region pinned, converted exactly to the
hour (decimal arithmetic, x 3600). Region multipliers are not modelled: Modal's docs have
stated them differently over time (1.25x/2.5x by continent, later 1.5x broad / 1.75x narrow)
and they apply only to Functions that pin a region. One global list; one GPU per offer.
A price in the GPU list not stated per second (or per hour) fails the run.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import ClassVar

from bs4 import Tag

from priceadvisor.collect.adapters.base import PageAdapter, SourceFormatError
from priceadvisor.collect.pages import ParsedPage, parse_price, text_of, visible_soup
from priceadvisor.models import PriceBasis, Pricing, RawQuote

HEADINGS = ["h1", "h2", "h3", "h4"]
GPU_HEADING = re.compile(r"\bgpu", re.I)
SECONDS = {"second": 3600, "minute": 60, "hour": 1}


class ModalAdapter(PageAdapter):
    id: ClassVar[str] = "modal"

    def parse(self, html: str, url: str) -> ParsedPage:
        return parse_page(html, url)


def parse_page(html: str, url: str) -> ParsedPage:
    soup = visible_soup(html)
    heading = next((h for h in soup.find_all(HEADINGS) if GPU_HEADING.search(text_of(h))), None)
    if heading is None:
        raise SourceFormatError("no GPU heading on the pricing page (layout changed?)")
    page, name = ParsedPage(), None
    for line in _section_lines(heading):
        if "$" not in line:
            name = line
        elif name is None:
            raise SourceFormatError(f"a GPU price {line!r} has no name before it")
        else:
            page.quotes.append(_quote(name, line, url))
            name = None
    return page


def _section_lines(heading: Tag) -> list[str]:
    """Visible text lines after `heading` up to the next heading of its level or higher."""
    level = HEADINGS.index(heading.name)
    stops = HEADINGS[: level + 1]
    lines = []
    for element in heading.find_all_next(string=True):
        parent = element.parent
        if any(p is heading for p in element.parents):
            continue  # the heading's own text
        if isinstance(parent, Tag) and parent.name in stops:
            break
        if text := " ".join(str(element).split()):
            lines.append(text)
    return lines


def _quote(name: str, cell: str, url: str) -> RawQuote:
    price = parse_price(cell)
    if price is None or price.period not in SECONDS or price.other_unit:
        raise SourceFormatError(f"{name}: not a price per GPU-second or GPU-hour: {cell!r}")
    hourly = Decimal(str(price.amount)) * SECONDS[price.period]
    return RawQuote(
        region="global",
        instance_type=name,
        pricing=Pricing.ON_DEMAND,
        price=float(hourly),
        price_basis=PriceBasis.GPU,
        gpu_name_raw=name,
        gpu_count=1,
        source_url=url,
    )
