"""The one-record reports of `estimate` and `tco` as a person reads them: figures with their
units, a calibrated range said as "likely low–high", and what would fit when nothing does.
JSON keeps every field of the record (these views only add words)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich import box
from rich.table import Table as RichTable
from rich.text import Text

from priceadvisor.cli.advice import aged, approx, gpus, money
from priceadvisor.cli.output import clean
from priceadvisor.sizing.alternatives import Alternative

# The estimates a regime's range applies to, with their units.
RANGED = {"hours": "h", "tokens_per_s": "tok/s", "ttft_ms": "ms", "tpot_ms": "ms"}


def bounds(value: float, uncertainty: float) -> tuple[float, float]:
    """The calibrated range: the truth within a factor (1 + uncertainty) either way."""
    return value / (1 + uncertainty), value * (1 + uncertainty)


def likely(record: dict[str, Any]) -> dict[str, list[float]]:
    """Each ranged estimate's likely bounds (for JSON: `likely`)."""
    spread = float(record["uncertainty"])
    return {
        key: [round(b, 3) for b in bounds(float(record[key]), spread)]
        for key in RANGED
        if record.get(key) is not None
    }


def figure(value: float) -> str:
    """Three significant figures, thousands grouped."""
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def ranged(value: float, uncertainty: float, unit: str) -> str:
    low, high = bounds(value, uncertainty)
    return f"{figure(value)} {unit}, likely {approx(low)}–{approx(high)} {unit}"


def estimate_view(record: dict[str, Any], alternatives: Sequence[Alternative]) -> RichTable:
    """Field and value, in the record's order, the empty ones left out; ranged figures, the
    fit and the range in words."""
    spread = float(record["uncertainty"])
    rows = []
    for key, value in record.items():
        if key == "likely":
            continue
        if key in RANGED and value is not None:
            text = ranged(float(value), spread, RANGED[key])
        elif key == "fits":
            text = _fit(record)
        elif key == "would_fit":
            text = _would_fit(record, alternatives)
        elif key == "uncertainty":
            text = f"×/÷ {1 + spread:.2f}: the {record['regime']} regime's calibrated range"
        else:
            text = _plain(value)
        if text:  # what does not apply (TTFT of a training run) is left out
            rows.append(("would fit with" if key == "would_fit" else key, text))
    return two_columns("Estimate", rows)


def _fit(record: dict[str, Any]) -> str:
    need, have = record["memory_needed_gib"], record["memory_available_gib"]
    memory = f"{need:,.1f} GiB needed, {have:,.1f} GiB usable"
    return f"yes ({memory})" if record["fits"] else f"no: {record['binding']} ({memory})"


def _would_fit(record: dict[str, Any], alternatives: Sequence[Alternative]) -> str:
    if record["fits"]:
        return ""
    if not alternatives:
        return (
            "nothing tried fits: more GPUs, a lower precision, LoRA/QLoRA or a GPU with more memory"
        )
    return "; ".join(a.as_option() for a in alternatives)


def _plain(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items())
    if isinstance(value, list):
        return "; ".join(map(str, value))
    return str(value)


def two_columns(title: str, rows: list[tuple[str, str]]) -> RichTable:
    """A report: a name column and a value column that wraps at the terminal's width."""
    out = RichTable(
        title=Text(clean(title)),
        title_justify="left",
        title_style="bold",
        box=box.SIMPLE,
        show_header=False,
        show_edge=False,
        pad_edge=False,
    )
    out.add_column(no_wrap=True)
    out.add_column(overflow="fold")
    for name, value in rows:
        out.add_row(Text(clean(name)), Text(clean(value)))
    return out


def tco_view(record: dict[str, Any]) -> RichTable:
    """Rent vs buy in sentences: owning's costs, then each rental compared and its break-even."""
    years, share = record["years"], record["utilisation"]
    rows = [
        ("GPU", _gpu_line(record)),
        ("purchase", f"${record['purchase_usd']:,.0f} ({record['purchase_source']})"),
        (
            "server share",
            f"+{record['server_share']:.0%} of the GPU's price for the rest of the server",
        ),
        (
            "power",
            f"{record['power_kw'] * 1000:,.0f} W ({_source(record['power_source'], 'TDP')}) × PUE "
            f"{record['pue']:g} × ${record['electricity_usd_kwh']:g}/kWh = "
            f"${money(record['power_gpu_hour_usd'])}/GPU-h",
        ),
        ("colocation", f"${record['colocation_usd_kw_month']:g} per kW-month"),
        (
            "owning",
            f"${money(record['own_gpu_hour_usd'])} per used GPU-hour at {share:.0%} "
            f"utilisation over {years:g} years",
        ),
    ]
    for even in record["break_evens"]:
        rows.append((f"vs {LABELS[even['against']]}", even["summary"]))
    return two_columns("Rent vs buy (per GPU)", rows)


LABELS = {"on_demand": "on-demand", "commitment": "commitment", "spot": "spot"}


