"""Modal (serverless GPUs), from the public pricing page.

Built from documentation, not from a capture: no recording of https://modal.com/pricing was
available. What is documented (Modal's pricing page as quoted by public price comparisons,
May 2026: "H100 ... $0.001097/sec", "$3.9492/hr"): a "GPU Tasks" list of one GPU name and one
price per second each ("Nvidia H100", "$0.001097 / sec"), followed by CPU ("/ core / sec") and
memory ("/ GiB / sec") lists. The markup around those texts is unknown and varies: the live
page puts the "GPU Tasks" label in a paragraph, earlier versions were described with a heading.
So the adapter finds the label as *any* element whose whole visible text is "GPU Tasks" and
reads the page's visible text lines after it in document order, not its tags: each price line
belongs to the name line before it. The list ends at the next heading of the same or a higher
level when the label is a heading, and in any case where names and prices stop alternating
(two text lines in a row without a price: the next list's label and its first name, "CPU" /
"Physical core"). No label, or no price after it, fails the run.

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

from bs4 import BeautifulSoup, Tag

from priceadvisor.collect.adapters.base import PageAdapter, SourceFormatError
from priceadvisor.collect.pages import ParsedPage, parse_price, text_of, visible_soup
from priceadvisor.records import PriceBasis, Pricing, RawQuote

HEADINGS = ["h1", "h2", "h3", "h4"]
GPU_LABEL = re.compile(r"gpu tasks", re.I)  # matched against an element's whole text
SECONDS = {"second": 3600, "minute": 60, "hour": 1}


class ModalAdapter(PageAdapter):
    id: ClassVar[str] = "modal"

    def parse(self, html: str, url: str) -> ParsedPage:
        return parse_page(html, url)


def parse_page(html: str, url: str) -> ParsedPage:
    label = _gpu_label(visible_soup(html))
    page, name = ParsedPage(), None
    for line in _section_lines(label):
        if "$" in line:
            if name is None:
                raise SourceFormatError(f"a GPU price {line!r} has no name before it")
            page.quotes.append(_quote(name, line, url))
            name = None
        elif name is not None and page.quotes:
            break  # two lines without a price: the next list's label, then its first name
        else:
            name = line  # a name (or, before the first price, an introduction to skip)
    if not page.quotes:
        raise SourceFormatError("no GPU price after the 'GPU Tasks' label (layout changed?)")
    return page


def _gpu_label(soup: BeautifulSoup) -> Tag:
    """The innermost element, wherever it sits (heading, paragraph, span), whose whole text is
    the label."""
    labels = [tag for tag in soup.find_all(True) if GPU_LABEL.fullmatch(text_of(tag))]
    innermost = [t for t in labels if not any(inner in labels for inner in t.find_all(True))]
    if not innermost:
        raise SourceFormatError("no 'GPU Tasks' label on the pricing page (layout changed?)")
    return innermost[0]


def _section_lines(label: Tag) -> list[str]:
    """Visible text lines after `label`; a heading label's list also ends at the next heading
    of its level or higher."""
    stops = HEADINGS[: HEADINGS.index(label.name) + 1] if label.name in HEADINGS else []
    lines = []
    for element in label.find_all_next(string=True):
        parent = element.parent
        if any(p is label for p in element.parents):
            continue  # the label's own text
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
