"""Nebius AI Cloud, from the public prices page (Next.js `__NEXT_DATA__`, no authentication).

Format (documented; the only recorded data is two real rows, B300 and B200, in the documented
block shape, not a page capture): `<script id="__NEXT_DATA__">` -> `props.pageProps.
__APOLLO_STATE__` -> an entity whose `content` is a JSON *string* -> `blocks[]`; the GPU block
has `type: "highlight-table-block"`, a title naming GPUs ("NVIDIA GPU Instances") and
`table.content` rows under a header `Item | vCPUs | RAM, GB | Preemptible, GPU-hour |
On-demand, GPU-hour` (before April 2026 a single "Price per GPU-hour" column). Prices are USD
per GPU-hour; vCPUs and RAM are per-GPU shares. No region: one global list.

Traps handled: columns are read by header meaning (the GPU name too: "Item"), preemptible as
spot; "from $1.82" is a floor, counted and left out; "--" and "[Contact us](...)" cells are no
offer (counted). A column headed "Effective <date>" is a scheduled price: from that date on it
replaces the current column of its kind; before that date it is counted ("scheduled prices") and
left out, so an announced price never shows as today's. A price column not stated per GPU-hour
fails the run. The exact spelling of "Effective <date>" headers is not in any capture:
"Effective May 1, 2026", "Effective 1 May 2026" and "Effective 2026-05-01" are read; any other
date fails the run.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterator
from typing import Any, ClassVar

from priceadvisor.collect.adapters.base import PageAdapter, SourceFormatError
from priceadvisor.collect.pages import ParsedPage, next_data, parse_price
from priceadvisor.records import PriceBasis, Pricing, RawQuote, utcnow

KINDS = {r"preemptible": Pricing.SPOT, r"on-?demand|price per gpu": Pricing.ON_DEMAND}
EFFECTIVE = re.compile(r"effective\s+(?:from\s+)?(.+)$", re.I)
DATE_FORMATS = ("%B %d, %Y", "%b %d, %Y", "%d %B %Y", "%d %b %Y", "%Y-%m-%d")
ITEM = r"^(item|gpu|model|instance)"
UNPRICED = "price cells without a price (contact us, dashes)"


class NebiusAdapter(PageAdapter):
    id: ClassVar[str] = "nebius"

    def parse(self, html: str, url: str) -> ParsedPage:
        return parse_page(html, url, utcnow().date())


def parse_page(html: str, url: str, today: dt.date) -> ParsedPage:
    tables = list(_gpu_tables(next_data(html)))
    if not tables:
        raise SourceFormatError("no GPU highlight-table-block in the page data (layout changed?)")
    page = ParsedPage()
    for header, rows in tables:
        columns = _price_columns(header, today, page)
        facts = {n: _column(header, p) for n, p in (("vcpus", r"vcpu"), ("ram", r"ram"))}
        facts["item"] = _column(header, ITEM)
        if facts["item"] is None:
            raise SourceFormatError(f"no GPU name column in the GPU table header {header!r}")
        for row in rows:
            if len(row) <= facts["item"]:
                raise SourceFormatError(f"a GPU table row has no name cell: {row!r}")
            page.quotes += _row_quotes(row, columns, facts, url, page)
    return page


def _gpu_tables(document: Any) -> Iterator[tuple[list[str], list[list[str]]]]:
    for block in _blocks(document):
        table = (block.get("table") or {}).get("content") or []
        title = str(block.get("title", ""))
        if block.get("type") == "highlight-table-block" and "gpu" in title.lower() and table:
            yield [str(h) for h in table[0]], [[str(c) for c in r] for r in table[1:]]


def _blocks(node: Any) -> Iterator[dict[str, Any]]:
    """Every block of every `content` JSON string anywhere in the Apollo state."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "content" and isinstance(value, str) and value.lstrip().startswith("{"):
                yield from _parsed_blocks(value)
            else:
                yield from _blocks(value)
    elif isinstance(node, list):
        for item in node:
            yield from _blocks(item)


def _parsed_blocks(text: str) -> list[dict[str, Any]]:
    try:
        blocks = json.loads(text).get("blocks")
    except (ValueError, AttributeError):
        return []
    return [b for b in blocks if isinstance(b, dict)] if isinstance(blocks, list) else []


def _column(header: list[str], pattern: str) -> int | None:
    return next((i for i, h in enumerate(header) if re.search(pattern, h, re.I)), None)


def _price_columns(header: list[str], today: dt.date, page: ParsedPage) -> dict[Pricing, int]:
    """Kind -> column in force today: a scheduled column replaces the plain one once due."""
    current: dict[Pricing, int] = {}
    due: dict[Pricing, int] = {}
    for index, text in enumerate(header):
        kind = next((k for rx, k in KINDS.items() if re.search(rx, text, re.I)), None)
        if kind is None:
            continue
        if "gpu-hour" not in text.lower() and "gpu hour" not in text.lower():
            raise SourceFormatError(f"price column {text!r} is not per GPU-hour")
        effective = EFFECTIVE.search(text)
        if effective is None:
            current[kind] = index
        elif _date(effective.group(1)) <= today:
            due[kind] = index
        else:
            page.skipped["scheduled prices (not yet effective)"] += 1
    if not current and not due:
        raise SourceFormatError(f"no price column in the GPU table header {header!r}")
    return current | due


def _date(text: str) -> dt.date:
    cleaned = text.strip(" :)(").replace("  ", " ")
    for fmt in DATE_FORMATS:
        try:
            return dt.datetime.strptime(cleaned, fmt).date()
        except ValueError:
            continue
    raise SourceFormatError(f"cannot read the date of an 'Effective' column: {text!r}")


def _row_quotes(
    row: list[str],
    columns: dict[Pricing, int],
    facts: dict[str, int | None],
    url: str,
    page: ParsedPage,
) -> list[RawQuote]:
    quotes = []
    for kind, index in columns.items():
        price = parse_price(row[index]) if index < len(row) else None
        if price is None:
            page.skipped[UNPRICED] += 1
        elif price.floor:
            page.skipped["'from' price floors"] += 1
        else:
            quotes.append(_quote(row, kind, price.amount, facts, url))
    return quotes


def _quote(
    row: list[str], kind: Pricing, price: float, facts: dict[str, int | None], url: str
) -> RawQuote:
    name = row[facts["item"] or 0]
    return RawQuote(
        region="global",
        instance_type=name,
        pricing=kind,
        price=price,
        price_basis=PriceBasis.GPU,
        gpu_name_raw=name,
        gpu_count=1,
        vcpus=_number(row, facts["vcpus"]),
        ram_gb=_number(row, facts["ram"]),
        source_url=url,
    )


def _number(row: list[str], index: int | None) -> float | None:
    text = row[index] if index is not None and index < len(row) else ""
    return float(text) if re.fullmatch(r"\d+(\.\d+)?", text.strip()) else None
