"""The CLI on a lake (and the same commands on a file): fetch, the views, `sql`, `prices`,
and `prices --as-of` (a lake's snapshots; a file's price intervals)."""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path

import duckdb
import pytest

from priceadvisor.records import RawQuote
from priceadvisor.service.stores import configured_store
from priceadvisor.store import lake
from tests.conftest import cli, ingest_quotes


def lake_config(tmp_path: Path, catalog: str) -> tuple[Path, lake.Lake]:
    config = tmp_path / "lake.toml"
    data = tmp_path / "lake-data"
    config.write_text(
        f'storage = "ducklake"\n[lake]\ncatalog = "{catalog}"\ndata_path = "{data}"\n'
    )
    return config, lake.Lake(catalog=catalog, data_path=f"{data}/")


@pytest.fixture(params=["duckdb", "postgres"])
def lake_setup(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, lake.Lake]:
    if request.param == "postgres":
        return lake_config(tmp_path, f"postgres:{request.getfixturevalue('pg_dsn')}")
    return lake_config(tmp_path, str(tmp_path / "catalog.ducklake"))


@pytest.fixture(params=["file", "lake"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[list[str], Path | lake.Lake]:
    """CLI arguments selecting the store, and the store for direct ingests."""
    if request.param == "file":
        return ["--db", str(tmp_path / "prices.duckdb")], tmp_path / "prices.duckdb"
    config, target = lake_config(tmp_path, str(tmp_path / "catalog.ducklake"))
    return ["--config", str(config)], target


def h100(price: float) -> list[RawQuote]:
    return [
        RawQuote(
            region="eastus",
            instance_type="Standard_ND96isr_H100_v5",
            pricing="on_demand",
            price=price,
            gpu_name_raw="H100 SXM",
            gpu_count=8.0,
        )
    ]


def test_fetch_then_query_the_views(
    capsys: pytest.CaptureFixture[str], lake_setup: tuple[Path, lake.Lake]
) -> None:
    config = str(lake_setup[0])
    code, _, err = cli(
        capsys, "--config", config, "fetch", "--offline", "--into-live", "-p", "azure"
    )
    assert code == 0, err
    code, out, err = cli(
        capsys,
        "--config",
        config,
        "sql",
        "--format",
        "csv",
        "SELECT (SELECT count(*) FROM offers) > 0, "
        "(SELECT count(*) FROM fetch_runs WHERE status = 'ok'), "
        "(SELECT count(*) FROM price_history) = (SELECT count(*) FROM offers)",
    )
    assert code == 0, err
    assert out.splitlines()[1] == "True,1,True"
    code, out, err = cli(capsys, "--config", config, "prices", "--format", "json")
    assert code == 0, err
    assert {row["provider"] for row in json.loads(out)} == {"azure"}


def test_sql_on_a_lake_is_read_only(
    capsys: pytest.CaptureFixture[str], lake_setup: tuple[Path, lake.Lake]
) -> None:
    config, target = lake_setup
    ingest_quotes(target, "azure", h100(98.32))
    code, _, err = cli(capsys, "--config", str(config), "sql", "DELETE FROM core.fetch_runs")
    assert code != 0
    assert err.count("\n") == 1
    code, out, _ = cli(
        capsys, "--config", str(config), "sql", "--format", "csv", "SELECT count(*) FROM fetch_runs"
    )
    assert (code, out.splitlines()[1]) == (0, "1")


def _offer_prices(capsys: pytest.CaptureFixture[str], args: list[str], *extra: str) -> list[float]:
    code, out, err = cli(capsys, *args, "prices", "--format", "json", *extra)
    assert code == 0, err
    return [row["price_hour_usd"] for row in json.loads(out)]


def test_prices_as_of_on_both_backends(
    capsys: pytest.CaptureFixture[str], backend: tuple[list[str], Path | lake.Lake]
) -> None:
    args, target = backend
    ingest_quotes(target, "azure", h100(98.32))
    time.sleep(0.05)
    between = dt.datetime.now(dt.UTC)
    time.sleep(0.05)
    ingest_quotes(target, "azure", h100(80.0))
    assert _offer_prices(capsys, args) == [80.0]
    assert _offer_prices(capsys, args, "--as-of", between.isoformat()) == [98.32]
    # A naive time is UTC, like every timestamp in the store.
    naive = between.replace(tzinfo=None).isoformat()
    assert _offer_prices(capsys, args, "--as-of", naive) == [98.32]


def test_as_of_before_anything(
    capsys: pytest.CaptureFixture[str], backend: tuple[list[str], Path | lake.Lake]
) -> None:
    args, target = backend
    ingest_quotes(target, "azure", h100(98.32))
    code, out, err = cli(capsys, *args, "prices", "--format", "json", "--as-of", "2001-01-01")
    if isinstance(target, lake.Lake):
        assert code == 1 and "has no snapshot as early as 2001-01-01" in err
    else:
        assert (code, json.loads(out)) == (0, [])


def test_as_of_must_be_a_time(
    capsys: pytest.CaptureFixture[str], backend: tuple[list[str], Path | lake.Lake]
) -> None:
    code, _, err = cli(capsys, *backend[0], "prices", "--as-of", "yesterday")
    assert code == 2 and "--as-of takes an ISO 8601 time" in err


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('storage = "ducklake"\n', 'storage = "ducklake" needs a [lake] section'),
        ('storage = "lake"\n', "storage"),
        (
            'storage = "ducklake"\n[lake]\ncatalog = "postgres:host=x password=hunter2"\n'
            'data_path = "/d"\n',
            "must not hold a password",
        ),
        (
            'storage = "ducklake"\n[lake]\ncatalog = "c.ducklake"\ndata_path = "http://x/d"\n',
            "use a directory or an s3://bucket/prefix/ URL",
        ),
        ('storage = "ducklake"\n[lake]\ncatalog = "postgres:"\ndata_path = "/d"\n', "names no"),
    ],
)
def test_bad_lake_settings_are_one_line_usage_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, toml: str, message: str
) -> None:
    config = tmp_path / "bad.toml"
    config.write_text(toml)
    code, _, err = cli(capsys, "--config", str(config), "prices")
    assert code == 2, err
    assert message in err and "hunter2" not in err
    assert err.strip().count("\n") == 0


