"""Massed Compute, from the React flight data of its public pricing page (Next.js app router,
no authentication).

Format (verified on one capture of https://vm.massedcompute.com/pricing; its date is not
recorded): the price table is not in the HTML markup but in the page's flight data, the
serialised React tree pushed by `self.__next_f.push([1, "..."])` scripts (JSON inside JS
strings). Each table row is an element keyed "<GPU>-x <N>-<i>" for the desktop table and
"<GPU>-mobile-x <N>-<i>" for the mobile cards (e.g. "H100 (80GB)-mobile-x 1-0"); its cells
hold a "×N" badge and the price as the string "$$52.80" (React escapes a leading "$" by
doubling it) followed by a "/hr" label. Prices are USD per **node**-hour for the stated GPU
count (B300 ×8 at $52.80), stored per node for the core to divide.

Traps handled: a row's cells may be deferred to later chunks (`$L2f` references), so a price
printed after a row key can belong to another row: each row's text is bounded at the next row
key *and* at the end of its flight line, and a row with no price inside its own bounds is no
offer (counted: "on request" rows and deferred cells alike). The desktop and mobile copies of
a row must agree: one offer per GPU and count, the extra copy counted, and copies with
different prices fail the run. A price not per hour, or unreadable, fails the run. The
`/api/pricing` endpoint redirects to a sign-in page and is not used. A priced row labelled
"Sold out", "Coming soon" or "Waitlist" (in either copy) is passed on unavailable with that
reason, never as an offer.

Uncertain: one capture, an excerpt of four rows; the other desktop columns (280, "2800 GB",
6000: presumably vCPUs, RAM and storage) carry no header in the capture and are not read.
Deferred cells are not resolved, so a row priced only in a deferred chunk of both copies would
be counted as unpriced rather than stored. "H100 (80GB)" does not say SXM or PCIe and resolves
to the catalog's default H100 (SXM). No region is named: one global list.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from priceadvisor.collect.adapters.base import PageAdapter, SourceFormatError
from priceadvisor.collect.pages import ParsedPage, flight_text
from priceadvisor.records import PriceBasis, Pricing, RawQuote

ROW_KEY = re.compile(r'"(?P<gpu>[^"\n]+?)-(?P<mobile>mobile-)?x (?P<count>\d+)-\d+"')
PRICE = re.compile(r'"\$\$(?P<amount>[^"]*)"')
_LABEL = re.compile(r'"children"\s*:\s*"(?P<label>[^"]*)"')
_AMOUNT = re.compile(r"-?\d[\d,]*(\.\d+)?|-?\.\d+")
_HOURLY = re.compile(r"^/\s*(hr|hour|h)$", re.I)
_MEMORY = re.compile(r"\((\d+)\s*GB\)", re.I)
# A row's label (its button or a badge) saying it cannot be rented now; no capture shows one
# beside a price, so such a row is passed on with the reason, never as an offer.
NOT_OFFERED = re.compile(r"^(sold out|out of stock|coming soon|waitlist|join waitlist)$", re.I)


class MassedComputeAdapter(PageAdapter):
    id: ClassVar[str] = "massedcompute"

    def parse(self, html: str, url: str) -> ParsedPage:
        return parse_flight(flight_text(html), url)


@dataclass(frozen=True, slots=True)
class RowCopy:
    """One rendering of a price row (desktop table or mobile card) and the price in its text."""

    gpu: str
    count: int
    mobile: bool
    price: float | None
    status: str | None = None  # a label saying the row cannot be rented now ("Sold out")


def parse_flight(flight: str, url: str) -> ParsedPage:
    copies = row_copies(flight)
    if not copies:
        raise SourceFormatError("no pricing rows in the page's flight data (layout changed?)")
    page = ParsedPage()
    by_offer: dict[tuple[str, int], list[RowCopy]] = {}
    for copy in copies:
        by_offer.setdefault((copy.gpu, copy.count), []).append(copy)
    for (gpu, count), found in by_offer.items():
        prices = {c.price for c in found if c.price is not None}
        if len(prices) > 1:
            raise SourceFormatError(f"{gpu} ×{count}: desktop and mobile prices disagree")
        if not prices:
            page.skipped["rows without a price of their own (on request)"] += 1
            continue
        if extra := sum(c.price is not None for c in found) - 1:
            page.skipped["duplicate copies (desktop and mobile)"] += extra
        quote = _quote(gpu, count, prices.pop(), url)
        if status := next((c.status for c in found if c.status), None):
            quote.available = False
            quote.not_offered_reason = f"Massed Compute's row says {status!r}"
        page.quotes.append(quote)
    return page


def row_copies(flight: str) -> list[RowCopy]:
    """Every row key with the price inside its bounds: up to the next key or line end."""
    keys = list(ROW_KEY.finditer(flight))
    copies = []
    for index, key in enumerate(keys):
        end = keys[index + 1].start() if index + 1 < len(keys) else len(flight)
        line_end = flight.find("\n", key.end(), end)
        window = flight[key.end() : end if line_end < 0 else line_end]
        price, status = _price(window, key["gpu"]), _status(window)
        copies.append(RowCopy(key["gpu"], int(key["count"]), bool(key["mobile"]), price, status))
    return copies


def _status(window: str) -> str | None:
    labels = (m["label"].strip() for m in _LABEL.finditer(window))
    return next((label for label in labels if NOT_OFFERED.match(label)), None)


def _price(window: str, gpu: str) -> float | None:
    match = PRICE.search(window)
    if match is None:
        return None
    amount = _AMOUNT.fullmatch(match["amount"].strip())
    if amount is None:
        raise SourceFormatError(f"{gpu}: cannot read the price {match['amount']!r}")
    label = _LABEL.search(window, match.end())
    if label is None or not _HOURLY.match(label["label"].strip()):
        found = label["label"] if label else "none"
        raise SourceFormatError(f"{gpu}: price not per hour (unit {found!r})")
    return float(amount.group().replace(",", ""))


def _quote(gpu: str, count: int, price: float, url: str) -> RawQuote:
    memory = _MEMORY.search(gpu)
    return RawQuote(
        region="global",
        instance_type=f"{gpu} x{count}",
        pricing=Pricing.ON_DEMAND,
        price=price,
        price_basis=PriceBasis.NODE,
        gpu_name_raw=gpu,
        gpu_count=count,
        gpu_memory_gb=float(memory.group(1)) if memory else None,
        source_url=url,
    )
