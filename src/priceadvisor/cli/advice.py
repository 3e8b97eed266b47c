"""How `advise` lays out its ranking for a person: one table per workload, headed by the
workload, that fits an 80-column terminal — rank, provider · region, GPU × count, pricing, the
cost in the workload's unit (per run, or per 1M output tokens and per month), its likely range
and the binding constraint — any columns with --columns, every one with --wide.

Numbers and GPU models are never cut; when the terminal is narrow, place names shrink with an
ellipsis at their end (the provider stays whole, the region is cut) and the binding constraint
wraps. Machine formats keep the advice view's columns (docs/sql.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from itertools import groupby
from typing import Any, Literal

from rich import box
from rich.console import Group
from rich.table import Table as RichTable
from rich.text import Text

from priceadvisor.cli.common import UsageError
from priceadvisor.cli.output import clean
from priceadvisor.store.reads import Table

Row = Mapping[str, Any]
# place: shrinks with an ellipsis at its end (the provider comes first, the region is cut);
# wrap: breaks across lines between words; key and number: always whole.
Kind = Literal["place", "wrap", "key", "number"]


@dataclass(frozen=True, slots=True)
class Field:
    header: str
    kind: Kind
    cell: Callable[[Row], str]


def money(value: float | None) -> str:
    """Dollars as `prices` shows them: cents from one dollar, four places below, whole from a
    thousand (a monthly bill needs no cents)."""
    if value is None or not math.isfinite(value):
        return ""
    if value >= 1000:
        return f"{value:,.0f}"
    return f"{value:.4f}" if value < 1 else f"{value:.2f}"


def approx(value: float) -> str:
    """A bound of a range: two significant figures, as much as a calibrated range is worth."""
    if value >= 100:
        return f"{float(f'{value:.2g}'):,.0f}"
    return f"{value:.2g}"


def likely(low: float | None, high: float | None) -> str:
    if low is None or high is None:
        return ""
    return f"{approx(low)}–{approx(high)}"


def gpus(model: str, count: float) -> str:
    return f"{model} ×{count:g}"


# Marks an effective cost that differs from the list cost as shown (the terms say why).
MOVED = "*"


def _cost(row: Row) -> str:
    shown = money(row["usd_per_mtok"] if row["usd_per_mtok"] is not None else row["cost_usd"])
    return f"{shown}{MOVED}" if _differs(row) else shown


def _differs(row: Row) -> bool:
    listed, effective = row.get("list_cost_usd"), row.get("effective_cost_usd")
    return listed is not None and effective is not None and money(listed) != money(effective)


def _terms(row: Row) -> str:
    return "; ".join(row.get("terms_applied") or [])


def _number(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def _pricing(row: Row) -> str:
    """A stale price (older than twice its provider's fetch interval) says so where it is read."""
    stale = " (stale)" if row.get("freshness") == "stale" else ""
    return f"{row['pricing']}{stale}"


def _text(name: str) -> Callable[[Row], str]:
    return lambda row: "" if row.get(name) is None else str(row[name])


FIELDS: dict[str, Field] = {
    "rank": Field("#", "number", lambda r: str(r["rank"])),
    "where": Field("provider · region", "place", lambda r: f"{r['provider']} · {r['region']}"),
    "provider": Field("provider", "place", _text("provider")),
    "region": Field("region", "place", _text("region")),
    "country": Field("country", "key", _text("country")),
    "instance": Field("instance", "place", _text("instance_type")),
    "gpu": Field("GPU × n", "key", lambda r: gpus(r["gpu_model"], r["gpu_count"])),
    "pricing": Field("pricing", "key", _pricing),
    "hour": Field("$/h", "number", lambda r: money(r["price_hour_usd"])),
    "cost": Field("cost", "number", _cost),
    "list": Field("list", "number", lambda r: money(r.get("list_cost_usd"))),
    "list_rank": Field("list #", "number", _text("list_rank")),
    "monthly": Field("$/mo", "number", lambda r: money(r["monthly_usd"])),
    "hours": Field("hours", "number", lambda r: _number(r["hours"])),
    "tokens": Field("tok/s", "number", lambda r: _number(r["tokens_per_s"])),
    "range": Field("likely", "number", lambda r: likely(r["low"], r["high"])),
    "binding": Field("binding", "wrap", _text("binding")),
    "freshness": Field("fresh", "key", _text("freshness")),
    "age": Field("age h", "number", lambda r: _number(r["age_hours"])),
    "interruption": Field("interruption", "key", _text("interruption_source")),
    "terms": Field("terms applied", "wrap", _terms),
    "why": Field("rank moved by", "wrap", _text("rank_reason")),
}
DEFAULT = ("rank", "where", "gpu", "pricing", "cost", "monthly", "hours", "range", "binding")
WIDE = tuple(name for name in FIELDS if name != "where")  # provider and region apart


def chosen(columns: str | None, wide: bool) -> tuple[str, ...] | None:
    """Field names from --columns (comma-separated), every field with --wide, or None: the
    default columns that hold a value for the workload."""
    if columns is None:
        return WIDE if wide else None
    names = [c.strip().lower() for c in columns.split(",") if c.strip()]
    unknown = [n for n in names if n not in FIELDS]
    if unknown or not names:
        raise UsageError(
            f"unknown column {', '.join(unknown) or repr(columns)} (use {', '.join(FIELDS)})"
        )
    return tuple(names)


def to_rich(
    table: Table,
    fields: tuple[str, ...] | None,
    notes: list[str],
    after: Mapping[str, str] | None = None,
) -> Group:
    """A heading and a table per workload, in the order of the rows; `after`: lines under a
    workload's table (the API comparison, the commitment: never rows of the ranking)."""
    parts: list[Any] = []
    for workload, rows in _groups(table):
        parts.append(Text(clean(_heading(workload, rows)), style="bold"))
        parts.append(_workload_table(rows, fields or _filled(rows)))
        if after and after.get(workload):
            parts.append(Text(clean(after[workload])))
        parts.append(Text(""))
    if any(_differs(row) for _, rows in _groups(table) for row in rows):
        notes = [*notes, f"{MOVED} effective cost differs from the list cost: see --columns terms"]
    parts.extend(Text(clean(note)) for note in notes)
    if not table.rows:
        parts.append(Text("no advice: no current offer fits the workloads' constraints"))
    return Group(*parts)


def _groups(table: Table) -> Iterator[tuple[str, list[Row]]]:
    records = (dict(zip(table.columns, row, strict=True)) for row in table.rows)
    for workload, rows in groupby(records, key=lambda r: str(r["workload"])):
        yield workload, list(rows)


def _filled(rows: list[Row]) -> tuple[str, ...]:
    """The default columns, less those empty for every row (hours when serving, the monthly
    bill when training)."""
    return tuple(n for n in DEFAULT if any(FIELDS[n].cell(r) for r in rows))


def _serving(rows: list[Row]) -> bool:
    return any(r["usd_per_mtok"] is not None for r in rows)


def _heading(workload: str, rows: list[Row]) -> str:
    task = rows[0]["task"]
    if _serving(rows):
        return f"{workload} — {task}, effective USD per 1M output tokens and per month"
    return f"{workload} — {task}, effective USD per run"


def _workload_table(rows: list[Row], fields: tuple[str, ...]) -> RichTable:
    serving = _serving(rows)
    out = RichTable(
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, 0),
        header_style="bold",
    )
    for name in fields:
        field = FIELDS[name]
        header = ("$/Mtok" if serving else "$/run") if name == "cost" else field.header
        shrinks = field.kind in ("place", "wrap")
        out.add_column(
            Text(header),  # never markup: a header is text
            justify="right" if field.kind == "number" else "left",
            no_wrap=not shrinks,
            overflow="ellipsis" if field.kind == "place" else "fold",
        )
    for row in rows:  # provider strings are untrusted: text, never Rich markup
        out.add_row(*(_cell(FIELDS[n], row) for n in fields))
    return out


