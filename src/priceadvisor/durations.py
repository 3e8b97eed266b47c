"""Human durations in config and manifests: "90s", "15m", "1h30m", "1d" or plain seconds."""

from __future__ import annotations

import math
import re

_PART = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
# Longer than anything scheduled or silenced, short enough that now + duration is a date.
MAX_SECONDS = 100 * 365 * 86400


def parse_duration(value: object) -> float:
    """Return seconds; raise ValueError with a readable message for anything else."""
    if isinstance(value, bool):
        raise ValueError("expected a duration such as '15m' or '1h', not a boolean")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str):
        seconds = _parse_text(value)
    else:
        raise ValueError(f"expected a duration such as '15m' or '1h', got {type(value).__name__}")
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError("a duration must be positive and finite")
    if seconds > MAX_SECONDS:
        raise ValueError(f"a duration must be at most 100 years ({MAX_SECONDS:.0f} s)")
    return seconds


def _parse_text(text: str) -> float:
    compact = text.strip().lower().replace(" ", "")
    if re.fullmatch(r"\d+(\.\d+)?", compact):
        return float(compact)
    if not compact or _PART.sub("", compact):
        raise ValueError(f"invalid duration {text!r}: use e.g. '90s', '15m', '1h30m', '1d'")
    return sum(float(n) * _UNIT_SECONDS[u] for n, u in _PART.findall(compact))


def format_duration(seconds: float) -> str:
    """Shortest exact spelling of a duration, e.g. 5400 -> '1h30m'."""
    remaining = int(seconds)
    parts = []
    for unit in ("d", "h", "m", "s"):
        size = _UNIT_SECONDS[unit]
        count, remaining = divmod(remaining, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts) or "0s"
