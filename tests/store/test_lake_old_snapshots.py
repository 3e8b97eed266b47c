"""`prices --as-of` and `history` on a lake whose early snapshots predate migrations that added
columns to the public views (0116's commitment terms, 0118's per-offer billing terms): the
snapshot's schema is history, read with today's columns (NULL where it had none)."""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path

import pytest

from priceadvisor.resources import data_dir
from priceadvisor.store import lake, schema
from tests.conftest import cli
from tests.store.test_lake_cli import lake_config

BEFORE = 115  # the last migration before the columns below were added
# What migrations 0116-0118 added to the tables under the public views.
ADDED = (
    "term_months",
    "upfront_usd",
    "monthly_usd",
    "interval_s",
    "disk_usd_gb_month",
    "egress_usd_gb",
    "rank_reason",
)

# One offer as a version at schema 115 stored it (the NOT NULL columns of that day).
_OLD_OFFER = """
INSERT INTO core.current_offers BY NAME
SELECT 'lambda' AS provider, 'us-east-1' AS region, 'gpu_1x_h100_pcie' AS instance_type,
       'on_demand' AS pricing, 'H100-PCIE-80GB' AS gpu_model, 1.0 AS gpu_count,
       2.49 AS price_hour_usd, 2.49 AS price_gpu_hour_usd, 'USD' AS currency,
       2.49 AS price_hour_original, 'instance' AS price_basis,
       TIMESTAMP '2026-11-01 08:00' AS first_seen, TIMESTAMP '2026-11-01 08:00' AS valid_from,
       TIMESTAMP '2026-11-01 08:00' AS last_seen, 1 AS opened_run, 1 AS last_run
"""


def _old_lake(target: lake.Lake, monkeypatch: pytest.MonkeyPatch) -> None:
    """Migrations up to BEFORE, the views without the lines that name a later column (the
    shape those views had then), and one offer."""
    older = [(v, p) for v, p in schema.migrations() if v <= BEFORE]
    with monkeypatch.context() as patch, lake.connect(target) as con:
        patch.setattr(schema, "migrations", lambda: older)
        schema.migrate(con)
        for view in sorted((data_dir("db") / "views").glob("*.sql")):
            lines = view.read_text(encoding="utf-8").splitlines()
            con.execute("\n".join(ln for ln in lines if not any(c in ln for c in ADDED)))
        con.execute(_OLD_OFFER)
        assert con.execute("SELECT max(version) FROM core.schema_migrations").fetchone() == (
            BEFORE,
        )


@pytest.fixture(params=["duckdb", "postgres"])
def upgraded_lake(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[str], str]:
    """A lake written at schema 115, then upgraded by today's fetch; the CLI arguments and a
    moment between the two."""
    catalog = str(tmp_path / "catalog.ducklake")
    if request.param == "postgres":
        catalog = f"postgres:{request.getfixturevalue('pg_dsn')}"
    config, target = lake_config(tmp_path, catalog)
    _old_lake(target, monkeypatch)
    time.sleep(0.05)
    between = dt.datetime.now(dt.UTC).isoformat()
    time.sleep(0.05)
    return ["--config", str(config)], between


def test_prices_as_of_a_snapshot_before_the_migrations(
    capsys: pytest.CaptureFixture[str], upgraded_lake: tuple[list[str], str]
) -> None:
    args, between = upgraded_lake
    code, _, err = cli(capsys, *args, "fetch", "--offline", "--into-live", "-p", "azure")
    assert code == 0, err
    code, out, err = cli(capsys, *args, "prices", "--format", "json", "--as-of", between)
    assert code == 0, err  # was: "has schema version 115 ... run `priceadvisor fetch`"
    [offer] = json.loads(out)
    assert (offer["provider"], offer["price_hour_usd"]) == ("lambda", 2.49)
    assert all(offer[c] is None for c in ("term_months", "upfront_usd", "monthly_usd"))
    code, out, err = cli(capsys, *args, "prices", "--as-of", between, "--pricing", "reserved")
    assert code == 0, err
    assert "no offers match" in out
    code, out, err = cli(capsys, *args, "prices", "--format", "json")
    assert code == 0, err
    assert {o["provider"] for o in json.loads(out)} == {"lambda", "azure"}


def test_history_lists_intervals_written_before_the_migrations(
    capsys: pytest.CaptureFixture[str], upgraded_lake: tuple[list[str], str]
) -> None:
    args, _ = upgraded_lake
    code, _, err = cli(capsys, *args, "fetch", "--offline", "--into-live", "-p", "azure")
    assert code == 0, err
    code, out, err = cli(capsys, *args, "history", "--format", "json", "-p", "lambda")
    assert code == 0, err
    [interval] = json.loads(out)
    assert (interval["price_hour_usd"], interval["valid_to"]) == (2.49, None)


def test_a_view_missing_columns_or_missing_whole_reads_with_todays_columns() -> None:
    """pad_snapshot_views on any catalog: a view short of columns gets them as NULL, a view
    the snapshot does not have answers no rows; both with today's column names and types."""
    import duckdb

    from priceadvisor.store import asof

    con = duckdb.connect()
    con.execute("CREATE SCHEMA core")
    con.execute("CREATE TABLE core.schema_migrations AS SELECT 100 AS version")
    con.execute("CREATE VIEW offers AS SELECT 'aws' AS provider, 2.5::DOUBLE AS price_hour_usd")
    asof.pad_snapshot_views(con, "memory")
    today = asof._current_view_columns()
    described = con.execute("DESCRIBE offers").fetchall()
    assert [(c[0], c[1]) for c in described] == today["offers"]
    [row] = con.execute("SELECT provider, price_hour_usd, term_months, flag FROM offers").fetchall()
    assert row == ("aws", 2.5, None, None)
    assert con.execute("SELECT count(*) FROM api_prices").fetchone() == (0,)
    assert [c[0] for c in con.execute("DESCRIBE api_prices").fetchall()] == [
        name for name, _ in today["api_prices"]
    ]
