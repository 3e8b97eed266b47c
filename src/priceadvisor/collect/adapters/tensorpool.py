"""TensorPool, from its public pricing page (Next.js/Tailwind HTML, no authentication).

Format (verified on one capture of https://tensorpool.dev/pricing; the capture's date is not
recorded): no `<table>`; a CSS grid of flat `<div>` cells, its column count set by a Tailwind
class (`grid-cols-[200px_200px_1fr_1fr_1fr]`, five tracks). The first row is the header:
Category | GPU Type | Lambda Labs | TensorPool | Traditional Clouds (GCP, AWS, etc.). A category
label ("ON-DEMAND") starts a block of rows and later rows leave it empty. Prices read "$1.99/hr"
or "N/A" (not listed).

Traps handled: the Lambda Labs and "Traditional Clouds" columns are competitors' prices on the
same rows (B200 is $4.99 under both Lambda and TensorPool): only the column headed "TensorPool"
is read, and its cells must carry the header's highlight class (`bg-[#B8E7F5]` on the capture),
so a grid whose cells no longer line up with its header fails instead of reading a neighbour.
The desktop grid carries Tailwind's `hidden md:grid` (shown from the md breakpoint up), so the
page is read with scripts and styles removed but *not* hidden elements; the mobile cards repeat
the data without "/hr" and are not read (they have no "GPU Type" header). The CPU row is priced
per vCPU, not a GPU: counted and left out. "N/A", "Sold out" or "Contact us" cells are no offer
(counted under the cell's words). Rows under a category other than on-demand (a commitment
block) are counted and left out: the store has no reserved pricing kind. A second identical copy
of the grid is collapsed and counted.

Uncertain: the page says "/hr" on each GPU row but not "per GPU"; the figures are read as per
GPU-hour (the Lambda column's B200 $4.99 and H100 $3.29 are Lambda's published per-GPU prices).
One capture only; no region is named (one global list).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from bs4 import BeautifulSoup, Tag

from priceadvisor.collect.adapters.base import PageAdapter, SourceFormatError
from priceadvisor.collect.pages import ParsedPage, parse_price, text_of
from priceadvisor.records import PriceBasis, Pricing, RawQuote

HEADERS = {"category": r"^category$", "gpu": r"^gpu( type)?$", "own": r"^tensorpool$"}
ON_DEMAND = re.compile(r"on-?demand", re.I)
NOT_A_GPU = re.compile(r"^cpu\b", re.I)
_TRACKS = re.compile(r"(?:^|:)grid-cols-(?:\[([^\]]+)\]|(\d+))$")
_HIGHLIGHT = re.compile(r"^bg-")


class TensorPoolAdapter(PageAdapter):
    id: ClassVar[str] = "tensorpool"

    def parse(self, html: str, url: str) -> ParsedPage:
        return parse_page(html, url)


@dataclass(frozen=True, slots=True)
class FlatGrid:
    """A CSS grid of flat cells cut into rows: the header row and the data rows, as elements."""

    header: tuple[Tag, ...]
    rows: tuple[tuple[Tag, ...], ...]

    def texts(self) -> tuple[tuple[str, ...], ...]:
        return tuple(tuple(text_of(c) for c in row) for row in (self.header, *self.rows))


def parse_page(html: str, url: str) -> ParsedPage:
    soup = BeautifulSoup(html, "html.parser")
    for tag in soup.find_all(("script", "style", "template", "noscript", "svg")):
        tag.decompose()
    page = ParsedPage()
    grid = _one_grid([_flat_grid(e) for e in soup.find_all(_is_price_grid)], page)
    columns = {name: _column(grid, pattern) for name, pattern in HEADERS.items()}
    highlight = _own_highlight(grid, columns["own"])
    category = ""
    for row in grid.rows:
        category = text_of(row[columns["category"]]) or category
        quote = _row_quote(row, columns, category, highlight, page)
        if quote is not None:
            quote.source_url = url
            page.quotes.append(quote)
    return page


def _is_price_grid(element: Tag) -> bool:
    texts = [text_of(c) for c in element.find_all(True, recursive=False)]
    return all(any(re.search(p, t, re.I) for t in texts) for p in HEADERS.values())


def _flat_grid(element: Tag) -> FlatGrid:
    cells = element.find_all(True, recursive=False)
    width = _track_count(element)
    if len(cells) % width:
        raise SourceFormatError(f"the price grid has {len(cells)} cells, not rows of {width}")
    rows = [tuple(cells[i : i + width]) for i in range(0, len(cells), width)]
    return FlatGrid(rows[0], tuple(rows[1:]))


def _track_count(element: Tag) -> int:
    for css in element.get("class") or []:
        if match := _TRACKS.search(css):
            return len(match.group(1).split("_")) if match.group(1) else int(match.group(2))
    raise SourceFormatError("the price grid no longer states its column count (grid-cols-...)")


def _one_grid(grids: list[FlatGrid], page: ParsedPage) -> FlatGrid:
    unique = {g.texts(): g for g in grids}
    if len(unique) != 1:
        raise SourceFormatError(f"expected one TensorPool price grid, found {len(unique)}")
    if len(grids) > 1:
        page.skipped["duplicate grid copies"] += len(grids) - 1
    return next(iter(unique.values()))


def _column(grid: FlatGrid, pattern: str) -> int:
    headers = [text_of(c) for c in grid.header]
    found = [i for i, h in enumerate(headers) if re.search(pattern, h, re.I)]
    if len(found) != 1:
        raise SourceFormatError(f"expected one column headed {pattern!r}, found {len(found)}")
    return found[0]


def _own_highlight(grid: FlatGrid, own: int) -> str | None:
    """The highlight class of TensorPool's own column. A column highlighted from header to
    last cell that is not headed "TensorPool" means the headers and cells no longer line up."""
    for index, header in enumerate(grid.header):
        shade = _bg_class(header)
        marked = shade is not None and all(
            shade in (r[index].get("class") or []) for r in grid.rows
        )
        if marked and index != own:
            raise SourceFormatError(f"the highlighted column is headed {text_of(header)!r}")
    return _bg_class(grid.header[own])


def _bg_class(cell: Tag) -> str | None:
    return next((c for c in cell.get("class") or [] if _HIGHLIGHT.match(c)), None)


def _row_quote(
    row: tuple[Tag, ...],
    columns: dict[str, int],
    category: str,
    highlight: str | None,
    page: ParsedPage,
) -> RawQuote | None:
    gpu, cell = text_of(row[columns["gpu"]]), row[columns["own"]]
    if highlight is not None and highlight not in (cell.get("class") or []):
        raise SourceFormatError(f"{gpu}: the TensorPool cell lost its column's highlight")
    if not ON_DEMAND.search(category):
        page.skipped[f"rows under {category or 'no category'!r}"] += 1
        return None
    if NOT_A_GPU.match(gpu):
        page.skipped["CPU rows"] += 1
        return None
    price = parse_price(text_of(cell))
    if price is None:
        # by the cell's own words: "N/A" (not listed) is not "Sold out" or "Contact us"
        page.skipped[f"cells without a price ({text_of(cell).lower() or 'empty'})"] += 1
        return None
    if price.period != "hour" or price.floor or price.other_unit:
        raise SourceFormatError(f"{gpu}: not an hourly list price: {text_of(cell)!r}")
    return RawQuote(
        region="global",
        instance_type=gpu,
        pricing=Pricing.ON_DEMAND,
        price=price.amount,
        price_basis=PriceBasis.GPU,
        gpu_name_raw=gpu,
        gpu_count=1,
    )
