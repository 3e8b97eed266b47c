"""The health/metrics server under abuse, with real sockets on 127.0.0.1: idle floods, oversized
headers and garbage never stop it answering, and a fetch in the same event loop still succeeds."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from priceadvisor.collect.fetch import fetch_one, plan, run_cycle
from priceadvisor.config import load_settings
from priceadvisor.records import RunStatus, utcnow
from priceadvisor.service import web
from priceadvisor.service.daemon import Daemon
from priceadvisor.service.metrics import Freshness, Metrics
from priceadvisor.service.stores import configured_store
from priceadvisor.service.web import MAX_CONNECTIONS, HealthServer
from tests.localserver import local_settings, serving

pytestmark = pytest.mark.anyio


def healthy() -> tuple[bool, dict[str, Any]]:
    return True, {"providers": {}}


@pytest.fixture
async def server() -> AsyncIterator[HealthServer]:
    running = await web.serve("127.0.0.1", 0, web.build_app(web.health_routes(Metrics(), healthy)))
    yield running
    running.close()
    await asyncio.wait_for(running.wait_closed(), 30)


async def get(server: HealthServer, path: str) -> httpx.Response:
    async with httpx.AsyncClient(timeout=30) as client:
        return await client.get(f"http://127.0.0.1:{server.port}{path}")


async def raw(server: HealthServer, data: bytes) -> bytes:
    """Send bytes on a fresh connection; return what the server answers before closing."""
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        writer.write(data)
        await writer.drain()
        return await asyncio.wait_for(reader.read(65536), 30)
    except ConnectionResetError:
        return b""
    finally:
        writer.close()


async def idle_flood(server: HealthServer, count: int) -> list[asyncio.StreamWriter]:
    writers = []
    for _ in range(count):
        _, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writers.append(writer)
    await asyncio.sleep(0)  # let the server accept them
    return writers


async def test_idle_connections_past_the_cap_do_not_lock_out_a_scraper(
    server: HealthServer,
) -> None:
    flood = await idle_flood(server, 3 * MAX_CONNECTIONS)
    try:
        response = await get(server, "/healthz")
        assert response.status_code == 200 and response.json()["status"] == "ok"
        assert (await get(server, "/metrics")).status_code == 200
        assert len(server.server.server_state.connections) <= MAX_CONNECTIONS + 1
    finally:
        for writer in flood:
            writer.close()


async def test_oversized_headers_get_400_and_the_server_keeps_answering(
    server: HealthServer,
) -> None:
    huge = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (100 * 1024) + b"\r\n\r\n"
    answer = await raw(server, huge)
    assert answer == b"" or answer.startswith(b"HTTP/1.1 400")
    assert (await get(server, "/healthz")).status_code == 200


@pytest.mark.parametrize(
    "garbage",
    [
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n",  # a TLS hello
        b"GARBAGE\r\n\r\n",
        b"GET /healthz HTTP/1.1\r\n\r\n",  # HTTP/1.1 without Host
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nNo colon here\r\n\r\n",
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
    ],
)
async def test_malformed_requests_get_400(server: HealthServer, garbage: bytes) -> None:
    assert (await raw(server, garbage)).startswith(b"HTTP/1.1 400")
    assert (await get(server, "/healthz")).status_code == 200


async def test_unknown_paths_and_methods(server: HealthServer) -> None:
    assert (await get(server, "/nope")).status_code == 404
    async with httpx.AsyncClient(timeout=30) as client:
        response = await client.post(f"http://127.0.0.1:{server.port}/metrics", content=b"x")
    assert response.status_code == 405


async def test_a_fetch_succeeds_while_the_server_is_flooded(
    server: HealthServer, db_path: Path
) -> None:
    flood = await idle_flood(server, 3 * MAX_CONNECTIONS)
    abuse = [raw(server, b"GARBAGE\r\n\r\n") for _ in range(20)]
    try:
        with serving("azure") as source:
            settings = local_settings(db_path, source)
            fetch = fetch_one(settings, plan(settings, "azure", False), False, lambda *_: None)
            result, *_ = await asyncio.gather(fetch, *abuse)
        assert result.status is RunStatus.OK and len(result.quotes) > 0
        assert (await get(server, "/healthz")).status_code == 200
    finally:
        for writer in flood:
            writer.close()


def test_metrics_include_process_platform_retries_and_freshness() -> None:
    now = utcnow()
    states = {
        "azure": Freshness(now - dt.timedelta(minutes=5), 3600),
        "oracle": Freshness(now - dt.timedelta(hours=3), 3600),
        "vast": Freshness(None, 3600),
    }
    text = Metrics(lambda: states).exposition()[0].decode()
    for family in ("process_resident_memory_bytes", "python_info", "stamina_retries_total"):
        assert family in text
    assert 'priceadvisor_provider_fresh{provider="azure"} 1.0' in text
    assert 'priceadvisor_provider_fresh{provider="oracle"} 0.0' in text
    assert 'priceadvisor_provider_fresh{provider="vast"} 0.0' in text
    expected = (now - dt.timedelta(minutes=5)).replace(tzinfo=dt.UTC).timestamp()
    line = next(
        x for x in text.splitlines() if x.startswith("priceadvisor_last_success_timestamp_seconds")
    )
    assert 'provider="azure"' in line and float(line.split()[-1]) == pytest.approx(expected)
    assert 'last_success_timestamp_seconds{provider="vast"}' not in text


def test_last_success_is_served_after_a_restart_before_any_fetch(db_path: Path) -> None:
    settings = load_settings(db=db_path)
    [earlier] = run_cycle(
        settings, configured_store(settings), ["azure"], True, lambda *_: None
    )  # an earlier process's
    assert earlier.status is RunStatus.OK
    daemon = Daemon(settings)
    daemon._prepare_database()  # what `run` does at start
    text = daemon.metrics.exposition()[0].decode()
    assert 'priceadvisor_last_success_timestamp_seconds{provider="azure"}' in text
    assert 'priceadvisor_provider_fresh{provider="azure"} 1.0' in text
