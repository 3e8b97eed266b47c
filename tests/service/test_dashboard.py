"""The dashboard's pages, downloads and JSON API over HTTP (a real server on 127.0.0.1)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import duckdb
import httpx
import pytest
from pydantic import SecretStr

from priceadvisor.service import web
from priceadvisor.service.dashboard import Dashboard
from priceadvisor.store.handle import Store
from tests.conftest import cli
from tests.service import dashboard_data
from tests.service.browser import ServerThread

TOKEN = "s3cret-token-value"


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return dashboard_data.build(tmp_path_factory.mktemp("web") / "web.duckdb")


@pytest.fixture(scope="module")
def client(database: Path) -> Iterator[httpx.Client]:
    app = web.build_app(Dashboard(Store(database), "test").routes())
    with ServerThread(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        yield http


@pytest.fixture(scope="module")
def guarded(database: Path) -> Iterator[httpx.Client]:
    app = web.build_app(Dashboard(Store(database), "test").routes(), SecretStr(TOKEN))
    with ServerThread(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        yield http


def offers(client: httpx.Client, **params: str | list[str]) -> list[dict[str, object]]:
    response = client.get("/api/offers", params=params)
    assert response.status_code == 200, response.text
    return response.json()["offers"]  # type: ignore[no-any-return]


def test_filters_select_the_matching_offers(client: httpx.Client) -> None:
    assert {o["gpu_model"] for o in offers(client, gpu="H100")} == {"H100-SXM-80GB"}
    assert {o["pricing"] for o in offers(client, pricing="spot")} == {"spot"}
    assert {o["provider"] for o in offers(client, provider=["aws", "vast"])} == {"aws", "vast"}
    assert {o["country"] for o in offers(client, eu="1")} == {"DE", "NL"}
    assert all(o["gpu_memory_gb"] >= 80 for o in offers(client, vram_min="80"))  # type: ignore[operator]
    assert {o["gpu_count"] for o in offers(client, gpus="8")} == {8}
    assert all(o["available"] is not False for o in offers(client, available="1"))
    assert any(o["available"] is False for o in offers(client))


def test_sorting_and_paging(client: httpx.Client) -> None:
    everything = offers(client, sort="hour", per_page="200")
    prices = [o["price_hour_usd"] for o in everything]
    assert prices == sorted(prices)  # type: ignore[type-var]
    first = offers(client, sort="hour", per_page="25")
    second = offers(client, sort="hour", per_page="25", page="2")
    assert first + second == everything[:50]
    total = client.get("/api/offers").json()["total"]
    assert total == len(everything)
    beyond = client.get("/api/offers", params={"page": "99"}).json()
    assert beyond["offers"] == [] and beyond["total"] == total


@pytest.mark.parametrize(
    "query",
    [
        "sort=price_hour_usd;DROP TABLE x",
        "vram_min=lots",
        "pricing=free",
        "per_page=100000",
        "page=1e309",
        "page=nan",
        "page=-inf",
        "page=1e300",
        "page=0",
        "page=-1",
        "page=2.5",
        "vram_min=nan",
        "gpus=inf",
    ],
)
def test_bad_query_values_are_400_with_a_reason(client: httpx.Client, query: str) -> None:
    response = client.get(f"/api/offers?{query}")
    assert response.status_code == 400
    assert response.json()["error"]


def test_cheapest_per_model_names_provider_and_region(client: httpx.Client) -> None:
    cheapest = client.get("/api/cheapest").json()["cheapest"]
    h100 = next(row for row in cheapest if row["gpu_model"] == "H100-SXM-80GB")
    assert (h100["provider"], h100["region"], h100["pricing"]) == ("vast", "US", "spot")
    per_gpu = [row["price_gpu_hour_usd"] for row in cheapest]
    assert per_gpu == sorted(per_gpu)


def test_downloads_hold_the_page_shown(client: httpx.Client, tmp_path: Path) -> None:
    query = "gpu=H100&sort=hour&per_page=25"
    shown = offers(client, gpu="H100", sort="hour", per_page="25")
    as_json = client.get(f"/prices.json?{query}").json()
    assert as_json == shown
    parquet = client.get(f"/prices.parquet?{query}")
    assert parquet.headers["content-disposition"] == 'attachment; filename="offers.parquet"'
    target = tmp_path / "offers.parquet"
    target.write_bytes(parquet.content)
    rows = duckdb.sql(
        f"SELECT provider, instance_type, price_hour_usd FROM read_parquet('{target}')"
    ).fetchall()
    assert rows == [(o["provider"], o["instance_type"], o["price_hour_usd"]) for o in shown]
    csv_text = client.get(f"/prices.csv?{query}").text
    assert len(csv_text.strip().splitlines()) == len(shown) + 1


def test_gpu_api_has_specs_history_and_offers(client: httpx.Client) -> None:
    body = client.get("/api/gpus/H100-SXM-80GB").json()
    assert body["specs"]["memory_gb"] == 80
    series = {(r["provider"], r["pricing"]) for r in body["daily_cheapest"]}
    assert ("aws", "spot") in series and ("aws", "on_demand") in series
    aws = [
        r["usd"]
        for r in body["daily_cheapest"]
        if (r["provider"], r["pricing"]) == ("aws", "on_demand")
    ]
    assert max(aws) == pytest.approx(min(aws) * 1.2, rel=1e-3)  # the older, dearer interval
    assert client.get("/api/gpus/NOT-A-GPU").status_code == 404


def test_pages_escape_provider_strings_and_send_a_strict_csp(client: httpx.Client) -> None:
    for path in ("/?provider=lambda", "/workloads", "/alerts"):
        response = client.get(path)
        assert response.status_code == 200
        assert "<script>document.title" not in response.text
        assert "&lt;script&gt;" in response.text
        csp = response.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp


def test_pages_and_api_respond(client: httpx.Client) -> None:
    for path in ("/workloads", "/providers", "/alerts", "/api/workloads", "/api/providers"):
        assert client.get(path).status_code == 200, path
    alerts = client.get("/api/alerts").json()
    assert alerts["alerts"][0]["firing"] is True
    assert alerts["silences"][0]["comment"] == "maintenance"
    providers = {row["provider"]: row for row in client.get("/api/providers").json()["providers"]}
    assert providers["aws"]["offers"] == len(dashboard_data.OFFERS["aws"])
    # one of AWS's five offers is listed as not rentable; the other four say nothing
    assert (providers["aws"]["not_rentable"], providers["aws"]["availability_unknown"]) == (1, 4)
    page = client.get("/providers").text
    assert "Listed, not rentable" in page and "1/5 (20 %)" in page
    assert 'data-label="Listed, not rentable">unknown</td>' in page  # azure's source says nothing


def test_openapi_describes_every_api_route(client: httpx.Client) -> None:
    spec = client.get("/api/openapi.json").json()
    assert spec["openapi"].startswith("3.")
    for path in spec["paths"]:
        concrete = path.replace("{model}", "H100-SXM-80GB")
        assert client.get(concrete).status_code == 200, path


def test_token_guards_pages_and_api_but_not_probes(guarded: httpx.Client) -> None:
    assert guarded.get("/api/offers").status_code == 401
    assert guarded.get("/", headers={"accept": "text/html"}).status_code == 401
    assert guarded.get("/api/offers", headers={"authorization": "Bearer wrong"}).status_code == 401
    ok = guarded.get("/api/offers", headers={"authorization": f"Bearer {TOKEN}"})
    assert ok.status_code == 200
    assert guarded.get("/static/style.css").status_code == 200


def test_login_form_sets_the_cookie(database: Path) -> None:
    app = web.build_app(Dashboard(Store(database), "test").routes(), SecretStr(TOKEN))
    with ServerThread(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        wrong = http.post("/login", data={"token": "nope"})
        assert wrong.status_code == 303 and "failed" in wrong.headers["location"]
        right = http.post("/login", data={"token": TOKEN})
        assert right.status_code == 303
        assert "httponly" in right.headers["set-cookie"].lower()
        assert http.get("/api/offers").status_code == 200
        assert TOKEN not in http.get("/").text


def test_serve_refuses_a_missing_database(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = cli(capsys, "--db", str(tmp_path / "none.duckdb"), "serve", "--port", "0")
    assert code == 1
    assert "no database" in err and "Traceback" not in err


def serve_and_query(database: Path, *options: str) -> list[str]:
    """`serve` in a real process: the stderr lines up to the dashboard's address, after an API
    call through that address and a Ctrl-C that stops it cleanly."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from priceadvisor.cli.app import main; main()",
            "--db",
            str(database),
            "serve",
            "--port",
            "0",
            *options,
        ],
        stderr=subprocess.PIPE,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "PRICEADVISOR_WEB_TOKEN"},
    )
    try:
        assert proc.stderr is not None
        lines = [""]
        while "dashboard on " not in lines[-1]:
            lines.append(proc.stderr.readline())
            assert lines[-1] or proc.poll() is None, f"serve exited: {proc.stderr.read()}"
        url = lines[-1].split("dashboard on ")[1].split()[0]
        response = httpx.get(url + "api/offers?provider=aws", timeout=30)
        assert response.status_code == 200 and response.json()["total"] == 5
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()
    return [line for line in lines if line]


