"""The `prices` table as plain text, character for character what Rich draws for it
(cli/prices.py's to_rich: no edge, no padding, a rule under the header) on a console that is
not a terminal, so without styles: the light start of `prices` (cli/light.py) prints it without
importing Rich.

Only the table Rich draws without shrinking anything is drawn here: every column as wide as its
widest cell, one line per row. Anything else returns None and Rich draws it: a table wider than
the console (Rich wraps and shortens place names), a cell of more than one line, a character
outside printable ASCII (Rich measures those with its own width tables), a cell with leading,
trailing or doubled spaces (word wrapping would move them), a tab (Rich expands it).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from priceadvisor.cli.prices import Shown

# Words of printable ASCII, one space between them (or nothing at all).
_PLAIN_CELL = re.compile(r"(?:[!-~]+(?: [!-~]+)*)?")
_PLAIN_LINE = re.compile(r"[ -~]*")
_PLAIN_NOTE = re.compile(r"[ -~\u2026]*")  # the notes' own ellipsis is one column wide too
RULE = "\u2500"  # Rich's SIMPLE_HEAD box draws the header's rule with this


def draw(
    title: str, columns: Sequence[Shown], rows: Sequence[Sequence[str]], width: int
) -> str | None:
    """The title, the header, its rule and the rows, each line ending in a newline; None when
    Rich would lay the table out otherwise (see the module's docstring)."""
    headers = [c.header for c in columns]
    if not _PLAIN_LINE.fullmatch(title) or not all(map(_plain, [headers, *rows])):
        return None
    widths = [max([len(h), *(len(r[i]) for r in rows)]) or 1 for i, h in enumerate(headers)]
    total = sum(widths) + len(widths) - 1  # one space between columns
    if total > width:
        return None
    lines = [title, _line(headers, columns, widths), RULE * total]
    lines += [_line(row, columns, widths) for row in rows]
    return "\n".join(lines) + "\n"


def _plain(cells: Sequence[str]) -> bool:
    return all(_PLAIN_CELL.fullmatch(cell) for cell in cells)


def _line(cells: Sequence[str], columns: Sequence[Shown], widths: list[int]) -> str:
    return " ".join(
        cell.rjust(w) if c.right else cell.ljust(w)
        for cell, c, w in zip(cells, columns, widths, strict=True)
    )


def note_line(note: str, width: int) -> str | None:
    """A note as Rich prints it on its own line (wrapped at the console's width: None when it
    would be wrapped, or holds what Rich would change)."""
    if len(note) > width or not _PLAIN_NOTE.fullmatch(note):
        return None
    return note + "\n"
