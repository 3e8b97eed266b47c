"""GMI Cloud, from the GPU cards of its public pricing page (Next.js HTML, no authentication).

Format (verified on one capture of https://www.gmicloud.ai/en/pricing; its date is not
recorded; the bare /pricing redirects, so the /en/ path is pinned): under "Production-Ready
GPUs Today", one card per chip, styled by utility classes only: a badge ("AVAILABLE NOW",
"Limited Availability"), an `<h3>` "NVIDIA H100 GPU", and a price line of two `<span>`s,
"from $2.00" and "/GPU-hour". Cards are found by meaning: a heading naming an NVIDIA or AMD
chip whose nearest enclosing block states a per-GPU-hour unit, and holds no other such heading.

Every price on the capture is a "from" floor: the section offers the GPUs "on-demand ... or
reserved", and the page's FAQ (not in the capture; reported by an earlier reading of the page)
says on-demand and committed prices differ, so a floor is not the price an on-demand user pays.
Floors are counted and never stored. A card priced without
"from" would be stored as an on-demand offer per GPU-hour; none exists today, so the run fails
with a message saying the page shows only floors (the provider is disabled by default in its
manifest for that reason; enable it in the config once GMI publishes list prices).

Traps handled: "Pre order" (GB300) keeps a dangling "/GPU-hour" but has no price: counted, no
offer. "$2.00" also appears in meta, og and flight data: only cards are read. GB200 and GB300
are Grace-Blackwell superchips (the catalog's per-GPU GB200/GB300 entries), not B200 or B300.
A card whose price cannot be read, or is not per GPU-hour ("/hour", "/month"), fails the run;
"/GPU-hour", "/GPU hour" and "/GPU/hr" are all read as per GPU-hour. A priced card whose
badge or text says it cannot be rented now ("Sold out", "Coming soon", "Waitlist", "Pre order")
is passed on unavailable with that reason, never as an offer (no capture shows such a card).

Uncertain: one capture; no region is named (one global list). Whether GMI's on-demand price
ever appears on this page is unknown.
"""

from __future__ import annotations

import re
from typing import ClassVar

from bs4 import BeautifulSoup, Tag

from priceadvisor.collect.adapters.base import PageAdapter, SourceFormatError
from priceadvisor.collect.pages import ParsedPage, parse_price, text_of, visible_soup
from priceadvisor.records import PriceBasis, Pricing, RawQuote

CHIP = re.compile(r"^(NVIDIA|AMD)\s+\S+", re.I)
UNIT = re.compile(r"/\s*GPU[\s/-]*h(ou)?r", re.I)
NO_PRICE = re.compile(r"pre-?\s*order|coming soon|contact|waitlist", re.I)
AVAILABLE = re.compile(r"available now|limited availability", re.I)
# A badge saying the priced card cannot be rented now: the price is kept, the offer is not.
NOT_OFFERED = re.compile(r"sold out|out of stock|coming soon|waitlist|pre-?\s*order", re.I)
FLOORS = "'from' price floors"


class GmiCloudAdapter(PageAdapter):
    id: ClassVar[str] = "gmicloud"

    def parse(self, html: str, url: str) -> ParsedPage:
        return parse_page(html, url)


def parse_page(html: str, url: str) -> ParsedPage:
    soup = visible_soup(html)
    cards = [(h, card) for h in soup.find_all(["h2", "h3", "h4"]) if (card := _card(h, soup))]
    if not cards:
        raise SourceFormatError("no GPU cards with a per-GPU-hour price (layout changed?)")
    page = ParsedPage()
    for heading, card in cards:
        quote = _card_quote(text_of(heading), card, url, page)
        if quote is not None:
            page.quotes.append(quote)
    if not page.quotes and page.skipped[FLOORS]:
        raise SourceFormatError(
            f"GMI Cloud's page shows only 'from' price floors ({page.skipped[FLOORS]} cards), "
            "no on-demand price to store"
        )
    return page


def _card(heading: Tag, soup: BeautifulSoup) -> Tag | None:
    """The nearest block around a chip heading that states a per-GPU-hour unit, if that block
    holds no other chip heading (else the heading is a title, not a card)."""
    if not CHIP.match(text_of(heading)):
        return None
    for block in heading.parents:
        if block is soup:
            return None
        names = [h for h in block.find_all(["h2", "h3", "h4"]) if CHIP.match(text_of(h))]
        if len(names) > 1:
            return None
        if UNIT.search(text_of(block)):
            return block
        if "$" in text_of(block):
            # a card of its own with a price, but no per-GPU-hour unit: a changed basis
            raise SourceFormatError(f"{text_of(heading)}: a card price not per GPU-hour")
    return None


def _card_quote(name: str, card: Tag, url: str, page: ParsedPage) -> RawQuote | None:
    amounts = [s.parent for s in card.find_all(string=re.compile(r"\$")) if s.parent]
    if not amounts:
        if NO_PRICE.search(text_of(card)):
            page.skipped["cards without a price (pre-order)"] += 1
            return None
        raise SourceFormatError(f"{name}: the card has no price")
    unit = UNIT.search(text_of(card))
    price = parse_price(f"{text_of(amounts[0])} {unit.group() if unit else ''}")
    if price is None or price.period != "hour" or not price.per_gpu or price.other_unit:
        raise SourceFormatError(f"{name}: not a per-GPU-hour price: {text_of(amounts[0])!r}")
    if price.floor:
        page.skipped[FLOORS] += 1
        return None
    status = NOT_OFFERED.search(text_of(card))
    return RawQuote(
        region="global",
        instance_type=name,
        pricing=Pricing.ON_DEMAND,
        price=price.amount,
        price_basis=PriceBasis.GPU,
        gpu_name_raw=name,
        gpu_count=1,
        available=_available(text_of(card), status),
        source_url=url,
        not_offered_reason=f"GMI Cloud's card says {status.group()!r}" if status else None,
    )


def _available(text: str, status: re.Match[str] | None) -> bool | None:
    if status is not None:
        return False
    return True if AVAILABLE.search(text) else None
