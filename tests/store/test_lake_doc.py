"""docs/ducklake.md's SQL recipes run as written (placeholders replaced by a real lake): a plain
DuckDB client, with nothing of priceadvisor but the extension files, reads the lake while it has
history, and the time-travel recipes answer with the older price."""

from __future__ import annotations

import datetime as dt
import re
import time
from pathlib import Path

import duckdb
import pytest

from priceadvisor.store import lake
from tests.conftest import ingest_quotes
from tests.store.test_lake_cli import h100

DOC = Path(__file__).resolve().parents[2] / "docs" / "ducklake.md"
DOC_DSN = "host=db.internal dbname=prices user=analyst"
DOC_DATA = "/srv/shared/prices/"
DOC_TIME = "2026-11-20 08:00"
DOC_TIME_UTC = "2026-11-20 08:00:00+00"


def recipes() -> list[str]:
    return re.findall(r"```sql\n(.*?)```", DOC.read_text(), flags=re.S)


def statements(recipe: str) -> list[str]:
    return [s.strip() for s in recipe.split(";") if s.strip()]


def plain_client() -> duckdb.DuckDBPyConnection:
    """A DuckDB as an analyst has it: no priceadvisor code, extensions loaded from files."""
    con = duckdb.connect(
        config={"autoinstall_known_extensions": False, "autoload_known_extensions": False}
    )
    for name in ("ducklake", "postgres_scanner"):
        con.execute(f"LOAD '{lake.extension_file(name)}'")
    return con


@pytest.fixture
def lake_with_a_price_change(pg_dsn: str, tmp_path: Path) -> tuple[lake.Lake, dt.datetime]:
    target = lake.Lake(catalog=f"postgres:{pg_dsn}", data_path=f"{tmp_path / 'data'}/")
    ingest_quotes(target, "azure", h100(98.32))
    time.sleep(0.05)
    between = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    time.sleep(0.05)
    ingest_quotes(target, "azure", h100(80.0))
    return target, between


def _filled(recipe: str, target: lake.Lake, moment: dt.datetime) -> str:
    return (
        recipe.replace(DOC_DSN, target.catalog.removeprefix("postgres:"))
        .replace(DOC_DATA, target.data_path)
        .replace(DOC_TIME_UTC, f"{moment.isoformat(sep=' ')}+00")
    )


def test_the_doc_has_the_recipes() -> None:
    found = recipes()
    assert len(found) == 3
    assert all(DOC_DSN in r for r in found[:2]) and DOC_TIME_UTC in found[1]
    assert DOC_TIME in found[2]


def test_plain_client_recipe(lake_with_a_price_change: tuple[lake.Lake, dt.datetime]) -> None:
    target, moment = lake_with_a_price_change
    con = plain_client()
    *setup, query = statements(_filled(recipes()[0], target, moment))
    for statement in setup:
        con.execute(statement)
    rows = con.execute(query).fetchall()
    assert [(r[0], r[1], r[4]) for r in rows] == [("H100-SXM-80GB", "azure", 10.0)]
    with pytest.raises(duckdb.Error, match=r"read-only|read only"):
        con.execute("DELETE FROM core.fetch_runs")


def test_time_travel_recipe_on_a_lake(
    lake_with_a_price_change: tuple[lake.Lake, dt.datetime],
) -> None:
    target, moment = lake_with_a_price_change
    con = plain_client()
    attach = _filled(statements(recipes()[0])[0], target, moment)
    con.execute(attach)
    listing, attach_then, query = statements(_filled(recipes()[1], target, moment))
    assert len(con.execute(listing).fetchall()) > 2
    con.execute(attach_then)
    assert con.execute(query).fetchall() == [("H100-SXM-80GB", 98.32 / 8)]


def test_time_travel_recipe_on_a_file(tmp_path: Path) -> None:
    path = tmp_path / "prices.duckdb"
    ingest_quotes(path, "azure", h100(98.32))
    time.sleep(0.05)
    moment = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    time.sleep(0.05)
    ingest_quotes(path, "azure", h100(80.0))
    query = recipes()[2].replace(DOC_TIME, moment.isoformat(sep=" "))
    with duckdb.connect(str(path), read_only=True) as con:
        assert con.execute(query).fetchall() == [("H100-SXM-80GB", 98.32 / 8)]
