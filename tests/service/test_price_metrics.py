"""The price gauges on /metrics, scraped from a real daemon's web app on 127.0.0.1 over a
database built from the recorded responses; and the Grafana dashboard in deploy/ queries only
metric names the exporter has."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from priceadvisor.collect.fetch import run_cycle
from priceadvisor.config import Settings, WorkloadProfile, load_settings
from priceadvisor.records import RunStatus
from priceadvisor.service import web
from priceadvisor.service.daemon import Daemon
from priceadvisor.service.metrics import PRICE_METRICS, Metrics
from priceadvisor.service.stores import configured_store
from priceadvisor.sizing.advisor import store_advice
from priceadvisor.store import connections as store
from priceadvisor.store.pricegauges import PriceGauges

pytestmark = pytest.mark.anyio

DASHBOARD = Path(__file__).parents[2] / "deploy" / "grafana-dashboard.json"
PROFILES = [
    WorkloadProfile(name="tune", task="lora", model="llama-3.1-8b", train_tokens=1e8),
    WorkloadProfile(name="chat", task="serve", model="llama-3.1-8b"),
]


def _settings(db_path: Path, per_provider: bool) -> Settings:
    settings = load_settings(db=db_path)
    daemon = settings.daemon.model_copy(
        update={"metrics_per_provider": per_provider, "health_port": 0, "dashboard": False}
    )
    return settings.model_copy(update={"workloads": PROFILES, "daemon": daemon})


def _build(settings: Settings) -> None:
    runs = run_cycle(settings, configured_store(settings), ["azure", "aws"], True, lambda *_: None)
    assert all(r.status is RunStatus.OK for r in runs)
    with store.writer(settings.db) as con:
        assert store_advice(con, PROFILES) > 0


async def _scrape(daemon: Daemon) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    app = web.build_app(web.health_routes(daemon.metrics, daemon.health))
    server = await web.serve("127.0.0.1", 0, app)
    try:
        async with httpx.AsyncClient(timeout=30) as client:
            response = await client.get(f"http://127.0.0.1:{server.port}/metrics")
    finally:
        server.close()
        await asyncio.wait_for(server.wait_closed(), 30)
    assert response.status_code == 200
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }


def _expected(db_path: Path, sql: str) -> list[tuple[object, ...]]:
    with store.reader(db_path) as con:
        return con.execute(sql).fetchall()


async def test_daemon_serves_cheapest_gpu_hour_and_workload_best_costs(db_path: Path) -> None:
    settings = _settings(db_path, per_provider=True)
    await asyncio.to_thread(_build, settings)
    samples = await _scrape(Daemon(settings))
    assert samples[("priceadvisor_price_metrics_ok", ())] == 1.0
    assert {name for name, _ in samples} >= set(PRICE_METRICS)  # the names the dashboard uses
    cheapest = _expected(
        db_path,
        "SELECT gpu_model, pricing, min(price_gpu_hour_usd) FROM offers WHERE gpu_model IS NOT "
        "NULL AND price_origin = 'published' AND pricing IN ('on_demand', 'spot') "
        "AND flag IS NULL GROUP BY ALL",
    )
    assert len(cheapest) > 3
    for gpu, pricing, usd in cheapest:
        key = (("gpu_model", gpu), ("pricing", pricing))
        assert samples[("priceadvisor_gpu_hour_usd_min", key)] == pytest.approx(usd)
    gauges = {k for k in samples if k[0] == "priceadvisor_gpu_hour_usd_min"}
    assert len(gauges) == len(cheapest)  # nothing else: the bound is models x pricing kinds
    per_provider = _expected(
        db_path,
        "SELECT DISTINCT provider FROM offers WHERE gpu_model IS NOT NULL",
    )
    seen = {
        dict(k[1])["provider"] for k in samples if k[0] == "priceadvisor_provider_gpu_hour_usd_min"
    }
    assert seen == {"aws", "azure"} == {p for (p,) in per_provider}
    [(train_cost,)] = _expected(
        db_path, "SELECT cost_usd FROM advice WHERE rank = 1 AND workload = 'tune'"
    )
    [(per_mtok, monthly)] = _expected(
        db_path, "SELECT usd_per_mtok, monthly_usd FROM advice WHERE rank = 1 AND workload = 'chat'"
    )
    workload = (("workload", "tune"),)
    assert samples[("priceadvisor_workload_best_cost_usd", workload)] == pytest.approx(train_cost)
    chat = (("workload", "chat"),)
    assert samples[("priceadvisor_workload_best_usd_per_mtok", chat)] == pytest.approx(per_mtok)
    assert samples[("priceadvisor_workload_best_monthly_usd", chat)] == pytest.approx(monthly)
    assert ("priceadvisor_workload_best_usd_per_mtok", workload) not in samples  # training only


async def test_per_provider_gauges_are_off_by_default(db_path: Path) -> None:
    settings = _settings(db_path, per_provider=False)
    await asyncio.to_thread(_build, settings)
    samples = await _scrape(Daemon(settings))
    assert any(k[0] == "priceadvisor_gpu_hour_usd_min" for k in samples)
    assert not any(k[0] == "priceadvisor_provider_gpu_hour_usd_min" for k in samples)


def test_a_failed_read_says_so_and_is_retried_at_the_next_scrape() -> None:
    from priceadvisor.store.errors import StoreError

    answers: list[PriceGauges | Exception] = [StoreError("database is locked"), PriceGauges()]

    def read() -> PriceGauges:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    metrics = Metrics(prices=read, prices_ttl=3600)
    assert "priceadvisor_price_metrics_ok 0.0" in metrics.exposition()[0].decode()
    assert "priceadvisor_price_metrics_ok 1.0" in metrics.exposition()[0].decode()
    assert "priceadvisor_price_metrics_ok 1.0" in metrics.exposition()[0].decode()  # cached
    assert answers == []


def test_grafana_dashboard_queries_only_exported_metric_names() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", [])]
    assert len(exprs) >= 3
    queried = {m for expr in exprs for m in re.findall(r"\bpriceadvisor_[a-z_]+", expr)}
    assert queried, "the dashboard queries no priceadvisor metric"
    assert queried <= set(PRICE_METRICS) | {
        "priceadvisor_provider_fresh",
        "priceadvisor_last_success_timestamp_seconds",
    }
    assert {"priceadvisor_gpu_hour_usd_min", "priceadvisor_workload_best_usd_per_mtok"} <= queried