def test_serve_command_serves_until_interrupted(database: Path) -> None:
    lines = serve_and_query(database)
    assert len(lines) == 1 and lines[0].startswith("dashboard on http://127.0.0.1:")


def test_serve_on_every_interface_without_a_token_warns_and_names_a_reachable_url(
    database: Path,
) -> None:
    *before, announced = serve_and_query(database, "--host", "0.0.0.0")
    assert any(
        "warning: the dashboard listens on 0.0.0.0 without a token" in line for line in before
    )
    assert "0.0.0.0" not in announced and "http://127.0.0.1:" in announced


@pytest.mark.parametrize(
    ("host", "exposed"),
    [
        ("127.0.0.1", False),
        ("::1", False),
        ("localhost", False),
        ("0.0.0.0", True),
        ("::", True),
        ("192.0.2.7", True),
        ("dash.example", True),
    ],
)
def test_which_bind_addresses_are_exposed(host: str, exposed: bool) -> None:
    assert web.exposed(host) is exposed
    assert all("0.0.0.0" not in url and "[::]" not in url for url in web.urls(host, 80))


def test_workloads_show_the_list_cost_terms_and_why_a_rank_moved(client: httpx.Client) -> None:
    page = client.get("/workloads").text
    assert 'class="c-list"' in page and "list $0.400/1M output tokens" in page  # vast: terms added
    assert "list $0.390/1M output tokens" in page  # lambda: effective $0.54
    assert "rank moved: list #2 → #1: egress +$0.01 here vs +$0.15 on lambda global" in page
    assert "egress 1000 GB/month × $0.001/GB: +$0.01" in page
    assert "egress &lt;img" in page  # a term carrying a provider string is escaped
    training = page.split("finetune-8b")[1]
    assert "c-list" not in training and "rank moved" not in training  # no terms recorded