def _cell(field: Field, row: Row) -> Text:
    """A place stays on one line, cut at its end: the column shrinks, the row does not grow."""
    text = clean(field.cell(row))
    return Text(text, no_wrap=True, overflow="ellipsis") if field.kind == "place" else Text(text)


def commitment_lines(
    table: Table,
    commitments: Mapping[str, Mapping[str, Any] | None],
    gaps: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, str]:
    """Per workload shown: the line under its table about committing to its best GPU model;
    `gaps`: why none was found (sizing.commitment.gaps)."""
    return {
        workload: commitment_line(
            commitments.get(workload), rows[0]["gpu_model"], (gaps or {}).get(workload)
        )
        for workload, rows in _groups(table)
        if rows[0]["rank"] == 1
    }


def rank_change_lines(table: Table) -> dict[str, str]:
    """Per workload shown: a line per row whose rank differs from its rank by list cost, naming
    the term that moved it (the ranking is by effective cost)."""
    lines = {
        workload: "\n".join(
            f"#{r['rank']} {r['provider']} · {r['region']}: {r['rank_reason']}"
            for r in rows
            if r.get("rank_reason")
        )
        for workload, rows in _groups(table)
    }
    return {workload: text for workload, text in lines.items() if text}


def commitment_line(
    found: Mapping[str, Any] | None, model: str, gap: Mapping[str, Any] | None = None
) -> str:
    """ "If you commit for N months": the commitment at the workload's size, in one line; where
    none is found, why (`gap`: only stale ones or ones older than a week fit, or none)."""
    if found is None:
        return _no_commitment(model, gap)
    months = int(found["term_months"])
    run = f", ${money(found['run_usd'])} for the run" if found.get("run_usd") is not None else ""
    return (
        f"if you commit for {months} month{'s' if months != 1 else ''}: "
        f"{found['provider']} · {found['region']}, {found['nodes']} × "
        f"{gpus(found['gpu_model'], found['gpu_count'])} at "
        f"${money(found['price_gpu_hour_usd'])}/GPU-h: ${money(found['usd_per_month'])} a month, "
        f"${money(found['term_usd'])} over the term{run} (paid whether used or not)"
    )


def _no_commitment(model: str, gap: Mapping[str, Any] | None) -> str:
    newest = gap and gap.get("newest_stored")
    if not gap or not newest:
        # true whether none is stored or none is within the workload's places and limits
        return f"if you commit: no stored commitment for {model} fits this workload"
    said = f"{newest['provider']}, {aged(float(newest['age_hours']))}"
    if gap.get("missing") == "stale":
        return (
            f"if you commit: only a stale commitment for {model} fits this workload ({said}):"
            " --include-stale shows it"
        )
    return (
        f"if you commit: no commitment for {model} from the last week fits this workload "
        f"(newest: {said})"
    )


def aged(hours: float) -> str:
    """A price's age in whole hours under two days, else in whole days ("3 days old")."""
    if hours < 48:
        count, unit = round(hours), "hour"
    else:
        count, unit = round(hours / 24), "day"
    return f"{count} {unit}{'s' if count != 1 else ''} old"
