"""Formula injection: provider strings that a spreadsheet would run as formulas reach every CSV
as text. Azure's recorded price pages, with hostile region names in place of real ones, are
fetched and ingested as usual; `prices --format csv`, `sql --format csv` and the dashboard's
/prices.csv then carry each such cell with a leading single quote, and numbers stay numbers.
(`export` writes Parquet only: typed columns, no CSV to neutralise.)"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import httpx
import pytest
import respx

from priceadvisor.collect.fetch import run_cycle
from priceadvisor.config import load_settings
from priceadvisor.records import RunStatus
from priceadvisor.service import web
from priceadvisor.service.dashboard import Dashboard
from priceadvisor.service.stores import configured_store
from priceadvisor.store.handle import Store
from priceadvisor.store.spreadsheet import FORMULA_STARTS
from tests.conftest import azure_pages, cli, serve_azure
from tests.service.browser import ServerThread

# Real region codes replaced by what a compromised or careless source could send.
HOSTILE = {
    "eastus": '=HYPERLINK("http://evil.example/","prices")',
    "swedencentral": "@SUM(1+1)*cmd|' /C calc'!A0",
    "westeurope": "-2+3+cmd|' /C calc'!A0",
    "germanywestcentral": "+1+1",
    "uksouth": "\t=1+1",
}


@pytest.fixture(scope="module")
def hostile_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("hostile") / "prices.duckdb"
    pages = azure_pages()
    for page in pages:
        for item in page["Items"]:
            item["armRegionName"] = HOSTILE.get(item["armRegionName"], item["armRegionName"])
    with respx.mock:
        serve_azure(pages)
        settings = load_settings(db=db)
        [summary] = run_cycle(
            settings, configured_store(settings), ["azure"], False, lambda *_: None
        )
    assert summary.status is RunStatus.OK
    return db


def parsed(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def assert_neutralised(rows: list[dict[str, str]]) -> None:
    cells = [cell for row in rows for cell in row.values()]
    assert not [c for c in cells if c.startswith(FORMULA_STARTS) and not is_number(c)]
    # The terminal console expands a tab to spaces; the dashboard keeps it.
    regions = {re.sub(r"\s+", " ", row["region"]) for row in rows}
    assert {"'" + re.sub(r"\s+", " ", value) for value in HOSTILE.values()} <= regions


def is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def test_prices_csv(capsys: pytest.CaptureFixture[str], hostile_db: Path) -> None:
    code, out, err = cli(capsys, "--db", str(hostile_db), "prices", "--format", "csv")
    assert code == 0, err
    rows = parsed(out)
    assert_neutralised(rows)
    assert all(is_number(row["price_hour_usd"]) for row in rows)


def test_sql_csv_keeps_numbers_and_quotes_formulas(
    capsys: pytest.CaptureFixture[str], hostile_db: Path
) -> None:
    query = (
        "select region, -price_hour_usd as negated, '=1+1' as \"=header\" "
        "from offers where provider = 'azure'"
    )
    code, out, err = cli(capsys, "--db", str(hostile_db), "sql", "--format", "csv", query)
    assert code == 0, err
    assert out.splitlines()[0] == "region,negated,'=header"
    rows = parsed(out)
    assert_neutralised(rows)
    assert all(float(row["negated"]) < 0 for row in rows)  # a number, not quoted
    assert {row["'=header"] for row in rows} == {"'=1+1"}


def test_dashboard_csv_download(hostile_db: Path) -> None:
    app = web.build_app(Dashboard(Store(hostile_db), "test").routes())
    with ServerThread(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        response = http.get("/prices.csv", params={"per_page": "200"})
    assert response.status_code == 200
    rows = parsed(response.text)
    assert_neutralised(rows)
    assert all(is_number(row["price_hour_usd"]) for row in rows)
