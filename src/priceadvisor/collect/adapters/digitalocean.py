"""DigitalOcean GPU Droplets (Paperspace is part of DigitalOcean), from the public docs page.

Format (verified on a capture of https://docs.digitalocean.com/products/droplets/details/pricing/,
2026-08-22, "Last verified 18 Aug 2026"): a Hugo docs page whose `<h2>` sections "On-Demand GPU
Droplet Pricing", "Spot GPU Droplet Pricing" (a public preview) and "Contract GPU Droplet
Pricing" each hold a `GPU | Price` table. Prices are USD per Droplet per hour ("$35.28 per
hour"); a "(8x)" suffix names an 8-GPU Droplet, no suffix a 1-GPU one.

Traps handled: the pricing kind comes from the section heading, and a GPU table under a heading
that names no known kind fails the run rather than being guessed; contract rows ("Per contract
after contacting sales") are counted and left out; prices are per Droplet, so "(8x)" rows carry
8 GPUs; "B300, air-cooled" and "B300, liquid-cooled" stay distinct offers; cells with
`style=` attributes are read like any other; the CPU and bandwidth prose around the tables
is never read; a cell that says "per GPU" is stored per GPU, and a row without a price ("Sold
out", "Contact sales") is counted, not offered. The spot table is a public preview whose prices
may change daily: its offers are real (self-service) but may move between two fetches.
The API alternative (GET /v2/sizes) needs a token. No region on the page.
"""

from __future__ import annotations

import re
from typing import ClassVar

from priceadvisor.collect.adapters.base import PageAdapter, SourceFormatError
from priceadvisor.collect.pages import (
    ParsedPage,
    find_grids,
    html_tables,
    parse_price,
    section_heading,
    visible_soup,
)
from priceadvisor.records import PriceBasis, Pricing, RawQuote

COLUMNS = {"model": r"^gpu$", "price": r"price"}
KINDS = {"on-demand": Pricing.ON_DEMAND, "spot": Pricing.SPOT}
COMMITMENTS = re.compile(r"contract|reserved|commit", re.I)
# The GPUs of a Droplet as its label states them: "(8x)" on the page today; "8x", "x8", "8 GPUs"
# are read alike, so a relabelled 8-GPU row is never taken for a 1-GPU one ("MI300X" and
# "L40s" have no word boundary before their digits, so they are not counts).
_COUNT = re.compile(
    r"\s*\(?\s*(?:\b(?P<n>\d+)\s*(?:[x×](?!\w)|gpus?\b)|\b[x×]\s*(?P<m>\d+)\b)\s*\)?\s*", re.I
)


class DigitalOceanAdapter(PageAdapter):
    id: ClassVar[str] = "digitalocean"

    def parse(self, html: str, url: str) -> ParsedPage:
        return parse_page(html, url)


def parse_page(html: str, url: str) -> ParsedPage:
    page, seen = ParsedPage(), set()
    for grid, columns in find_grids(html_tables(visible_soup(html)), **COLUMNS):
        heading = section_heading(grid.element, ("h2", "h3")) or ""
        kind = next((k for word, k in KINDS.items() if word in heading.lower()), None)
        if COMMITMENTS.search(heading):
            page.skipped["contract rows"] += len(grid.rows)
        elif kind is None:
            raise SourceFormatError(f"a GPU price table under an unknown heading {heading!r}")
        else:
            seen.add(kind)
            page.quotes += [
                _quote(r["model"], r["price"], kind, url) for r in grid.records(columns)
            ]
    if missing := [str(k) for k in KINDS.values() if k not in seen]:
        # One table gone while the other stays would close every offer of the missing kind.
        raise SourceFormatError(f"no {', '.join(missing)} GPU table on the page (layout changed?)")
    # A row with no price ("Contact sales", "Sold out", a dash) is no offer, but is counted.
    if unpriced := sum(q.price is None for q in page.quotes):
        page.skipped["unpriced rows"] += unpriced
    page.quotes = [q for q in page.quotes if q.price is not None]
    return page


def _quote(label: str, cell: str, kind: Pricing, url: str) -> RawQuote:
    price = parse_price(cell)
    if price is not None and (price.period != "hour" or price.floor or price.other_unit):
        raise SourceFormatError(f"{label}: not an hourly Droplet price: {cell!r}")
    count = _COUNT.search(label)
    return RawQuote(
        region="global",
        instance_type=label,
        pricing=kind,
        price=price.amount if price else None,
        # The page states Droplet prices; a cell that says "per GPU" is read as it says.
        price_basis=PriceBasis.GPU if price and price.per_gpu else PriceBasis.NODE,
        gpu_name_raw=_COUNT.sub(" ", label).split(",")[0].strip(),
        gpu_count=float(count["n"] or count["m"]) if count else 1,
        source_url=url,
    )
