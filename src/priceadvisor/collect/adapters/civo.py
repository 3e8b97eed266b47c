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
two), and only those whose headers mean "Size" and "On-demand". The monthly copies are hidden
and not read; an on-demand price not per hour fails the run. A row whose on-demand cell says
"N/A" (B200 today: the headline $3.79 is its 36-month term) has no on-demand offer: counted.
A row whose on-demand cell says anything else that is not a price ("Coming soon", "Sold out",
"Contact sales", a dash) is not offered, in the provider's own words: neither its on-demand
cell nor any of its commitment terms is an offer (each counted by those words), so no team is
told to commit to a GPU Civo does not offer. A row whose Size cell states no "N x GPU" fails
the run.

Commitments: the Commitment cell (the column headed "Commitment") holds one div per term,
`id="6_months"` … `id="36_months"`, all but the selected one hidden by the page's term picker,
each with an hourly and a monthly price: read from the unfiltered markup (hidden is how the
picker works, not "not offered") and stored as pricing `reserved` with `term_months` and the
monthly payment ($0.89/hour and $649.70/month for 1 x L40S over 36 months), unless the row's
on-demand cell says it is not offered (above): the cell is read as shown, its hidden monthly
copy left out, so "Sold out" over a stale hidden price still means sold out. A term whose hourly
price is not per hour fails the run, and so does a priced Commitment cell with no term in it.

Uncertain: only the L40S table was captured, and every row in it is priced: how the live page
writes a row that is not offered has not been seen (the words are read wherever the on-demand
cell shows them; a term div saying such words itself is not looked for). The A100, H100, H200
and B200 tables are read on the assumption that they share the L40S table's markup. The page
names no region although Civo runs several (LON1, FRA1, NYC1, ...), and GPU stock differs
between them: one global list, availability unknown.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import ClassVar

from bs4 import BeautifulSoup, Tag

