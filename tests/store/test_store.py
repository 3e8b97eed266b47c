from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from priceadvisor.resources import migrations_dir, views_dir
from priceadvisor.store import connections, errors, schema
from priceadvisor.store.runs import start_run

PUBLIC_VIEWS = {
    "offers",
    "price_history",
    "fetch_runs",
    "gpus",
    "regions",
    "fx_rates",
    "notifications",
}


def test_migrations_apply_once_with_bookkeeping(db_path: Path) -> None:
    with connections.writer(db_path) as con:
        rows = con.execute("SELECT version, name FROM core.schema_migrations").fetchall()
        assert rows == [(v, p.stem) for v, p in schema.migrations()]
        assert schema.migrate(con) == []  # nothing left to apply


def test_every_public_view_exists_and_is_recreated_at_start(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with connections.writer(db_path) as con:
        con.execute("DROP VIEW offers")
    monkeypatch.setattr(connections, "_prepared", set())  # as in a new process
    with connections.writer(db_path) as con:
        names = {
            r[0]
            for r in con.execute(
                "SELECT view_name FROM duckdb_views() WHERE schema_name = 'main'"
            ).fetchall()
        }
    assert names >= PUBLIC_VIEWS
    assert {p.stem for p in views_dir().glob("*.sql")} == names & {
        p.stem for p in views_dir().glob("*.sql")
    }


def test_failing_migration_rolls_back_with_its_bookkeeping(
    db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "migrations"
    folder.mkdir()
    for path in migrations_dir().glob("*.sql"):
        (folder / path.name).write_text(path.read_text())
    (folder / "0999_broken.sql").write_text(
        "CREATE TABLE core.half_done (x INTEGER);\nSELECT * FROM no_such_table;"
    )
    monkeypatch.setattr(schema, "migrations_dir", lambda: folder)
    with (
        pytest.raises(errors.StoreError, match=r"0999_broken\.sql failed"),
        connections.writer(db_path),
    ):
        pass
    con = duckdb.connect(str(db_path))
    versions = [r[0] for r in con.execute("SELECT version FROM core.schema_migrations").fetchall()]
    tables = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()]
    con.close()
    assert 999 not in versions and "half_done" not in tables


def test_badly_named_migration_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "1_x.sql").write_text("SELECT 1")
    monkeypatch.setattr(schema, "migrations_dir", lambda: tmp_path)
    with pytest.raises(errors.StoreError, match=r"not NNNN_name\.sql"):
        schema.migrations()


def test_reader_refuses_missing_and_foreign_files(tmp_path: Path) -> None:
    with (
        pytest.raises(errors.StoreError, match="no database at"),
        connections.reader(tmp_path / "x"),
    ):
        pass
    other = tmp_path / "other.duckdb"
    duckdb.connect(str(other)).close()
    with (
        pytest.raises(errors.StoreError, match="not a priceadvisor database"),
        connections.reader(other),
    ):
        pass


def test_reader_refuses_an_older_schema(db_path: Path) -> None:
    with connections.writer(db_path) as con:
        con.execute("DELETE FROM core.schema_migrations")
        con.execute("INSERT INTO core.schema_migrations VALUES (0, 'old', now())")
    with pytest.raises(errors.StoreError, match="fetch` once"), connections.reader(db_path):
        pass


def test_reader_is_read_only(db_path: Path) -> None:
    with connections.writer(db_path):
        pass
    with connections.reader(db_path) as con, pytest.raises(duckdb.Error):
        con.execute("DELETE FROM core.fetch_runs")


HOLD_LOCK = """
import duckdb, sys, time
con = duckdb.connect(sys.argv[1])
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
con.close()
"""


def hold_lock(db_path: Path, seconds: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(db_path), str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


def stop(proc: subprocess.Popen[str]) -> None:
    proc.wait(timeout=40)
    assert proc.stdout is not None
    proc.stdout.close()


def test_reader_waits_for_a_writer_then_gets_in(db_path: Path) -> None:
    with connections.writer(db_path):
        pass
    proc = hold_lock(db_path, 1.0)
    try:
        with connections.reader(db_path, lock_timeout=15) as con:
            assert con.execute("SELECT count(*) FROM offers").fetchone() == (0,)
    finally:
        stop(proc)


def test_reader_gives_up_with_a_clear_message(db_path: Path) -> None:
    with connections.writer(db_path):
        pass
    proc = hold_lock(db_path, 600)  # held until killed: a reader that waited would hang
    try:
        with (
            pytest.raises(errors.StoreError, match="locked by another process"),
            connections.reader(db_path, lock_timeout=0.5),
        ):
            pass
    finally:
        proc.kill()
        stop(proc)


def test_runs_of_dead_processes_are_marked_abandoned(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    with connections.writer(db_path) as con:
        mine = start_run(con, "azure")
        theirs = start_run(con, "azure")
        con.execute("UPDATE core.fetch_runs SET pid = ? WHERE run_id = ?", [dead.pid, theirs])
    monkeypatch.setattr(connections, "_prepared", set())  # the next process to open it
    with connections.writer(db_path) as con:
        status = dict(con.execute("SELECT run_id, status FROM core.fetch_runs").fetchall())
    assert status == {mine: "running", theirs: "abandoned"}
    assert os.getpid() != dead.pid


def _progress_bar(con: duckdb.DuckDBPyConnection) -> object:
    row = con.execute("SELECT current_setting('enable_progress_bar')").fetchone()
    return row[0] if row else None


def test_no_connection_draws_a_progress_bar_and_readers_stay_sealed(
    db_path: Path, tmp_path: Path
) -> None:
    # DuckDB draws its bar on stdout, piped or not, once a statement runs 2 s: into a CSV
    # the user redirects, or over the daemon's log.
    with connections.writer(db_path) as con:
        assert _progress_bar(con) is False
    for folder in (None, tmp_path):
        with connections.reader(db_path, writable_dir=folder) as con:
            assert _progress_bar(con) is False
            with pytest.raises(duckdb.InvalidInputException, match="locked"):
                con.execute("SET enable_progress_bar = true")
