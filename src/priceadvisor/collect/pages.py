"""Reading prices off public pricing pages: the toolkit every page adapter is built on.

A page adapter names *what* it wants (a table whose headers mean "GPU model" and "on-demand",
the tab a table sits under, the JSON a Next.js page embeds); this module finds it by meaning,
not by position or CSS class, and refuses what it cannot read instead of guessing:

- `get_page`: one GET with a browser-like Accept and User-Agent (pages answer 403 to bots), a
  truncated page refused. Conditional GET and request spacing come from the HTTP session.
- `visible_soup`: the page with hidden elements (a `hide` duplicate table, `display:none`,
  `hidden`, `aria-hidden`), scripts and styles removed; inactive tab panels are kept, since
  a tab strip hides all but one panel by design.
- `html_tables` / `div_grids` -> `Grid`s; `find_grids` picks the grids whose headers mean what
  the adapter needs and drops exact duplicates.
- `parse_price`: "$3.45", "&nbsp;$1.40", "$1,234.50/hr", "$2.30/GPU-hr", "from $1.82", "$5.50
  per hour"; None for "Contact sales", "N/A", empty and any run of dashes ("—", "––");
  an error for anything else.
- `tab_label` / `section_heading`: the context a table sits in.
- `json_ld`, `next_data`, `flight_text`, `json_values`: embedded JSON, escaping undone.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from bs4 import BeautifulSoup, Tag

from priceadvisor.collect.http import HttpSession
from priceadvisor.collect.source import SourceFormatError, require_complete_html
from priceadvisor.records import RawQuote

BROWSER_HEADERS = {
    "User-Agent": "Mozilla/5.0 (X11; Linux x86_64) priceadvisor (GPU price tracker)",
    "Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
    "Accept-Language": "en-US,en;q=0.9",
}


async def get_page(session: HttpSession, url: str) -> str:
    """One request for one page, as a browser would ask; a page cut short is refused."""
    return require_complete_html(await session.get_text(url, headers=BROWSER_HEADERS))


@dataclass(slots=True)
class ParsedPage:
    """What a page adapter read: its quotes, and what it left out on purpose by reason
    ("reserved tenor", "monthly commitment"), so a skipped price is counted, never silent."""

    quotes: list[RawQuote] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)

    def summary(self) -> str:
        counts = sorted((reason, n) for reason, n in self.skipped.items() if n)
        left_out = ", ".join(f"{n} {reason}" for reason, n in counts)
        return f"{len(self.quotes)} quotes" + (f"; left out: {left_out}" if left_out else "")


# --- visibility -------------------------------------------------------------------------------

_NOT_CONTENT = ("script", "style", "template", "noscript", "svg")
_HIDDEN_CLASSES = {"hide", "hidden", "d-none", "sr-only", "w-condition-invisible"}
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.I)


def visible_soup(html: str) -> BeautifulSoup:
    """The page as a reader sees it: hidden elements and non-content tags removed."""
    soup = BeautifulSoup(html, "html.parser")
    for tag in soup.find_all(_NOT_CONTENT):
        tag.decompose()
    for tag in [t for t in soup.find_all(True) if is_hidden(t)]:
        if not tag.decomposed:
            tag.decompose()
    return soup


def is_hidden(tag: Tag) -> bool:
    """Hidden by attribute, class or inline style. A tab panel is never "hidden": only one
    panel of a tab strip is shown at a time and the others carry `hidden` by design."""
    if tag.attrs is None or _is_tab_panel(tag):
        return False
    classes = set(tag.get("class") or [])
    return (
        tag.has_attr("hidden")
        or str(tag.get("aria-hidden", "")).lower() == "true"
        or bool(classes & _HIDDEN_CLASSES)
        or bool(_HIDDEN_STYLE.search(str(tag.get("style", ""))))
    )


def _is_tab_panel(tag: Tag) -> bool:
    return tag.get("role") == "tabpanel" or "w-tab-pane" in (tag.get("class") or [])


def text_of(tag: Tag) -> str:
    """The element's text with whitespace (including &nbsp;) collapsed to single spaces."""
    return " ".join(tag.get_text(" ").split())


# --- grids ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Grid:
    """A table as header texts and rows of cell texts, with the element it came from."""

    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    element: Tag

    def column(self, pattern: str) -> int | None:
        """The first column whose header matches `pattern` (a case-insensitive regex)."""
        found = (i for i, h in enumerate(self.headers) if re.search(pattern, h, re.I))
        return next(found, None)

    def records(self, columns: dict[str, int]) -> Iterator[dict[str, str]]:
        """Each row as {name: cell text} for the named columns (missing cells are "")."""
        for row in self.rows:
            yield {name: row[i] if i < len(row) else "" for name, i in columns.items()}


def html_tables(soup: BeautifulSoup | Tag) -> list[Grid]:
    """Every <table> as a Grid. Header rows (in <thead>, or a first row of <th>s) are merged
    per column ("Reserved" over "7-30 days" -> "Reserved 7-30 days"); colspan and rowspan are
    expanded so a "Contact us" cell spanning four tenors stands in each of them."""
    grids = []
    for table in soup.find_all("table"):
        head, body = _split_rows(table)
        grids.append(Grid(_column_names(_layout(head)), tuple(_layout(body)), table))
    return grids


