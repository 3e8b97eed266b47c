"""How the dashboard words its data: column labels with units, and alert labels and values as
sentences. Pages never show an SQL name; a column added to a view later still gets a readable
label from its name's unit suffix (`_usd`, `_gb`, ...) until it has one of its own here.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from priceadvisor.notify.render import money

# Offers, the cheapest-per-model summary, alerts, notifications and silences. Times are UTC.
COLUMNS = {
    "provider": "Provider",
    "region": "Region",
    "zone": "Zone",
    "country": "Country",
    "instance_type": "Instance type",
    "gpu_model": "GPU",
    "gpu_count": "GPUs",
    "gpu_memory_gb": "GPU memory (GB)",
    "pricing": "Pricing",
    "term_months": "Term (months)",
    "price_hour_usd": "$/hour",
    "price_gpu_hour_usd": "$/GPU-hour",
    "available": "In stock",
    "stock": "Stock",
    "flag": "Flagged",
    "flag_reason": "Flag reason",
    "offer_count": "Listings",
    "price_origin": "Price",
    "rule": "Rule",
    "labels": "About",
    "about": "About",
    "firing": "Firing",
    "pending": "Checks held",
    "reference": "Reference",
    "value": "Latest",
    "last_notified_at": "Last notified (UTC)",
    "updated_at": "Updated (UTC)",
    "kind": "Kind",
    "channel": "Channel",
    "key": "Key",
    "created_at": "Created (UTC)",
    "sent_at": "Sent (UTC)",
    "status": "Status",
    "attempts": "Attempts",
    "last_error": "Last error",
    "id": "#",
    "matchers": "Matches",
    "comment": "Comment",
    "expires_at": "Expires (UTC)",
    "active": "Active",
}

# The same columns for an accelerator's rows: a TPU or a Trainium chip is not a GPU.
ACCELERATOR_COLUMNS = {
    "gpu_model": "Accelerator",
    "gpu_count": "Accelerators",
    "gpu_memory_gb": "Accelerator memory (GB)",
    "price_gpu_hour_usd": "$/accelerator-hour",
}

# The GPU catalog's specs (the gpus view).
SPECS = {
    "vendor": "Vendor",
    "family": "Family",
    "variant": "Variant",
    "architecture": "Architecture",
    "memory_gb": "Memory (GB)",
    "memory_type": "Memory type",
    "memory_bandwidth_gbs": "Memory bandwidth (GB/s)",
    "bf16_dense_tflops": "BF16 dense (TFLOPS)",
    "fp16_dense_tflops": "FP16 dense (TFLOPS)",
    "fp8_dense_tflops": "FP8 dense (TFLOPS)",
    "int8_dense_tops": "INT8 dense (TOPS)",
    "fp32_tflops": "FP32 (TFLOPS)",
    "tdp_w": "Power, TDP (W)",
    "interconnect": "Interconnect",
    "nvlink_bandwidth_gbs": "NVLink bandwidth (GB/s)",
    "form_factor": "Form factor",
    "launch_year": "Launch year",
    "approx_list_price_usd": "List price, approx. ($)",
    "source": "Sources",
    "notes": "Notes",
}

# Unit suffixes of column names, for a column with no label of its own yet.
_UNITS = {
    "_usd": "$",
    "_gb": "GB",
    "_gbs": "GB/s",
    "_ms": "ms",
    "_w": "W",
    "_tflops": "TFLOPS",
    "_at": "UTC",
}

# Alert rules (config [[alerts.rules]] kinds) and their label keys, as a person says them.
RULES = {
    "price_drop": "Price drop",
    "cheaper": "Cheaper option",
    "new_offer": "New offer",
    "provider_failing": "Provider failing",
    "available": "Rentable again",
    "api_cheaper": "Cheaper than an API",
}
_LABEL_KEYS = {"gpu_model": "GPU", "pricing": "pricing"}
_PRICINGS = {
    "on_demand": "on-demand",
    "spot": "spot",
    "market": "market average",
    "reserved": "commitment",
    "any": "any",
}


def column(name: str) -> str:
    """A column's label with its unit: "$/GPU-hour", "GPU memory (GB)", "Updated (UTC)"."""
    if name in COLUMNS:
        return COLUMNS[name]
    if name in SPECS:
        return SPECS[name]
    return _from_suffix(name)


def device_column(unit: str) -> Callable[[str], str]:
    """`column`, worded for the page's device: "Accelerators", "$/accelerator-hour"."""
    if unit != "accelerator":
        return column
    return lambda name: ACCELERATOR_COLUMNS.get(name) or column(name)


def _from_suffix(name: str) -> str:
    for suffix, unit in _UNITS.items():
        if name.endswith(suffix):
            return f"{_words(name.removesuffix(suffix))} ({unit})"
    return _words(name)


def _words(name: str) -> str:
    text = name.replace("_", " ").strip()
    return text[:1].upper() + text[1:]


def matchers(raw: str | dict[str, Any] | None) -> str:
    """Alert labels or silence matchers (a JSON object) as "GPU H100-SXM-80GB · pricing any"."""
    values = json.loads(raw) if isinstance(raw, str) else (raw or {})
    if not isinstance(values, dict):
        return str(values)
    parts = [
        f"{_LABEL_KEYS.get(k, k.replace('_', ' '))} {_label_value(k, v)}" for k, v in values.items()
    ]
    return " · ".join(parts) or "everything"


def _label_value(key: str, value: Any) -> str:
    return _PRICINGS.get(str(value), str(value)) if key == "pricing" else str(value)


def share(part: int, whole: int) -> str:
    """`part` of `whole` as a whole percentage that never reads as none or all of it when it
    is neither: 1 of 225 is "<1 %", 224 of 225 ">99 %"."""
    percent = 100 * part / whole
    if 0 < percent < 1:
        return "<1 %"
    if 99 < percent < 100:
        return ">99 %"
    return f"{round(percent)} %"


def alert_amount(rule: str, value: float | None, task: str | None) -> str:
    """An alert's value or reference with its unit: what the rule measures."""
    if value is None:
        return "—"
    if rule == "price_drop":
        return f"{money(value)}/GPU-hour"
    if rule == "cheaper":
        if task is None:  # the workload is no longer ranked: its unit is not known
            return money(value)
        per = "per run" if task not in ("serve", "batch") else "per 1M output tokens"
        return f"{money(value)} {per}"
    return "—"  # new_offer and provider_failing observe a condition, not an amount


def alert_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Alerts page's states in words: rule, what it is about, amounts with units."""
    return [
        {
            "rule": RULES.get(r["rule"], r["rule"]),
            "about": matchers(r["labels"]),
            "firing": r["firing"],
            "pending": r["pending"],
            "reference": alert_amount(r["rule"], r["reference"], r.get("task")),
            "value": alert_amount(r["rule"], r["value"], r.get("task")),
            "last_notified_at": r["last_notified_at"],
            "updated_at": r["updated_at"],
        }
        for r in rows
    ]
