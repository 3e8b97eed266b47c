"""Hot Aisle (AMD MI300X cloud), from the public pricing page (Astro HTML, no authentication).

Format (verified on a capture of https://hotaisle.xyz/pricing, 2026-08-22): no table; one plan
card per offer, styled by utility classes only, so cards are read by their structure: a kicker
`<p>` ("VM", "Bare metal"), an `<h2>` plan name ("Small"), a `<div>` of `<span>`s with the GPU
counts and chip ("2x &amp; 4x", "MI300x") and a price `<p>` "$2.99/GPU/hr". Prices are USD per
GPU-hour; VMs are billed by the minute.

Traps handled: only `<h2>` plan cards are read, so the hero block repeating both prices under
other kickers, the meta/og/twitter descriptions with "$2.99" and the "grandfathered at
$1.99/GPU/hr" line (existing customers only) are never offers; the bare-metal card ("$3.39/GPU/hr
bare metal, one-month minimum") is a commitment: stored as pricing `reserved` with the term its
card states (`term_months` 1 for "one-month" or "monthly"; a card that speaks of a commitment
but states no term in months is counted and left out); "2x & 4x" is two offers at the same
per-GPU price; "MI300x" is upper-cased; MI355X in the menu and in JSON-LD carries no price. A
card price not per GPU-hour fails the run; a "from"/"starting at" price is a floor, counted and
not stored. A plan card's parts are found inside the card by meaning (a kicker before the
heading, a block of "Nx" and chip spans and a "$" price after it), not as the heading's siblings,
so an added wrapper still reads; a card stating a GPU-hour price whose parts cannot be found
fails the run. A priced card whose button or badge says it cannot
be had now ("Sold out", "Coming soon", "Join waitlist") is passed on unavailable with that
reason, never as an offer (the capture's cards all say "Deploy"/"Reserve"). No region on the
page: one global list.
"""

from __future__ import annotations

import re
from typing import ClassVar

from bs4 import Tag

from priceadvisor.collect.adapters.base import PageAdapter, SourceFormatError
from priceadvisor.collect.pages import ParsedPage, Price, parse_price, text_of, visible_soup
from priceadvisor.records import PriceBasis, Pricing, RawQuote

COMMITMENT = re.compile(r"minimum|monthly|per month|commit|reserv", re.I)
_TERM = re.compile(r"\b(one|\d+)[\s-]*months?\b|\bmonthly\b", re.I)
_COUNTS = re.compile(r"(\d+)\s*x\b", re.I)
# A card (its button or a badge) saying the plan cannot be had now: the price is kept, the
# offer is not. No capture shows one; these are the words such pages use.
UNIT = re.compile(r"/\s*GPU\s*/\s*h(ou)?r", re.I)
NOT_OFFERED = re.compile(r"sold out|out of stock|coming soon|waitlist|notify me", re.I)


class HotAisleAdapter(PageAdapter):
    id: ClassVar[str] = "hotaisle"

    def parse(self, html: str, url: str) -> ParsedPage:
        return parse_page(html, url)


def parse_page(html: str, url: str) -> ParsedPage:
    page = ParsedPage()
    for heading in visible_soup(html).find_all("h2"):
        card = _card(heading)
        if card is None:
            continue
        kicker, counts, chip, price = card
        if price.floor:  # "from $2.49/GPU/hr": a lower bound, not the plan's price
            page.skipped["'from' price floors"] += 1
            continue
        name = f"{kicker} {text_of(heading)}"
        quotes = [_quote(name, n, chip, price.amount, url) for n in counts]
        card_text = text_of(heading.parent) if heading.parent else ""
        if COMMITMENT.search(card_text):
            months = term_months(card_text)
            if months is None:
                page.skipped["commitment plans without a term"] += 1
                continue
            for quote in quotes:
                quote.pricing, quote.term_months = Pricing.RESERVED, months
        if status := NOT_OFFERED.search(text_of(_whole_card(heading))):
            for quote in quotes:
                quote.available = False
                quote.not_offered_reason = f"Hot Aisle's plan card says {status.group()!r}"
        page.quotes += quotes
    return page


def _whole_card(heading: Tag) -> Tag:
    """The largest block around a plan heading that holds no other plan heading: the card with
    its button, which sits outside the heading's own parent."""
    card = heading
    for block in heading.parents:
        if len(block.find_all("h2")) > 1:
            break
        card = block
    return card


def term_months(text: str) -> int | None:
    """ "one-month minimum" → 1, "3-month term" → 3, "billed monthly" → 1; None: no term."""
    match = _TERM.search(text)
    if match is None:
        return None
    number = match.group(1)
    return 1 if number is None or number.lower() == "one" else int(number)


def _card(heading: Tag) -> tuple[str, list[int], str, Price] | None:
    """(kicker, GPU counts, chip, price) when the heading heads a plan card, else None. The
    parts are looked up inside the heading's card in document order, not as its siblings, so an
    extra wrapper around the heading or the price still reads the same."""
    card = _whole_card(heading)
    inside = set(map(id, card.find_all(True)))
    kicker = next((p for p in heading.find_all_previous("p") if id(p) in inside), None)
    spans = next(
        (d for d in heading.find_all_next("div") if id(d) in inside and _span_pair(d)), None
    )
    if kicker is None or spans is None:
        if UNIT.search(text_of(card)):
            raise SourceFormatError(f"plan card {text_of(heading)!r}: no kicker or GPU counts")
        return None
    count_text, chip = (text_of(s) for s in spans.find_all("span")[:2])
    counts = [int(n) for n in _COUNTS.findall(count_text)]
    prices = [t.parent for t in heading.find_all_next(string=re.compile(r"\$")) if t.parent]
    prices = [p for p in prices if id(p) in inside]
    if not counts or not prices:
        raise SourceFormatError(f"plan card {text_of(heading)!r} has no GPU count or price")
    price = parse_price(text_of(prices[0]))
    if price is None or not price.per_gpu or price.period != "hour":
        raise SourceFormatError(f"plan card {text_of(heading)!r}: not a GPU-hour price")
    return text_of(kicker), counts, chip.upper(), price


def _span_pair(block: Tag) -> bool:
    return len(block.find_all("span")) >= 2 and bool(_COUNTS.search(text_of(block)))


def _quote(name: str, count: int, chip: str, price: float, url: str) -> RawQuote:
    return RawQuote(
        region="global",
        instance_type=f"{name} {count}x {chip}",
        pricing=Pricing.ON_DEMAND,
        price=price,
        price_basis=PriceBasis.GPU,
        gpu_name_raw=f"AMD {chip}",
        gpu_count=count,
        source_url=url,
    )
