"""Render query results as a rich table, CSV or JSON (stable: a list of objects)."""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import io
import json
import math
from enum import StrEnum
from typing import Any

from rich.console import Console
from rich.table import Table as RichTable

from priceadvisor.store.reads import Table


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
    return json.dumps(records, indent=2, ensure_ascii=False)


def to_csv(table: Table) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(table.columns)
    writer.writerows([[_text(v) for v in row] for row in table.rows])
    return buffer.getvalue()


def to_rich(table: Table, title: str | None = None) -> RichTable:
    out = RichTable(title=title, header_style="bold", show_lines=False)
    for index, column in enumerate(table.columns):
        numeric = _numeric_column([row[index] for row in table.rows])
        out.add_column(column, justify="right" if numeric else "left", no_wrap=numeric)
    for row in table.rows:
        out.add_row(*(_text(v) for v in row))
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
    """DuckDB values as JSON: ISO times, floats for decimals, null for NaN/inf."""
    if isinstance(value, list | tuple):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, float) and not math.isfinite(value):
        return None
    for kind, convert in _JSON_CONVERSIONS:
        if isinstance(value, kind):
            return convert(value)
    return value


_JSON_CONVERSIONS: tuple[tuple[type | tuple[type, ...], Any], ...] = (
    ((dt.datetime, dt.date, dt.time), lambda v: v.isoformat()),
    (decimal.Decimal, float),
    (bytes, lambda v: v.hex()),
)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, float):
        return f"{value:.4f}".rstrip("0").rstrip(".") if value != int(value) else f"{value:.0f}"
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    return str(value)