def _split_rows(table: Tag) -> tuple[list[list[Tag]], list[list[Tag]]]:
    """(header rows, data rows): the header is <thead> (Webflow writes its <th>s with no <tr>)
    or else the first row."""
    rows = [
        c for tr in table.find_all("tr") if tr.find_parent("table") is table if (c := _cells(tr))
    ]
    thead = next((t for t in table.find_all("thead") if t.find_parent("table") is table), None)
    if thead is None:
        return rows[:1], [r for r in rows[1:] if _has_data(r)]
    head = [r for r in rows if r[0].find_parent("thead") is thead] or [thead.find_all("th")]
    return head, [r for r in rows if r[0].find_parent("thead") is not thead and _has_data(r)]


def _cells(row: Tag) -> list[Tag]:
    return row.find_all(["td", "th"])


def _has_data(cells: list[Tag]) -> bool:
    return any(c.name == "td" for c in cells)


def _layout(rows: list[list[Tag]]) -> list[tuple[str, ...]]:
    """Rows of cell texts, each spanned cell repeated in every column and row it covers."""
    pending: dict[int, tuple[str, int]] = {}  # column -> (text, rows it still covers)
    lines = []
    for cells in rows:
        line: list[str] = []
        queue = list(cells)
        while queue or len(line) in pending:
            if len(line) in pending:
                text, left = pending.pop(len(line))
                line.append(text)
                if left > 1:
                    pending[len(line) - 1] = (text, left - 1)
                continue
            cell = queue.pop(0)
            for _ in range(_span(cell, "colspan")):
                line.append(text_of(cell))
                if (down := _span(cell, "rowspan")) > 1:
                    pending[len(line) - 1] = (line[-1], down - 1)
        lines.append(tuple(line))
    return lines


def _column_names(lines: list[tuple[str, ...]]) -> tuple[str, ...]:
    width = max((len(line) for line in lines), default=0)
    return tuple(
        " ".join(dict.fromkeys(_at(line, i) for line in lines if _at(line, i)))
        for i in range(width)
    )


def _at(line: tuple[str, ...], index: int) -> str:
    return line[index] if index < len(line) else ""


def _span(cell: Tag, attribute: str = "colspan") -> int:
    try:
        return max(1, int(str(cell.get(attribute) or 1)))
    except ValueError:
        return 1


def div_grids(
    soup: BeautifulSoup | Tag, container: str, header: str, row: str, cell: str
) -> list[Grid]:
    """Tables built of <div>s (Webflow, HubSpot): CSS selectors for the table container, its
    header cells, its rows and a row's cells. Selectors only locate; meaning comes from the
    header texts, matched by `find_grids`."""
    grids = []
    for element in soup.select(container):
        headers = tuple(text_of(h) for h in element.select(header))
        rows = tuple(tuple(text_of(c) for c in r.select(cell)) for r in element.select(row))
        grids.append(Grid(headers, rows, element))
    return grids


def find_grids(grids: list[Grid], **meanings: str) -> list[tuple[Grid, dict[str, int]]]:
    """The grids that have a column for every meaning (name=header regex), with those columns,
    exact duplicates (the same headers and rows twice) kept once."""
    found, seen = [], set()
    for grid in grids:
        columns = {name: grid.column(pattern) for name, pattern in meanings.items()}
        key = (grid.headers, grid.rows)
        if None in columns.values() or key in seen or not grid.rows:
            continue
        seen.add(key)
        found.append((grid, {k: v for k, v in columns.items() if v is not None}))
    return found


# --- prices -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Price:
    """A price cell as stated: the amount, the period it is for, and what qualifies it."""

    amount: float
    period: str | None  # "hour", "minute", "second", "month", "year" or None (not stated)
    per_gpu: bool  # "/GPU/hr", "per GPU-hour"
    floor: bool  # "from $1.82", "Starting from": a lower bound, not a price
    other_unit: bool  # "per GB", "/M tokens": priced by something other than time


