"""A statement's `$name` parameters written into its text as literals, for values this code
makes itself (times, counts, flags, provider ids), never for text from outside.

Why: DuckDB's Python client, binding a parameter (or scanning a registered table), tries to
import pandas and pyarrow to see whether the value is one of theirs; neither is installed
here, and a failed import is not remembered, so every try searches `sys.path` again (~50 µs
each, ~39 per ranking: ~2 ms). A literal is parsed with the statement. Each literal has the
type the bound value had: a naive datetime a TIMESTAMP, an int an INTEGER or BIGINT, a bool
a BOOLEAN, a str a VARCHAR, a list of str a VARCHAR[].
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence

Value = bool | int | str | dt.datetime | Sequence[str]

_PARAMETER = re.compile(r"\$([A-Za-z_]\w*)")


def literal(value: Value) -> str:
    """`value` as a DuckDB literal; TypeError for any type not listed above (a float, a
    datetime with a zone: their literal would not be exactly the bound value)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, dt.datetime) and value.tzinfo is None:
        return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
    if isinstance(value, Sequence) and all(isinstance(item, str) for item in value):
        return f"[{', '.join(literal(item) for item in value)}]::VARCHAR[]"
    raise TypeError(f"no exact literal for {type(value).__name__}")


def inline(sql: str, values: Mapping[str, Value]) -> str:
    """`sql` with each `$name` replaced by the literal of values[name]; KeyError for a name
    without a value (a `$` followed by a name inside a string literal would be one too: none
    of the statements given here has one)."""

    def put(match: re.Match[str]) -> str:
        return literal(values[match.group(1)])

    return _PARAMETER.sub(put, sql)
