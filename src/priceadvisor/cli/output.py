"""Render query results as a rich table, CSV or JSON (stable: a list of objects).

Every value DuckDB's Python client returns prints in every format. Cell text is never read as
Rich markup (provider strings may hold `[/]` or `[link=…]`) and loses control characters, so
a region name cannot move the cursor, set a title or plant a hyperlink in a terminal. A CSV text
cell that starts like a spreadsheet formula gets a leading `'` (store.spreadsheet).

Rich is imported by the functions that draw with it: the CSV and JSON text is built without it
(the light start of `prices`, cli/light.py, writes that text itself).
"""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import io
import json
import math
import re
from collections.abc import Iterable
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from priceadvisor.store.reads import Table
from priceadvisor.store.spreadsheet import csv_cell

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table as RichTable


# Piped output is not cut to 80 columns: scripts and CI logs get whole tables.
PIPED_WIDTH = 250


class Format(StrEnum):
    TABLE = "table"
    CSV = "csv"
    JSON = "json"


def render(table: Table, fmt: Format, console: Console, title: str | None = None) -> None:
    if fmt is Format.JSON:
        console.out(to_json(table), highlight=False)
    elif fmt is Format.CSV:
        console.out(to_csv(table), highlight=False, end="")
    else:
        console.print(to_rich(table, title))


def to_json(table: Table) -> str:
    records = [dict(zip(table.columns, map(_json_value, row), strict=True)) for row in table.rows]
    return _json_text(records)


def _json_text(value: Any) -> str:
    text = json.dumps(value, indent=2, ensure_ascii=False)
    # json escapes C0 characters itself; C1 and DEL pass raw unless escaped here.
    return _CONTROL.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


def to_csv(table: Table) -> str:
    return _csv_rows([table.columns], header=True) + _csv_rows(table.rows)


def _csv_rows(rows: Iterable[Iterable[Any]], header: bool = False) -> str:
    buffer = io.StringIO()
    spell = clean if header else _text
    cells = [[csv_cell(v, spell(v)) for v in row] for row in rows]
    csv.writer(buffer, lineterminator="\n").writerows(cells)
    return buffer.getvalue()


def stream(
    columns: list[str], batches: Iterable[list[tuple[Any, ...]]], fmt: Format, console: Console
) -> None:
    """CSV or JSON written batch by batch, the same text `render` gives for the whole table."""
    if fmt is Format.CSV:
        console.out(_csv_rows([columns], header=True), highlight=False, end="")
        for rows in batches:
            console.out(_csv_rows(rows), highlight=False, end="")
        return
    opened = False
    for rows in batches:
        records = [dict(zip(columns, map(_json_value, row), strict=True)) for row in rows]
        # Each record as json.dumps(indent=2) places it inside a list: two spaces deeper.
        body = ",\n  ".join(_json_text(r).replace("\n", "\n  ") for r in records)
        console.out(("," if opened else "[") + "\n  " + body, highlight=False, end="")
        opened = True
    console.out("\n]" if opened else "[]", highlight=False)


def to_rich(table: Table, title: str | None = None) -> RichTable:
    from rich.table import Table as RichTable
    from rich.text import Text

    out = RichTable(
        title=Text(clean(title)) if title else None, header_style="bold", show_lines=False
    )
    for index, column in enumerate(table.columns):
        numeric = _numeric_column([row[index] for row in table.rows])
        out.add_column(Text(clean(column)), justify="right" if numeric else "left", no_wrap=numeric)
    for row in table.rows:
        out.add_row(*(Text(_text(v)) for v in row))
    if not table.rows:
        out.caption = "no rows"
    return out


def _numeric_column(values: list[Any]) -> bool:
    """Right-align a column by its type: every value a number (NULLs aside), not the first row's
    (a leading NULL would left-align a whole column of costs)."""
    present = [v for v in values if v is not None]
    return bool(present) and all(
        isinstance(v, int | float | decimal.Decimal) and not isinstance(v, bool) for v in present
    )


def _json_value(value: Any) -> Any:
    """DuckDB values as JSON: ISO times, seconds for intervals, floats for decimals, hex for
    blobs, text for UUIDs and non-text map keys, null for NaN/inf."""
    if isinstance(value, list | tuple):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {_key(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, float) and not math.isfinite(value):
        return None
    for kind, convert in _JSON_CONVERSIONS:
        if isinstance(value, kind):
            return convert(value)
    return value if isinstance(value, str | int | float | bool | None) else str(value)


def _key(key: Any) -> str:
    return key if isinstance(key, str) else json.dumps(_json_value(key), ensure_ascii=False)


_JSON_CONVERSIONS: tuple[tuple[type | tuple[type, ...], Any], ...] = (
    ((dt.datetime, dt.date, dt.time), lambda v: v.isoformat()),
    (dt.timedelta, lambda v: v.total_seconds()),
    (decimal.Decimal, float),
    (bytes, lambda v: v.hex()),
)
# A UUID (DuckDB returns uuid.UUID) is text: the fallback str() of _json_value. The module is
# not imported for the isinstance check (~1.5 ms of every start with platform).

# C0 and C1 control characters except tab and newline: ESC starts CSI/OSC sequences, C1 0x9b
# and 0x9d are their one-byte forms, CR overwrites what was printed.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def clean(text: str) -> str:
    """Text as it may reach a terminal or a spreadsheet: control characters removed."""
    return _CONTROL.sub("", text)


def _text(value: Any) -> str:
    return clean(_plain(value))


def _plain(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return _float_text(value)
    if isinstance(value, dt.datetime):
        plain = value.strftime("%Y-%m-%d %H:%M:%S")
        return plain if value.tzinfo is None else plain + value.strftime("%z")
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, list | tuple | dict):
        return json.dumps(_json_value(value), ensure_ascii=False)
    return str(value)


def _float_text(value: float) -> str:
    """Four decimals, trailing zeros dropped; a value they would show as 0 (or -0), such as a
    per-token price, keeps four significant digits instead (4e-05)."""
    if not math.isfinite(value):
        return str(value)
    if value == int(value):
        return f"{value:.0f}"
    if abs(value) < 0.00005:
        return f"{value:.4g}"
    return f"{value:.4f}".rstrip("0").rstrip(".")
