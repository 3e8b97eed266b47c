"""Id counters: the next id of a table's rows, and the check that no counter is behind its table.

In a DuckDB file an id comes from a sequence (CREATE SEQUENCE in the migrations). DuckDB logs a
sequence's move in the write-ahead log only as part of an explicit transaction: a `nextval` in
an autocommit statement of its own is lost by a kill -9 before the next checkpoint, while the
row written with that id survives, and the sequence then hands out the same id again (every
later insert fails on the primary key). So `next_id` runs only inside the transaction that
writes the row, and `repair_sequences` (at every writer's start) moves a sequence that is
behind its table back ahead of it. On a lake the counters are rows in core.id_counters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import duckdb

from priceadvisor.store import lake
from priceadvisor.store.errors import StoreError
from priceadvisor.store.transactions import atomic, is_conflict, retry_on

_NEXTVAL = re.compile(r"^nextval\('([a-z_]+)\.([a-z_]+)'\)$")


class _CounterMoved(RuntimeError):
    """Another writer took the id we read: read the counter again."""


def next_id(con: duckdb.DuckDBPyConnection, sequence: str) -> int:
    """The next value of `sequence` (a name from the migrations' CREATE SEQUENCE): the sequence
    itself in a DuckDB file, its row in core.id_counters on a lake. Call it inside the
    transaction that writes the row (see the module's docstring)."""
    if lake.is_lake(con):
        return _take_counter(con, sequence)
    _require_transaction(con, sequence)
    row = con.execute(f"SELECT nextval('{sequence}')").fetchone()
    assert row is not None
    return int(row[0])


def _require_transaction(con: duckdb.DuckDBPyConnection, sequence: str) -> None:
    """DuckDB does not say whether a connection is in a transaction, but an autocommit
    statement runs in a transaction of its own: two in a row see two transaction ids."""
    first, second = (con.execute("SELECT current_transaction_id()").fetchone() for _ in range(2))
    if first != second:
        raise StoreError(
            f"an id of {sequence} was taken outside the transaction that writes its row"
        )


@retry_on(lambda exc: isinstance(exc, _CounterMoved) or is_conflict(exc), 20)
def _take_counter(con: duckdb.DuckDBPyConnection, sequence: str) -> int:
    """Compare and set, so it needs no transaction of its own (and works inside the caller's):
    the id is ours only if the counter still holds it when we move it on. A writer that moved
    it meanwhile either shows in our snapshot (no row updated: try again) or commits
    concurrently (DuckLake fails one of the two commits), so no id is handed out twice."""
    row = con.execute("SELECT next_id FROM core.id_counters WHERE name = ?", [sequence]).fetchone()
    if row is None:
        raise StoreError(f"the lake has no id counter {sequence!r} (an incomplete migration?)")
    moved = con.execute(
        "UPDATE core.id_counters SET next_id = next_id + 1 WHERE name = ? AND next_id = ?",
        [sequence, row[0]],
    ).fetchone()
    if not moved or not moved[0]:
        raise _CounterMoved(sequence)
    return int(row[0])


@dataclass(frozen=True, slots=True)
class Behind:
    """A sequence whose next value is an id its table already holds."""

    sequence: str
    table: str
    next_value: int
    highest: int

    def describe(self) -> str:
        return (
            f"sequence {self.sequence} would hand out {self.next_value}, "
            f"but {self.table} already holds ids up to {self.highest}"
        )


def sequences_behind(con: duckdb.DuckDBPyConnection) -> list[Behind]:
    """Every sequence of a DuckDB file that a column takes its default from, checked against
    the highest id of that column (a read: `doctor` uses it on a read-only connection)."""
    if lake.is_lake(con):
        return []  # a lake's counters are rows of its catalog, committed with the ids' rows
    columns = con.execute(
        "SELECT schema_name, table_name, column_name, column_default FROM duckdb_columns() "
        "WHERE database_name = current_database() AND column_default LIKE 'nextval(%'"
    ).fetchall()
    found = [_behind(con, *column) for column in columns]
    return [b for b in found if b is not None]


def _behind(
    con: duckdb.DuckDBPyConnection, schema: str, table: str, column: str, default: str
) -> Behind | None:
    match = _NEXTVAL.match(default)
    if match is None:
        return None
    top = con.execute(f'SELECT max("{column}") FROM {schema}.{table}').fetchone()
    highest = top[0] if top else None
    following = _next_value(con, match[1], match[2])
    if highest is None or following is None or following > highest:
        return None
    return Behind(f"{match[1]}.{match[2]}", f"{schema}.{table}", following, int(highest))


def _next_value(con: duckdb.DuckDBPyConnection, schema: str, name: str) -> int | None:
    row = con.execute(
        "SELECT coalesce(last_value + increment_by, start_value) FROM duckdb_sequences() "
        "WHERE database_name = current_database() AND schema_name = ? AND sequence_name = ?",
        [schema, name],
    ).fetchone()
    return int(row[0]) if row and row[0] is not None else None


def repair_sequences(con: duckdb.DuckDBPyConnection) -> list[Behind]:
    """Move every sequence that is behind its table past the table's highest id (in one
    transaction, so the move is logged), with a warning for each."""
    behind = sequences_behind(con)
    if not behind:
        return []
    with atomic(con):
        for found in behind:
            steps = found.highest - found.next_value + 1
            con.execute(f"SELECT max(nextval('{found.sequence}')) FROM range({steps})").fetchone()
            # imported by this message only: readers never log (cli/light.py starts without it)
            import logging  # noqa: PLC0415

            logging.getLogger(__name__).warning(
                "%s (a kill -9 before a checkpoint?): moved it past them", found.describe()
            )
    return behind