from priceadvisor.collect.adapters.base import PageAdapter, SourceFormatError
from priceadvisor.collect.pages import (
    ParsedPage,
    Price,
    find_grids,
    html_tables,
    parse_price,
    text_of,
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
    read_commitments(html, url, page)
    return page


_TERM_ID = re.compile(r"^(\d+)_months?$")


def read_commitments(html: str, url: str, page: ParsedPage) -> None:
    """Every term of every GPU row's Commitment cell, hidden terms included, into `page`."""
    section = BeautifulSoup(html, "html.parser").find(id=SECTION_ID)
    for table in section.find_all("table") if isinstance(section, Tag) else []:
        _table_terms(table, url, page)


def _table_terms(table: Tag, url: str, page: ParsedPage) -> None:
    """The commitment terms of one table, its cells found by their column's header (the
    `data-title` attributes are styling for narrow screens, not something to rely on)."""
    headers = [text_of(th) for th in table.find_all("th")]
    columns = _header_columns(headers)
    if "size" not in columns or "commitment" not in columns:
        return
    for row in table.find_all("tr"):
        cells = row.find_all("td", recursive=False)
        if len(cells) == len(headers):
            _row_terms(cells, columns, url, page)
        elif row.find("div", id=_TERM_ID):
            raise SourceFormatError("a row with commitment terms does not match the headers")
        # else: the header row, or a row cut short with no terms in it


def _row_terms(cells: list[Tag], columns: dict[str, int], url: str, page: ParsedPage) -> None:
    """A row's commitment terms as offers, unless its on-demand cell says the row is not
    offered: then none of its terms is one either (counted)."""
    record = {name: text_of(cells[i]) for name, i in columns.items()}
    terms = cells[columns["commitment"]].find_all("div", id=_TERM_ID)
    if not terms and "$" in record["commitment"]:
        raise SourceFormatError(f"a commitment price with no term: {record['commitment']!r}")
    shown = _visible_text(cells[columns["on_demand"]]) if "on_demand" in columns else ""
    words = not_offered_words(shown)
    if words is not None:
        page.skipped[f"commitment terms of rows not offered ({words})"] += len(terms)
        return
    base = _hardware_quote(record["size"], record, url)
    page.quotes += [_term_quote(base, div) for div in terms]


def _visible_text(cell: Tag) -> str:
    """The cell as a reader sees it: without the hidden monthly copy."""
    return text_of(visible_soup(str(cell)))


def _header_columns(headers: list[str]) -> dict[str, int]:
    """Each meaning of COLUMNS → the first header that matches it."""
    found = {}
    for name, pattern in COLUMNS.items():
        index = next((i for i, h in enumerate(headers) if re.search(pattern, h, re.I)), None)
        if index is not None:
            found[name] = index
    return found


def _term_quote(base: RawQuote, term: Tag) -> RawQuote:
    match = _TERM_ID.match(str(term.get("id")))
    assert match is not None  # find_all matched the id
    hourly = _term_price(term, "hourly", "hour")
    monthly = _term_price(term, "monthly", "month")
    return replace(
        base,
        pricing=Pricing.RESERVED,
        price=hourly,
        term_months=int(match.group(1)),
        monthly=monthly,
    )


def _term_price(term: Tag, option: str, period: str) -> float | None:
    cell = term.find("div", attrs={"data-option": option})
    if not isinstance(cell, Tag):
        return None
    price = parse_price(cell.get_text(" ", strip=True))
    if price is not None and (price.period != period or price.floor or price.per_gpu):
        raise SourceFormatError(f"not an instance-{period} commitment price: {cell.get_text()!r}")
    return None if price is None else price.amount


def _row_quote(record: dict[str, str], url: str, page: ParsedPage) -> RawQuote | None:
    if _HARDWARE.match(record["size"]) is None:
        raise SourceFormatError(f"cannot read 'N x GPU' in the size {record['size']!r}")
    price = on_demand_price(record["on_demand"])
    if price is None:
        words = not_offered_words(record["on_demand"])
        if words is None:
            page.skipped["commitment-only rows (no on-demand price)"] += 1
        else:
            page.skipped[f"rows without an on-demand price ({words})"] += 1
        return None
    if price.period != "hour" or price.floor or price.other_unit or price.per_gpu:
        raise SourceFormatError(f"not an instance-hour price: {record['on_demand']!r}")
    quote = _hardware_quote(record["size"], record, url)
    quote.price = price.amount
    return quote


def _hardware_quote(size: str, cells: Mapping[str, object], url: str) -> RawQuote:
    """A row's offer without its price: what its Size, RAM and vCPU cells state."""
    hardware = _HARDWARE.match(size)
    if hardware is None:
        raise SourceFormatError(f"cannot read 'N x GPU' in the size {size!r}")
    gpu, count = hardware["gpu"], int(hardware["count"])
    memory = _MEMORY.search(gpu)
    return RawQuote(
        region="global",
        instance_type=f"{hardware['size'] or 'unnamed'} {count}x {gpu}",
        pricing=Pricing.ON_DEMAND,
        price=None,
        price_basis=PriceBasis.NODE,
        gpu_name_raw=gpu,
        gpu_count=count,
        gpu_memory_gb=float(memory.group(1)) if memory else None,
        vcpus=_number(_text(cells.get("vcpus"))),
        ram_gb=_number(_text(cells.get("ram"))),
        source_url=url,
    )


def _text(cell: object) -> str | None:
    return (
        cell.get_text(" ", strip=True)
        if isinstance(cell, Tag)
        else cell
        if isinstance(cell, str)
        else None
    )


def on_demand_price(text: str) -> Price | None:
    """The cell's price; "N/A per hour" (the unit label kept beside an absent price) is none."""
    if "$" not in text:
        return parse_price(_UNIT_LABEL.sub("", text).strip())
    return parse_price(text)


_NO_ON_DEMAND = ("N/A", "NA", "")


def not_offered_words(on_demand: str) -> str | None:
    """The words of an unpriced on-demand cell that says the row is not offered ("coming
    soon", "sold out", "contact sales"); None for a price, and for "N/A" or nothing (a
    commitment-only row, whose terms are offers: B200)."""
    if on_demand_price(on_demand) is not None:
        return None
    stated = _UNIT_LABEL.sub("", on_demand).strip()
    return None if stated.upper() in _NO_ON_DEMAND else stated.lower()


def _number(text: str | None) -> float | None:
    match = _NUMBER.search(text or "")
    return float(match.group()) if match else None
