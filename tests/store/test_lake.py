"""DuckLake backend: extensions from the PyPI packages, attaching each catalog kind."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from priceadvisor.store import lake
from priceadvisor.store.errors import StoreError


def duckdb_lake(tmp_path: Path) -> lake.Lake:
    return lake.Lake(catalog=str(tmp_path / "catalog.ducklake"), data_path=str(tmp_path / "data"))


def _roundtrip(target: lake.Lake) -> list[tuple[int, str]]:
    with lake.connect(target) as con:
        con.execute("CREATE TABLE t (id BIGINT, name VARCHAR)")
        con.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    with lake.connect(target, read_only=True) as con:
        assert lake.is_lake(con)
        return con.execute("SELECT * FROM t ORDER BY id").fetchall()


def test_duckdb_catalog_round_trip(tmp_path: Path) -> None:
    assert _roundtrip(duckdb_lake(tmp_path)) == [(1, "a"), (2, "b")]


def test_sqlite_catalog_round_trip(tmp_path: Path) -> None:
    target = lake.Lake(catalog=f"sqlite:{tmp_path / 'c.sqlite'}", data_path=str(tmp_path / "d"))
    assert _roundtrip(target) == [(1, "a"), (2, "b")]


def test_postgres_catalog_round_trip(pg_dsn: str, tmp_path: Path) -> None:
    target = lake.Lake(catalog=f"postgres:{pg_dsn}", data_path=str(tmp_path / "data"))
    assert _roundtrip(target) == [(1, "a"), (2, "b")]


def test_password_never_in_the_error(pg_dsn: str, tmp_path: Path) -> None:
    wrong_port = pg_dsn.replace("port=", "port=1")
    target = lake.Lake(catalog=f"postgres:{wrong_port} password=hunter2", data_path=str(tmp_path))
    with pytest.raises(StoreError) as caught:
        _roundtrip(target)
    assert "hunter2" not in str(caught.value)
    assert "\n" not in str(caught.value)


def test_extensions_load_offline_with_an_empty_home(tmp_path: Path) -> None:
    """No ~/.duckdb extension directory and no network: the packages' files are enough."""
    home = tmp_path / "home"
    home.mkdir()
    script = (
        "from priceadvisor.store import lake\n"
        "import duckdb\n"
        "con = duckdb.connect(config={'autoinstall_known_extensions': False,"
        " 'autoload_known_extensions': False})\n"
        "lake.load_extensions(con, ['ducklake', 'postgres_scanner', 'sqlite_scanner', 'httpfs'])\n"
        "print(sorted(r[0] for r in con.execute("
        "'SELECT extension_name FROM duckdb_extensions() WHERE loaded').fetchall()))\n"
    )
    env = {
        **os.environ,
        "HOME": str(home),
        "http_proxy": "http://127.0.0.1:9",
        "https_proxy": "http://127.0.0.1:9",
    }
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    ).stdout
    for name in ("ducklake", "postgres_scanner", "sqlite_scanner", "httpfs"):
        assert f"'{name}'" in out
    assert not (home / ".duckdb").exists()


def test_s3_credentials_live_in_a_temporary_secret(tmp_path: Path) -> None:
    """The secret is created in the connection's memory, and DuckDB redacts it when listed."""
    import duckdb

    con = duckdb.connect(
        config={"autoinstall_known_extensions": False, "autoload_known_extensions": False}
    )
    lake.load_extensions(con, ["httpfs"])
    s3 = lake.S3(endpoint="127.0.0.1:9", region="r", url_style="path", key_id="id", secret="shh")
    lake._create_s3_secret(con, s3)
    [(name, persistent, shown)] = con.execute(
        "SELECT name, persistent, secret_string FROM duckdb_secrets()"
    ).fetchall()
    assert (name, persistent) == ("priceadvisor_s3", False)
    assert "shh" not in shown and "127.0.0.1:9" in shown


def test_catalog_password_is_used_and_never_shown(pg_server: str, tmp_path: Path) -> None:
    """A catalog that needs a password: the right one attaches, a wrong one is refused, and
    no query can read it back (it is in a temporary secret, not in the attached DSN)."""
    from tests.pg import password_role

    dsn = password_role(pg_server, "lakeowner", "hunter2")
    data = str(tmp_path / "data")
    wrong = lake.Lake(catalog=f"postgres:{dsn}", data_path=data, password="nope")
    with pytest.raises(StoreError, match="password authentication failed") as caught:
        _roundtrip(wrong)
    assert "nope" not in str(caught.value)
    right = lake.Lake(catalog=f"postgres:{dsn}", data_path=data, password="hunter2")
    assert _roundtrip(right) == [(1, "a"), (2, "b")]
    with lake.connect(right, read_only=True) as con:
        shown = con.execute(
            "SELECT string_agg(path, ' ') FROM duckdb_databases() UNION ALL "
            "SELECT string_agg(secret_string, ' ') FROM duckdb_secrets()"
        ).fetchall()
    assert "hunter2" not in str(shown)


def test_a_lake_connection_draws_no_progress_bar(tmp_path: Path) -> None:
    with lake.connect(duckdb_lake(tmp_path)) as con:
        row = con.execute("SELECT current_setting('enable_progress_bar')").fetchone()
    assert row == (False,)