def test_secrets_come_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from priceadvisor.config import load_settings

    monkeypatch.setenv("PRICEADVISOR_CATALOG_PASSWORD", "s3cret")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "shh")
    config = tmp_path / "s3.toml"
    config.write_text(
        'storage = "ducklake"\n[lake]\ncatalog = "postgres:host=db dbname=p"\n'
        'data_path = "s3://bucket/prices"\n[lake.s3]\nendpoint = "127.0.0.1:9000"\n'
    )
    target = configured_store(load_settings(config)).where
    assert isinstance(target, lake.Lake)
    assert target.password == "s3cret" and target.s3 is not None
    assert (target.s3.key_id, target.s3.secret, target.data_path) == (
        "key",
        "shh",
        "s3://bucket/prices/",
    )
    assert "s3cret" not in repr(target) and "shh" not in repr(target)
    assert "s3cret" not in target.describe()


def test_doctor_and_advise_on_a_lake(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """(A DuckDB catalog: what differs between catalogs is covered by the tests above.)"""
    from tests.sizing.test_advisor import EXAMPLES

    config, _ = lake_config(tmp_path, str(tmp_path / "catalog.ducklake"))
    config.write_text(config.read_text() + EXAMPLES)
    args = ["--config", str(config)]
    code, _, err = cli(capsys, *args, "fetch", "--offline", "--into-live", "-p", "azure")
    assert code == 0, err
    code, out, err = cli(capsys, *args, "doctor", "--format", "json")
    report = json.loads(out)
    assert report["db_path"].startswith("ducklake:") and report["schema_version"] is not None
    assert "azure: never fetched" not in report["problems"]
    code, out, err = cli(capsys, *args, "advise", "--format", "json", "--workload", "chat-70b")
    assert code == 0, err
    assert {row["provider"] for row in json.loads(out)} == {"azure"}


def test_parquet_export_from_a_lake(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    config, target = lake_config(tmp_path, str(tmp_path / "catalog.ducklake"))
    ingest_quotes(target, "azure", h100(98.32))
    code, _, err = cli(capsys, "--config", str(config), "export", "--out", str(tmp_path / "x"))
    assert code == 0, err
    offers = duckdb.sql(f"SELECT price_hour_usd FROM '{tmp_path / 'x' / 'offers.parquet'}'")
    assert offers.fetchall() == [(98.32,)]
