"""The dashboard reads a lake through the same code as a file: the dashboard's data imported
into a lake answers every API route and download exactly as the file does."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from priceadvisor.service import web
from priceadvisor.service.dashboard import Dashboard
from priceadvisor.store import connections, lake, lakecopy
from priceadvisor.store.handle import Store
from tests.service import dashboard_data
from tests.service.browser import ServerThread

ROUTES = [
    "/api/offers?per_page=100",
    "/api/offers?gpu=H100&sort=hour&eu=1",
    "/api/cheapest",
    "/api/gpus/H100-SXM-80GB",
    "/prices.json?gpu=H100&sort=hour&per_page=25",
    "/prices.csv?sort=hour",
]


@contextmanager
def serving(where: connections.Target) -> Iterator[httpx.Client]:
    app = web.build_app(Dashboard(Store(where), "test").routes())
    with ServerThread(app) as url, httpx.Client(base_url=url, timeout=60) as http:
        yield http


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, lake.Lake]:
    folder = tmp_path_factory.mktemp("web-lake")
    path = dashboard_data.build(folder / "web.duckdb")
    target = lake.Lake(catalog=str(folder / "c.ducklake"), data_path=f"{folder / 'data'}/")
    lakecopy.import_file(path, target)
    return path, target


def test_every_route_answers_alike(both: tuple[Path, lake.Lake]) -> None:
    path, target = both
    with serving(path) as on_file:
        expected = [on_file.get(route) for route in ROUTES]
    with serving(target) as on_lake:
        got = [on_lake.get(route) for route in ROUTES]
    for route, want, have in zip(ROUTES, expected, got, strict=True):
        assert have.status_code == want.status_code == 200, route
        assert have.content == want.content, route


def test_parquet_download_from_a_lake(both: tuple[Path, lake.Lake]) -> None:
    with serving(both[1]) as on_lake:
        response = on_lake.get("/prices.parquet?gpu=H100")
    assert response.status_code == 200 and response.content.startswith(b"PAR1")


def test_pages_render_from_a_lake_with_the_recorded_marker(both: tuple[Path, lake.Lake]) -> None:
    with serving(both[1]) as on_lake:
        pages = {p: on_lake.get(p) for p in ("/", "/gpu/H100-SXM-80GB", "/workloads", "/alerts")}
    assert {p: r.status_code for p, r in pages.items()} == dict.fromkeys(pages, 200)
    assert 'class="tag recorded"' in pages["/"].text  # the runs' source came along
    assert "no SLA" in pages["/workloads"].text
