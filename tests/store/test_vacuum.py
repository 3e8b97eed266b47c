"""A writer session may close without merging the row groups of deleted rows (the hourly
ingest); the next writer session's checkpoint merges them, so the space does not pile up."""

from __future__ import annotations

from pathlib import Path

import duckdb

from priceadvisor.store import connections
from priceadvisor.store.runs import start_run

ROWS = 300_000  # three row groups: deleting most of them lets a vacuum merge them into one


def _stored_rows(con: duckdb.DuckDBPyConnection) -> int:
    """Rows the table's storage holds, deleted ones included until a vacuum merges them."""
    row = con.execute(
        "SELECT estimated_size FROM duckdb_tables() WHERE table_name = 'scratch'"
    ).fetchone()
    assert row is not None
    return int(row[0])


def _fill_and_delete(path: Path, vacuum: bool) -> int:
    with connections.writer(path) as con:
        con.execute(f"CREATE TABLE scratch AS SELECT range AS i FROM range({ROWS})")
    with connections.writer(path, vacuum=vacuum) as con:
        con.execute("DELETE FROM scratch WHERE i % 10 < 7")
    with connections.reader(path) as con:
        return _stored_rows(con)


def test_a_session_without_vacuum_leaves_deleted_rows_to_the_next_writer(tmp_path: Path) -> None:
    path = tmp_path / "p.duckdb"
    assert _fill_and_delete(path, vacuum=False) == ROWS
    with connections.writer(path) as con:
        start_run(con, "aws")  # any change: its checkpoint vacuums every table
    with connections.reader(path) as con:
        assert _stored_rows(con) == ROWS * 3 // 10
        assert con.execute("SELECT count(*), min(i) FROM scratch").fetchone() == (90_000, 7)


def test_a_session_with_vacuum_merges_them_itself(tmp_path: Path) -> None:
    assert _fill_and_delete(tmp_path / "p.duckdb", vacuum=True) == ROWS * 3 // 10