def _gpu_line(record: dict[str, Any]) -> str:
    gpus_ = record.get("gpus") or 1
    line = f"{record['gpu_model']} × {gpus_:g}" if gpus_ != 1 else record["gpu_model"]
    return f"{line} (workload {record['workload']})" if record.get("workload") else line


def _source(source: str, what: str = "list price") -> str:
    return f"the GPU catalog's {what}" if source == "catalog" else source


def offer(row: dict[str, Any]) -> str:
    """An offer as `advise` names it, with its price per GPU-hour (spot: with its overhead)."""
    text = (
        f"{row['provider']} · {row['region']}, {gpus(row['gpu_model'], row['gpu_count'])} "
        f"({row['instance_type']}), {row['pricing']}{_term(row)}: "
        f"${money(row['list_usd_per_gpu_hour'])}/GPU-h"
    )
    if row.get("overhead", 1.0) != 1.0:
        text += f" × {row['overhead']:.4g} restart overhead = ${money(row['usd_per_gpu_hour'])}"
    if row.get("interruption_source"):
        text += f" ({_interruptions(row)})"
    return text + (" (stale price)" if row.get("freshness") == "stale" else "")


# Where a spot offer's interruption rate comes from, as `advise` names it (interruption_source).
RATE_SOURCES = {
    "aws-advisor": "AWS Spot Instance Advisor's",
    "measured": "measured from the price history",
    "assumed": "assumed: no usable measurement",
}


def _interruptions(row: dict[str, Any]) -> str:
    source = row["interruption_source"]
    return f"interruption rate {row['interruption_rate']:.1%}/h, {RATE_SOURCES.get(source, source)}"


def _term(row: dict[str, Any]) -> str:
    """A commitment's term, where the offer has one ("reserved for 12 months")."""
    months = row.get("term_months")
    return f" for {months} month{'s' if months != 1 else ''}" if months else ""


NOTHING = {
    "on_demand": "no current on-demand offer stored",
    "commitment": "no commitment price stored",
    "spot": "no current spot offer stored",
}


def _missing(even: dict[str, Any]) -> str:
    """Why no rental of a kind is compared: none stored, or only prices too old to compare."""
    kind, newest = LABELS[even["against"]], even.get("newest_stored")
    if newest is None:
        return NOTHING[even["against"]]
    age = aged(float(newest["age_hours"]))
    if even.get("missing") == "stale":
        return (
            f"only a stale {kind} price stored ({newest['provider']}, {age}): "
            "--include-stale compares it"
        )
    return f"no {kind} price from the last week (newest: {newest['provider']}, {age})"


def break_even(even: dict[str, Any], record: dict[str, Any]) -> str:
    """One break-even in words, naming the offer compared; "never" where owning cannot catch up.
    `record`: the whole rent-vs-buy record (its years, utilisation and owning's costs)."""
    if even.get("offer") is None:
        return _missing(even)
    if even.get("horizon_usd") is not None:
        return f"{_held(even, record)}; against {offer(even['offer'])}"
    return f"{_when(even, record['years'])}; against {offer(even['offer'])}"


def _held(even: dict[str, Any], record: dict[str, Any]) -> str:
    """A commitment against owning over the years: both costs, then who is cheaper at what use."""
    years = record["years"]
    return (
        f"${money(even['horizon_usd'])} over {years:g} years whatever the use "
        f"({_terms(even, years)}, paid whether used or not) against owning's "
        f"${money(record['own_usd'])} at {record['utilisation']:.0%} utilisation: "
        f"{_held_when(even, record)}"
    )


def _terms(even: dict[str, Any], years: float) -> str:
    """How many terms cover the years, and what is paid past them."""
    count, months = even["terms"], even["term_months"]
    text = f"{count} × {months}-month term{'s' if count != 1 else ''}"
    beyond = count * months - years * 12
    if beyond > 1e-6:
        which = "the last " if count > 1 else ""
        text += f", {which}paid in full though it runs {beyond:g} months past the {years:g} years"
    return text


def _held_when(even: dict[str, Any], record: dict[str, Any]) -> str:
    hours, share, years = even["gpu_hours"], even["utilisation"], record["years"]
    if hours is None and even["horizon_usd"] <= record["fixed_usd"]:
        fixed = money(record["fixed_usd"])
        return f"committing is cheaper at any use (owning's fixed costs alone are ${fixed})"
    if hours is None or share >= 1:
        full = record["own_full_use_usd"]
        return f"owning is cheaper at any use (${money(full)} at 100%)"
    return (
        f"owning is cheaper up to {hours:,.0f} GPU-hours ({share:.0%} utilisation over "
        f"{years:g} years), committing beyond"
    )


def _when(even: dict[str, Any], years: float) -> str:
    hours, share = even["gpu_hours"], even["utilisation"]
    if hours is None:
        return "never: power alone costs more per GPU-hour than the rental"
    if share > 1:
        return (
            f"never within {years:g} years: it takes {hours:,.0f} GPU-hours, "
            f"{share:.0%} of the hours in {years:g} years"
        )
    return f"after {hours:,.0f} GPU-hours ({share:.0%} utilisation over {years:g} years)"
