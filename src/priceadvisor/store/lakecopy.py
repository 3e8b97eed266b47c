"""Moving a history between a DuckDB file and a lake, both ways, verified row for row.

Both sides are first brought to the current schema (the file by its reader's version check,
the lake or a new file by their writer), then every table of `core` is copied in one
transaction, and the ids continue where they stopped (the file's sequences <-> the lake's
id_counters). Afterwards each table's row count and checksum are compared on both sides; a
difference fails the command, so a copy that returns is lossless.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from priceadvisor.store import connections, errors, lake, transactions

SOURCE = "src"
# Lake-only bookkeeping: stands in for the file's sequences, which are carried separately.
_LAKE_ONLY = {"id_counters"}
Checksums = dict[str, tuple[int, str | None]]


def checksums(con: duckdb.DuckDBPyConnection, catalog: str) -> Checksums:
    """Per table of `catalog`.core: (rows, md5 of the rows in a canonical order)."""
    out: Checksums = {}
    for table in core_tables(con, catalog):
        row = con.execute(
            f"SELECT count(*), md5(string_agg(r::VARCHAR, chr(10) ORDER BY r::VARCHAR)) "
            f"FROM (SELECT t AS r FROM {catalog}.core.{table} AS t)"
        ).fetchone()
        assert row is not None
        out[table] = (int(row[0]), row[1])
    return out


def core_tables(con: duckdb.DuckDBPyConnection, catalog: str) -> list[str]:
    rows = con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = ? AND schema_name = 'core' "
        "ORDER BY table_name",
        [catalog],
    ).fetchall()
    return [name for (name,) in rows if name not in _LAKE_ONLY]


def import_file(source: Path, target: lake.Lake) -> Checksums:
    """Copy the DuckDB file `source` into the empty lake `target`; returns what was copied."""
    with connections.reader(source):
        pass  # the file exists, is priceadvisor's, at the current schema version
    with connections.writer(target) as con:
        _refuse_history(con, lake.ALIAS, target.describe())
        _attach_file(con, source)
        with transactions.atomic(con):
            _copy_tables(con, SOURCE, lake.ALIAS)
            _counters_from_sequences(con)
        return _verified(con, SOURCE, lake.ALIAS)


def export_file(target: lake.Lake, dest: Path) -> Checksums:
    """Copy the lake `target` into the new DuckDB file `dest`; returns what was copied."""
    if dest.exists():
        raise errors.StoreError(f"{dest} exists: export into a new file")
    with connections.reader(target):
        pass  # the lake is priceadvisor's, at the current schema version
    with connections.writer(dest) as con:
        lake.attach(con, target, read_only=True, alias=SOURCE)
        with transactions.atomic(con):
            _copy_tables(con, SOURCE, _file_catalog(con))
            _sequences_from_counters(con)
        return _verified(con, SOURCE, _file_catalog(con))


def _file_catalog(con: duckdb.DuckDBPyConnection) -> str:
    row = con.execute("SELECT current_database()").fetchone()
    assert row is not None
    return str(row[0])


def _refuse_history(con: duckdb.DuckDBPyConnection, catalog: str, name: str) -> None:
    row = con.execute(f"SELECT count(*) FROM {catalog}.core.fetch_runs").fetchone()
    if row and row[0]:
        raise errors.StoreError(f"{name} already holds history: import into an empty lake")


def _attach_file(con: duckdb.DuckDBPyConnection, source: Path) -> None:
    literal = str(source.resolve()).replace("'", "''")
    try:
        con.execute(f"ATTACH '{literal}' AS {SOURCE} (READ_ONLY)")
    except duckdb.Error as exc:
        raise errors.StoreError(f"cannot open {source}: {errors.first_line(exc)}") from None


def _copy_tables(con: duckdb.DuckDBPyConnection, source: str, dest: str) -> None:
    """Every core table of `source` replaces its namesake in `dest` (the fresh side's catalog
    and bookkeeping rows included, so both sides end up identical)."""
    for table in core_tables(con, source):
        con.execute(f"DELETE FROM {dest}.core.{table}")
        con.execute(f"INSERT INTO {dest}.core.{table} BY NAME SELECT * FROM {source}.core.{table}")


def _counters_from_sequences(con: duckdb.DuckDBPyConnection) -> None:
    """The lake's counters continue after the ids the file handed out."""
    for name, next_id in _file_sequences(con, SOURCE):
        con.execute("UPDATE lake.core.id_counters SET next_id = ? WHERE name = ?", [next_id, name])


def _file_sequences(con: duckdb.DuckDBPyConnection, catalog: str) -> list[tuple[str, int]]:
    """(schema.name, next value) of each sequence in the file `catalog`."""
    rows = con.execute(
        "SELECT schema_name || '.' || sequence_name, coalesce(last_value + 1, start_value) "
        "FROM duckdb_sequences() WHERE database_name = ?",
        [catalog],
    ).fetchall()
    return [(str(name), int(value)) for name, value in rows]


def _sequences_from_counters(con: duckdb.DuckDBPyConnection) -> None:
    """DuckDB cannot restart a sequence that a column's default uses: draw it forward to the
    lake's counter instead (one nextval per id the lake handed out)."""
    counters = dict(con.execute(f"SELECT name, next_id FROM {SOURCE}.core.id_counters").fetchall())
    for name, next_id in _file_sequences(con, _file_catalog(con)):
        behind = int(counters.get(name, next_id)) - next_id
        if behind > 0:
            con.execute(f"SELECT max(nextval('{name}')) FROM range(?)", [behind])


def _verified(con: duckdb.DuckDBPyConnection, source: str, dest: str) -> Checksums:
    before, after = checksums(con, source), checksums(con, dest)
    if before != after:
        differ = sorted(t for t in before.keys() | after.keys() if before.get(t) != after.get(t))
        raise errors.StoreError(f"the copy differs from its source in: {', '.join(differ)}")
    return after
