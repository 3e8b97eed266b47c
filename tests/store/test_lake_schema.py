"""The migrations and views on a lake: same tables, columns, views and bookkeeping as a file."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from priceadvisor.store import connections, errors, lake, lakesql, schema, transactions
from priceadvisor.store.runs import start_run


@pytest.fixture(params=["duckdb", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> lake.Lake:
    if request.param == "postgres":
        dsn = request.getfixturevalue("pg_dsn")
        return lake.Lake(catalog=f"postgres:{dsn}", data_path=str(tmp_path / "data"))
    return lake.Lake(catalog=str(tmp_path / "c.ducklake"), data_path=str(tmp_path / "data"))


def _columns(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str, str, str]]:
    return con.execute(
        "SELECT schema_name, table_name, column_name, data_type FROM duckdb_columns() "
        "WHERE database_name = current_database() AND schema_name IN ('core', 'main') "
        "AND table_name NOT IN ('id_counters') ORDER BY ALL"
    ).fetchall()


def test_lake_has_the_files_schema(target: lake.Lake, tmp_path: Path) -> None:
    with connections.writer(tmp_path / "prices.duckdb") as con:
        expected = _columns(con)
    with connections.writer(target) as con:
        assert lake.is_lake(con)
        assert _columns(con) == expected
        versions = [
            r[0] for r in con.execute("SELECT version FROM core.schema_migrations").fetchall()
        ]
        assert max(versions) == schema.latest_version()
        assert con.execute("SELECT count(*) FROM main.gpus").fetchone()[0] > 10
    with connections.reader(target) as con:  # read-only, sealed, version-checked
        assert con.execute("SELECT count(*) FROM offers").fetchone() == (0,)


def test_migrations_apply_once(target: lake.Lake) -> None:
    with connections.writer(target) as con:
        assert schema.migrate(con) == []
        assert con.execute("SELECT count(*) FROM core.schema_migrations").fetchone() == (
            len(schema.migrations()),
        )


def test_run_ids_come_from_the_counter(target: lake.Lake) -> None:
    with connections.writer(target) as con:
        ids = [start_run(con, "azure") for _ in range(3)]
        assert ids == [ids[0], ids[0] + 1, ids[0] + 2]
        assert con.execute("SELECT count(DISTINCT run_id) FROM core.fetch_runs").fetchone() == (3,)


def test_replace_rows_keeps_one_row_per_key(target: lake.Lake) -> None:
    with connections.writer(target) as con:
        for rate in (1.1, 1.2):
            con.execute(
                "CREATE OR REPLACE TEMP TABLE _r AS SELECT DATE '2026-01-02' AS rate_date, "
                f"'USD' AS currency, {rate} AS per_eur, 'ecb' AS source, now()::TIMESTAMP AS t"
            )
            transactions.replace_rows(con, "core.fx_rates", ["rate_date", "currency"], "_r")
        assert con.execute("SELECT per_eur FROM core.fx_rates").fetchall() == [(1.2,)]


def test_reader_refuses_a_lake_without_schema(tmp_path: Path) -> None:
    target = lake.Lake(catalog=str(tmp_path / "empty.ducklake"), data_path=str(tmp_path / "d"))
    with lake.connect(target):
        pass
    with (
        pytest.raises(errors.StoreError, match="not a priceadvisor database"),
        connections.reader(target),
    ):
        pass


def test_translation_of_what_ducklake_refuses() -> None:
    sql = (
        "CREATE SEQUENCE core.ids START 5;\n"
        "CREATE TABLE core.x (id BIGINT PRIMARY KEY DEFAULT nextval('core.ids'), -- the id\n"
        "  key VARCHAR NOT NULL UNIQUE, n INTEGER DEFAULT 0, PRIMARY KEY (id, key));\n"
        "CREATE INDEX x_key ON core.x (key);"
    )
    assert lakesql.translate(sql) == (
        "INSERT INTO core.id_counters VALUES ('core.ids', 5);\n"
        "CREATE TABLE core.x (id BIGINT, \n  key VARCHAR NOT NULL, n INTEGER DEFAULT 0);"
    )
