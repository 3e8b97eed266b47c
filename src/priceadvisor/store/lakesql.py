"""The migrations' SQL in DuckLake's dialect, so one set of db/migrations/*.sql builds both.

DuckLake 1.5.5 refuses PRIMARY KEY and UNIQUE constraints, indexes and sequences (it keeps NOT
NULL and literal DEFAULTs). On a lake:
- a constraint or index is dropped: uniqueness is kept by the code that writes (ids from
  `core.id_counters`, keys checked before insert, replace = delete + insert), and queries rely
  on Parquet's min/max statistics instead of an index;
- `CREATE SEQUENCE s START n` becomes the row (s, n) in `core.id_counters`, and a column's
  `DEFAULT nextval('s')` is dropped: `db.next_id` hands out the ids instead.
"""

from __future__ import annotations

import re

# The table that stands in for sequences on a lake: one row per sequence, the next id to hand out.
COUNTERS_DDL = (
    "CREATE TABLE IF NOT EXISTS core.id_counters (name VARCHAR NOT NULL, next_id BIGINT NOT NULL)"
)
_COMMENT = re.compile(r"--[^\n]*")
_SEQUENCE = re.compile(
    r"^CREATE\s+SEQUENCE\s+(?:IF\s+NOT\s+EXISTS\s+)?([\w.]+)(?:\s+START\s+(?:WITH\s+)?(\d+))?",
    re.IGNORECASE,
)
_INDEX = re.compile(r"^CREATE\s+(?:UNIQUE\s+)?INDEX\b", re.IGNORECASE)
_TABLE_KEY = re.compile(r",\s*(?:PRIMARY\s+KEY|UNIQUE)\s*\([^)]*\)", re.IGNORECASE)
_COLUMN_KEY = re.compile(r"\s+(?:PRIMARY\s+KEY|UNIQUE)\b", re.IGNORECASE)
_NEXTVAL_DEFAULT = re.compile(r"\s+DEFAULT\s+nextval\s*\(\s*'[^']*'\s*\)", re.IGNORECASE)


def statements(sql: str) -> list[str]:
    """The statements of a migration, comments removed (migrations keep `--` out of strings)."""
    text = _COMMENT.sub("", sql)
    return [part.strip() for part in text.split(";") if part.strip()]


def translate(sql: str) -> str:
    """`sql` (one migration) with what DuckLake refuses replaced as the module says."""
    out = []
    for statement in statements(sql):
        translated = _statement(statement)
        if translated:
            out.append(translated)
    return ";\n".join(out) + (";" if out else "")


def _statement(statement: str) -> str | None:
    if _INDEX.match(statement):
        return None
    sequence = _SEQUENCE.match(statement)
    if sequence:
        start = int(sequence.group(2) or 1)
        return f"INSERT INTO core.id_counters VALUES ('{sequence.group(1)}', {start})"
    statement = _TABLE_KEY.sub("", statement)
    statement = _NEXTVAL_DEFAULT.sub("", statement)
    return _COLUMN_KEY.sub("", statement)