# A cell that says "no price here": words, or any run of dashes (hyphen, U+2010-U+2015: en and
# em dashes; real Nebius tables write an empty cell as two en-dashes, "––").
UNPRICED = re.compile(
    r"^(contact( us| sales)?|talk to sales|coming soon|sold out|n/?a|tbd"
    r"|([-\u2010-\u2015] ?)+|\*)?$",
    re.I,
)
_AMOUNT = re.compile(r"\$\s*(-?\d[\d,]*(?:\.\d+)?|-?\.\d+)")
_PERIODS = {
    "hour": r"/\s*(gpu[\s/-]*)?(hr|hour|h)\b|per\s+(gpu[\s/-]*)?hour|hourly|gpu-hour",
    "minute": r"/\s*min\b|per\s+minute",
    "second": r"/\s*(s|sec)\b|per\s+second",
    "month": r"/\s*mo(nth)?\b|per\s+month|monthly",
    "year": r"/\s*(yr|year)\b|per\s+year|yearly",
}
_PER_GPU = re.compile(r"gpu[\s/-]*(hr|hour|h)\b|per\s+gpu|/\s*gpu", re.I)
_OTHER_UNIT = re.compile(r"per\s+(gb|tb|gib|ip|m\b|million|1m)|/\s*(gb|gib|tb|m\b|1m)|tokens", re.I)
_MARKDOWN_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")  # CMS cells: "[Contact us](https://...)"
_FLOOR = re.compile(r"\b(from|starting( at| from)?|as low as)\b", re.I)


def parse_price(text: str) -> Price | None:
    """A priced cell read robustly; None when the cell says it has no price ("Contact sales",
    em-dash, "N/A", empty); SourceFormatError when it is neither (the layout moved)."""
    cleaned = " ".join(_MARKDOWN_LINK.sub(r"\1", text).replace("\u00a0", " ").split())
    if UNPRICED.match(cleaned):
        return None
    match = _AMOUNT.search(cleaned)
    if match is None:
        raise SourceFormatError(f"cannot read a price in {cleaned[:60]!r}")
    return Price(
        amount=float(match.group(1).replace(",", "")),
        period=next((p for p, rx in _PERIODS.items() if re.search(rx, cleaned, re.I)), None),
        per_gpu=bool(_PER_GPU.search(cleaned)),
        floor=bool(_FLOOR.search(cleaned)),
        other_unit=bool(_OTHER_UNIT.search(cleaned)),
    )


# --- context: tabs and headings ---------------------------------------------------------------


def tab_label(element: Tag) -> str | None:
    """The label of the tab whose panel holds `element`: ARIA (`role=tab` with
    `aria-controls`, or a panel's `aria-labelledby`) or Webflow's `data-w-tab` pairs."""
    panel = element.find_parent(_is_tab_panel)
    if panel is None:
        return None
    root = _root(panel)
    label = _labelled_by(root, panel) or _controlling_tab(root, panel) or _webflow_tab(root, panel)
    return text_of(label) if label is not None else None


def _root(tag: Tag) -> Tag:
    parents = list(tag.parents)
    return parents[-1] if parents else tag


def _labelled_by(root: Tag, panel: Tag) -> Tag | None:
    ids = str(panel.get("aria-labelledby") or "").split()
    return next((t for i in ids if isinstance(t := root.find(id=i), Tag)), None)


def _controlling_tab(root: Tag, panel: Tag) -> Tag | None:
    panel_id = panel.get("id")
    if not panel_id:
        return None
    tabs = root.find_all(lambda t: t.has_attr("aria-controls"))
    return next((t for t in tabs if panel_id in str(t["aria-controls"]).split()), None)


def _webflow_tab(root: Tag, panel: Tag) -> Tag | None:
    name = panel.get("data-w-tab")
    links = root.find_all(lambda t: t.get("data-w-tab") == name) if name else []
    return next((t for t in links if t is not panel and not _is_tab_panel(t)), None)


def section_heading(element: Tag, levels: tuple[str, ...] = ("h1", "h2")) -> str | None:
    """The nearest heading before `element` of one of `levels`, skipping the sub-headings
    (h3..h6 unless asked for) of nested blocks in between."""
    heading = element.find_previous(list(levels))
    return text_of(heading) if isinstance(heading, Tag) else None


# --- embedded JSON ----------------------------------------------------------------------------


def json_ld(html: str) -> list[Any]:
    """Every JSON-LD block (`<script type="application/ld+json">`) that parses."""
    soup = BeautifulSoup(html, "html.parser")
    blocks = soup.find_all("script", attrs={"type": "application/ld+json"})
    return [doc for b in blocks if (doc := _loads(b.string or "")) is not None]


def next_data(html: str) -> Any:
    """The `__NEXT_DATA__` document of a Next.js page (pages router)."""
    script = BeautifulSoup(html, "html.parser").find("script", id="__NEXT_DATA__")
    document = _loads(script.string or "") if isinstance(script, Tag) else None
    if document is None:
        raise SourceFormatError("no readable __NEXT_DATA__ script (layout changed?)")
    return document


_FLIGHT_PUSH = re.compile(r"self\.__next_f\.push\(\[\s*1\s*,\s*(\"(?:[^\"\\]|\\.)*\")\s*\]\)")


def flight_text(html: str) -> str:
    """The React flight data of a Next.js page (app router), its string escaping undone: the
    payload sits inside JS string literals (`\\"` for every quote) split over many pushes."""
    chunks = [json.loads(literal) for literal in _FLIGHT_PUSH.findall(html)]
    if not chunks:
        raise SourceFormatError("no Next.js flight data in the page (layout changed?)")
    return "".join(chunks)


def json_values(text: str, key: str) -> list[Any]:
    """Every JSON value that follows `"key":` in `text` (flight data, inline scripts)."""
    decoder, values = json.JSONDecoder(), []
    for match in re.finditer(rf'"{re.escape(key)}"\s*:\s*', text):
        try:
            values.append(decoder.raw_decode(text, match.end())[0])
        except ValueError:
            continue
    return values


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None
