"""How `prices` lays out offers: a table that fits an 80-column terminal by default (short
headers, the columns that decide), any columns with --columns, all of them with --wide.

Numbers and GPU models are never cut; only place names shrink (with an ellipsis) when the
terminal is narrow. Machine formats keep the view's column names (see docs/sql.md).

What the table shows (headers, alignment, cell text) is decided here once, for Rich's table and
for the plain one the light start of `prices` draws (cli/plaintable.py).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from priceadvisor.cli.errors import UsageError
from priceadvisor.cli.output import clean
from priceadvisor.store.reads import PRICE_COLUMNS, Table

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rich.console import Console
    from rich.table import Table as RichTable

Kind = Literal["text", "key", "count", "money", "number", "flag"]


class Field(NamedTuple):
    column: str  # the offers view's column
    header: str
    kind: Kind  # text may shrink; everything else is shown whole


FIELDS = {
    "provider": Field("provider", "provider", "text"),
    "region": Field("region", "region", "text"),
    "country": Field("country", "country", "text"),
    "instance": Field("instance_type", "instance", "text"),
    "gpu": Field("gpu_model", "GPU", "key"),
    "n": Field("gpu_count", "n", "count"),
    "memory": Field("gpu_memory_gb", "GB", "number"),
    "pricing": Field("pricing", "pricing", "key"),
    # a commitment's term (pricing `reserved`); its hourly prices are effective over the term
    "term": Field("term_months", "months", "count"),
    "gpu-hour": Field("price_gpu_hour_usd", "$/GPU-h", "money"),
    "hour": Field("price_hour_usd", "$/h", "money"),
    "upfront": Field("upfront_usd", "upfront $", "money"),
    "monthly": Field("monthly_usd", "$/month", "money"),
    "available": Field("available", "avail", "flag"),
    "interruption": Field("interruption_rate", "interrupt", "number"),
    "origin": Field("price_origin", "origin", "key"),  # published, or derived by a rule
    # why the offer guard flagged the offer (store.guard); shown with --include-flagged
    "flag": Field("flag_reason", "flagged", "text"),
}
DEFAULT = ("provider", "region", "gpu", "n", "pricing", "gpu-hour", "hour", "available")
BY_COLUMN = {f.column: name for name, f in FIELDS.items()}
assert tuple(f.column for f in FIELDS.values()) == PRICE_COLUMNS


# The default table of commitment prices: the term beside the pricing kind.
RESERVED = ("provider", "region", "gpu", "n", "term", "gpu-hour", "hour", "available")


def chosen(columns: str | None, wide: bool, pricing: str | None = None) -> tuple[str, ...]:
    """Field names from --columns (names or view column names, comma-separated) or --wide."""
    if columns is None:
        return tuple(FIELDS) if wide else RESERVED if pricing == "reserved" else DEFAULT
    names = [c.strip().lower() for c in columns.split(",") if c.strip()]
    unknown = [n for n in names if n not in FIELDS and n not in BY_COLUMN]
    if unknown or not names:
        raise UsageError(
            f"unknown column {', '.join(unknown) or repr(columns)} (use {', '.join(FIELDS)})"
        )
    return tuple(BY_COLUMN.get(n, n) for n in names)


def view_columns(fields: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(FIELDS[f].column for f in fields)


# What the model column and the per-unit price are headed, by what the shown offers are: a TPU
# or a Trainium chip is an accelerator, never a GPU (catalog kind).
Noun = Literal["GPU", "accelerator", "GPU/accelerator"]
_MODEL_HEADER: dict[Noun, str] = {
    "GPU": "GPU",
    "accelerator": "accelerator",
    "GPU/accelerator": "GPU/accel.",
}
_UNIT_HEADER: dict[Noun, str] = {
    "GPU": "$/GPU-h",
    "accelerator": "$/accel-h",
    "GPU/accelerator": "$/device-h",
}


def noun_for(models: set[str], accelerators: set[str]) -> Noun:
    """GPU, accelerator, or both, for offers of these catalog models."""
    chosen = accelerators & models
    if not chosen:
        return "GPU"
    return "accelerator" if chosen == models else "GPU/accelerator"


def shown_models(table: Table) -> set[str] | None:
    """The catalog models of the rows, or None when the model column is not shown."""
    if "gpu_model" not in table.columns:
        return None
    at = table.columns.index("gpu_model")
    return {str(row[at]) for row in table.rows if row[at] is not None}


def _header(field: Field, noun: Noun) -> str:
    if field.column == "gpu_model":
        return _MODEL_HEADER[noun]
    if field.column == "price_gpu_hour_usd":
        return _UNIT_HEADER[noun]
    return field.header


class Shown(NamedTuple):
    """One column as the table shows it."""

    header: str
    wraps: bool  # place names wrap or shrink with an ellipsis; everything else is shown whole
    right: bool  # numbers are right-aligned


def shown_columns(table: Table, noun: Noun = "GPU") -> list[Shown]:
    fields = [FIELDS[BY_COLUMN[c]] for c in table.columns]
    return [
        Shown(_header(f, noun), f.kind == "text", f.kind not in ("text", "key")) for f in fields
    ]


def shown_cells(table: Table) -> list[list[str]]:
    """The text of every cell. Provider strings are untrusted: control characters removed
    (and never read as Rich markup: see to_rich)."""
    kinds = [FIELDS[BY_COLUMN[c]].kind for c in table.columns]
    return [[clean(_cell(v, k)) for v, k in zip(row, kinds, strict=True)] for row in table.rows]


def to_rich(table: Table, title: str, notes: list[str], noun: Noun = "GPU") -> RichTable:
    from rich import box
    from rich.table import Table as RichTable
    from rich.text import Text

    out = RichTable(
        title=Text(clean(title)),
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, 0),
        header_style="bold",
        caption=Text(clean("\n".join(notes))) if notes else None,
        caption_justify="left",
    )
    for column in shown_columns(table, noun):
        out.add_column(
            # not str: no markup or emoji parsing (nor Rich's emoji table)
            Text(column.header),
            justify="right" if column.right else "left",
            no_wrap=not column.wraps,
            overflow="ellipsis" if column.wraps else "fold",
        )
    for cells in shown_cells(table):
        out.add_row(*(Text(cell) for cell in cells))
    return out


def print_rich(
    console: Console,
    table: Table,
    title: str,
    notes: Sequence[str],
    noun: Noun = "GPU",
    narrows: bool = False,
) -> None:
    """The `prices` table and its notes on a Rich console: what the Typer command prints, and
    the light start where it cannot draw the plain table (a terminal, a narrow table). With
    `narrows` (the default columns), a terminal narrower than the table gets fewer columns."""
    from rich.text import Text

    if narrows:
        table, left_out = fit(table, noun, console.width)
        if left_out:
            notes = [*notes, f"narrow terminal: {', '.join(left_out)} left out (--columns)"]
    console.print(to_rich(table, title, [], noun))
    for note in notes:  # wrapped at the terminal's width, not the table's
        console.print(Text(clean(note)), soft_wrap=False)


# What the default table leaves out first where the terminal is narrower than it: what an
# offer can best be read without (availability, the whole-instance price while the per-GPU
# one stays, the region, the count, ...). Provider, model and per-GPU price always stay.
NARROW_DROPS = ("available", "hour", "region", "term", "n", "pricing")


def fit(table: Table, noun: Noun, width: int) -> tuple[Table, list[str]]:
    """`table` without NARROW_DROPS columns, in that order, until its lines fit `width`
    (the headers of those left out); unchanged where it fits."""
    from rich.cells import cell_len

    shown = shown_columns(table, noun)
    cells = shown_cells(table)
    widths = [
        max([cell_len(c.header), *(cell_len(r[i]) for r in cells)]) for i, c in enumerate(shown)
    ]
    kept = list(range(len(shown)))
    for name in NARROW_DROPS:
        if sum(widths[i] for i in kept) + len(kept) - 1 <= width:
            break
        column = FIELDS[name].column
        if column in table.columns:
            kept.remove(table.columns.index(column))
    left_out = [shown[i].header for i in range(len(shown)) if i not in kept]
    rows = [tuple(row[i] for i in kept) for row in table.rows]
    return Table([table.columns[i] for i in kept], rows, table.total), left_out


def _cell(value: Any, kind: Kind) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return ""
    if kind == "flag":
        return "yes" if value else "no"
    if kind == "count":  # a partial GPU (Azure's NV6ads_A10_v5: 1/6) is no 0
        return f"{value:g}"
    if kind == "money":  # cents for whole dollars, four places below one
        return f"{value:.4f}" if value < 1 else f"{value:.2f}"
    if kind == "number":
        return f"{value:g}"
    return str(value)
