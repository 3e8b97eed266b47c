"""`lake import` and `lake export`: a file's history into a lake and back, losslessly."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb
import pytest

from priceadvisor.notify import Message, alerts, outbox
from priceadvisor.store import connections, lake, lakecopy
from priceadvisor.store.runs import start_run
from tests.conftest import cli, ingest_quotes
from tests.store.test_lake_cli import h100, lake_config

NOW = dt.datetime(2026, 11, 20, 8, 0)


def file_checksums(path: Path) -> lakecopy.Checksums:
    with duckdb.connect(str(path), read_only=True) as con:
        return lakecopy.checksums(con, path.stem)


def sequences(path: Path) -> dict[str, int]:
    with duckdb.connect(str(path), read_only=True) as con:
        return dict(
            con.execute(
                "SELECT schema_name || '.' || sequence_name, coalesce(last_value, 0) "
                "FROM duckdb_sequences()"
            ).fetchall()
        )


@pytest.fixture(params=["duckdb", "postgres"])
def lake_setup(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, lake.Lake]:
    if request.param == "postgres":
        return lake_config(tmp_path, f"postgres:{request.getfixturevalue('pg_dsn')}")
    return lake_config(tmp_path, str(tmp_path / "catalog.ducklake"))


@pytest.fixture
def history_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> Path:
    """A file with a fetched snapshot, a price change, a silence and a queued notification."""

    path = tmp_path / "history.duckdb"
    code, _, err = cli(
        capsys, "--db", str(path), "fetch", "--offline", "--into-live", "-p", "azure"
    )
    assert code == 0, err
    for price in (98.32, 80.0):
        ingest_quotes(path, "lambda", h100(price))
    with connections.writer(path) as con:
        alerts.silence(con, {"provider": "azure"}, NOW, "maintenance", NOW)
        message = Message(key="k1", subject="s", text="t", html="<p>t</p>", slack=[], images={})
        outbox.enqueue(con, "alert", message, ["email", "slack"])
    return path


def test_round_trip_is_lossless(
    capsys: pytest.CaptureFixture[str],
    history_file: Path,
    lake_setup: tuple[Path, lake.Lake],
    tmp_path: Path,
) -> None:
    config, target = lake_setup
    code, out, err = cli(
        capsys, "--config", str(config), "lake", "import", "--from", str(history_file)
    )
    assert code == 0, err
    assert "fetch_runs" in out
    back = tmp_path / "back.duckdb"
    code, _, err = cli(capsys, "--config", str(config), "lake", "export", "--to", str(back))
    assert code == 0, err

    before, after = file_checksums(history_file), file_checksums(back)
    assert before == after
    assert before["fetch_runs"][0] == 3 and before["notifications"][0] == 2
    assert sum(rows for rows, _ in before.values()) > 500  # the azure snapshot, gpus, regions
    # Ids continue after the copied ones (DuckDB may persist a sequence one ahead, never behind).
    assert all(sequences(back)[k] >= v for k, v in sequences(history_file).items())
    # Ids continue after the imported ones on the lake, as in the file.
    with connections.writer(target) as con:
        assert start_run(con, "azure") == sequences(history_file)["core.fetch_run_ids"] + 1


def test_import_refuses_a_lake_with_history(
    capsys: pytest.CaptureFixture[str], history_file: Path, tmp_path: Path
) -> None:
    config = str(lake_config(tmp_path, str(tmp_path / "catalog.ducklake"))[0])
    assert cli(capsys, "--config", config, "lake", "import", "--from", str(history_file))[0] == 0
    code, _, err = cli(capsys, "--config", config, "lake", "import", "--from", str(history_file))
    assert code == 1 and "already holds history" in err


def test_export_refuses_an_existing_file(
    capsys: pytest.CaptureFixture[str], history_file: Path, tmp_path: Path
) -> None:
    config, _ = lake_config(tmp_path, str(tmp_path / "c.ducklake"))
    code, _, err = cli(capsys, "--config", str(config), "lake", "export", "--to", str(history_file))
    assert code == 1 and "exists: export into a new file" in err


def test_checksums_see_a_changed_row(history_file: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy.duckdb"
    copy.write_bytes(history_file.read_bytes())
    with duckdb.connect(str(copy)) as con:
        con.execute(
            "UPDATE core.fetch_runs SET offers_seen = offers_seen + 1 "
            "WHERE run_id = (SELECT min(run_id) FROM core.fetch_runs)"
        )
    before, after = file_checksums(history_file), file_checksums(copy)
    assert [t for t in before if before[t] != after[t]] == ["fetch_runs"]


def test_lake_commands_need_a_lake(capsys: pytest.CaptureFixture[str], history_file: Path) -> None:
    code, _, err = cli(capsys, "--db", str(history_file), "lake", "export", "--to", "x.duckdb")
    assert code == 2 and "no [lake] section" in err
