from __future__ import annotations

import copy
import itertools
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx
import stamina

from priceadvisor.config import Settings, load_settings
from priceadvisor.resources import recordings_dir
from tests.pg import PostgresUnavailable, create_database, pg_bin, start_postgres
from tests.s3 import S3Server, start_s3

AZURE_URL = "https://prices.azure.com/api/retail/prices"


# Where uv's cache is outside the tests (read before any test moves XDG_CACHE_HOME).
_UV_CACHE = str(
    Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser() / "uv"
)


@pytest.fixture(autouse=True)
def _no_retry_waits() -> Iterator[None]:
    """Retries happen (attempt counts are real) but without sleeping."""
    stamina.set_testing(True, attempts=3)
    yield
    stamina.set_testing(False)


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("PRICEADVISOR_DB", "PRICEADVISOR_CONFIG", "CREDENTIALS_DIRECTORY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)  # no ./priceadvisor.toml from the developer's tree
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    # uv keeps its cache under XDG_CACHE_HOME too: tests that run uv offline read the real one
    monkeypatch.setenv("UV_CACHE_DIR", os.environ.get("UV_CACHE_DIR") or _UV_CACHE)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "prices.duckdb"


@pytest.fixture
def settings(db_path: Path) -> Settings:
    return load_settings(db=db_path)


def azure_pages() -> list[dict[str, Any]]:
    """The three recorded Azure pages, as parsed JSON (fresh copies each call)."""
    folder = recordings_dir() / "azure"
    return [json.loads((folder / f"prices-page{i}.json").read_text()) for i in (1, 2, 3)]


def with_price(
    pages: list[dict[str, Any]], region: str, sku: str, spot: bool, price: float
) -> list[dict[str, Any]]:
    """A copy of the recording with one meter's price changed."""
    changed = copy.deepcopy(pages)
    hits = 0
    for page in changed:
        for item in page["Items"]:
            if (
                item["armRegionName"] == region
                and item["armSkuName"] == sku
                and item["skuName"].endswith(" Spot") == spot
                and item["type"] == "Consumption"
                and not item["productName"].endswith("Win")
                and not item["skuName"].endswith("Low Priority")
            ):
                item["retailPrice"] = item["unitPrice"] = price
                hits += 1
    assert hits == 1, f"expected one meter to change, found {hits}"
    return changed


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def serve_azure(pages: list[Any], base: str = AZURE_URL) -> respx.Route:
    """Mock the Retail Prices API (inside respx.mock): page 1 for the first request, page N+1
    for $skip=N*1000. A page may be an httpx.Response to inject a fault."""

    def answer(request: httpx.Request) -> httpx.Response:
        skip = request.url.params.get("$skip")
        page = pages[int(skip) // 1000 if skip else 0]
        return page if isinstance(page, httpx.Response) else httpx.Response(200, json=page)

    return respx.get(base).mock(side_effect=answer)


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Run the console entry point in-process: (exit code, stdout, stderr)."""
    from priceadvisor.cli.app import main

    with pytest.raises(SystemExit) as done:
        main(list(args))
    captured = capsys.readouterr()
    return int(done.value.code or 0), captured.out, captured.err


def cli_process(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run the console entry point as a real process."""
    return subprocess.run(
        [sys.executable, "-m", "priceadvisor", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def migrated_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty database with the current schema, shared by a module's read-only tests."""
    from priceadvisor.store import connections

    path = tmp_path_factory.mktemp("migrated") / "prices.duckdb"
    with connections.writer(path):
        pass
    return path


def query(db: Path, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
    """Rows of one query on a read-only connection that is closed again at once."""
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def ingest_quotes(
    db: Path, provider: str, quotes: list[Any], status: Any = None, error: str | None = None
) -> Any:
    """One recorded run of `provider` with these quotes, ingested like a fetch."""
    from priceadvisor.manifest import manifest
    from priceadvisor.records import FetchResult, RunStatus, utcnow
    from priceadvisor.store import connections
    from priceadvisor.store.ingest import ingest
    from priceadvisor.store.runs import start_run

    with connections.writer(db) as con:
        run_id = start_run(con, provider)
        result = FetchResult(
            provider, status or RunStatus.OK, quotes, error=error, finished_at=utcnow()
        )
        return ingest(con, run_id, result, manifest(provider))


_database_numbers = itertools.count(1)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    """One PostgreSQL server for the session (Debian's binaries); yields its admin DSN."""
    try:
        pg_bin()
    except PostgresUnavailable as exc:
        # CI installs PostgreSQL (.ci/run): there a missing server is a failure, never a skip.
        if os.environ.get("CI") == "true":
            pytest.fail(f"PostgreSQL not installed on CI: {exc}")
        pytest.skip(f"PostgreSQL not installed: {exc}")
    with start_postgres() as dsn:
        yield dsn


@pytest.fixture
def pg_dsn(pg_server: str) -> str:
    """A fresh, empty database on the session's PostgreSQL server, for one test."""
    return create_database(pg_server, f"test_{next(_database_numbers)}")


_bucket_numbers = itertools.count(1)


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """One S3-compatible server (moto) for the session, on 127.0.0.1."""
    with start_s3() as server:
        yield server


@pytest.fixture
def s3_bucket(s3_server: S3Server) -> str:
    """A fresh, empty bucket for one test; its s3:// URL."""
    return s3_server.create_bucket(f"lake-{next(_bucket_numbers)}")
