"""Slow and vanishing clients on the web port (real sockets on 127.0.0.1): bodies dripped a byte
at a time can neither fill the connection cap nor hold a connection past the request deadline,
an oversized login form is refused before it is read, and a client that leaves mid-body is a
DEBUG line, not an ERROR traceback. Every probe here is bounded in count and time and stops by
itself."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import httpx
import pytest

from priceadvisor.service import web
from priceadvisor.service.metrics import Metrics
from priceadvisor.service.web import MAX_CONNECTIONS, HealthServer
from tests.service.test_metrics_server import get, healthy

pytestmark = pytest.mark.anyio

SLOW_CLIENTS = 80  # past MAX_CONNECTIONS: the cap alone decides who stays
LOGIN_HEAD = (
    b"POST /login HTTP/1.1\r\nHost: x\r\n"
    b"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\n"
)


@pytest.fixture
async def server() -> AsyncIterator[HealthServer]:
    running = await web.serve("127.0.0.1", 0, web.build_app(web.health_routes(Metrics(), healthy)))
    yield running
    running.close()
    await asyncio.wait_for(running.wait_closed(), 30)


async def drip(server: HealthServer, opened: asyncio.Event, drips: int, every: float) -> bytes:
    """A login form sent one byte every `every` seconds, at most `drips` bytes (fewer than its
    declared length); what the server answered before closing, b"" if nothing."""
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    except OSError:
        opened.set()
        return b""
    try:
        writer.write(LOGIN_HEAD)
        await writer.drain()
        opened.set()
        for _ in range(drips):
            if reader.at_eof():
                break
            writer.write(b"a")
            await writer.drain()
            await asyncio.sleep(every)
        return await asyncio.wait_for(reader.read(65536), 0.1) if reader.at_eof() else b""
    except (OSError, TimeoutError):
        return b""
    finally:
        writer.close()


async def test_slow_bodies_past_the_cap_leave_healthz_and_metrics_answering(
    server: HealthServer,
) -> None:
    assert SLOW_CLIENTS > MAX_CONNECTIONS
    started = [asyncio.Event() for _ in range(SLOW_CLIENTS)]
    slow = [asyncio.create_task(drip(server, e, drips=10, every=0.5)) for e in started]
    try:
        await asyncio.wait_for(asyncio.gather(*(e.wait() for e in started)), 30)
        await asyncio.sleep(0.2)  # every head is in: each connection is mid-body
        response = await get(server, "/healthz")
        assert response.status_code == 200 and response.json()["status"] == "ok"
        assert (await get(server, "/metrics")).status_code == 200
        assert len(server.server.server_state.connections) <= MAX_CONNECTIONS + 1
    finally:
        await asyncio.wait_for(asyncio.gather(*slow), 60)


async def test_a_body_still_arriving_at_the_deadline_is_cut_off(
    server: HealthServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(web, "REQUEST_TIMEOUT", 0.5)
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(LOGIN_HEAD)
    await writer.drain()
    try:
        for _ in range(60):  # at most 30 s of drips: far past the deadline
            writer.write(b"a")
            await writer.drain()
            await asyncio.sleep(0.5)
            if reader.at_eof():
                break
        assert reader.at_eof() or await asyncio.wait_for(reader.read(), 5) == b""
    except ConnectionError:
        pass  # closed by the server while we wrote: the outcome wanted
    finally:
        writer.close()


async def test_a_request_complete_in_time_is_answered_however_slow_the_answer(
    server: HealthServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The deadline is for receiving the request, not for the answer: a fast request whose
    connection outlives the deadline is still answered."""
    monkeypatch.setattr(web, "REQUEST_TIMEOUT", 0.5)
    async with httpx.AsyncClient(timeout=30) as client:
        for _ in range(3):
            response = await client.get(f"http://127.0.0.1:{server.port}/healthz")
            assert response.status_code == 200
            await asyncio.sleep(0.3)


async def test_an_oversized_login_form_is_refused_before_it_is_sent(server: HealthServer) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        writer.write(b"POST /login HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n")
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(65536), 30)
    finally:
        writer.close()
    assert answer.startswith(b"HTTP/1.1 413")


async def test_a_chunked_login_form_is_read_only_up_to_the_cap(server: HealthServer) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    chunk = b"1000\r\n" + b"a" * 0x1000 + b"\r\n"
    try:
        writer.write(b"POST /login HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        writer.write(chunk * 2)  # past the cap, and never finished
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(65536), 30)
    finally:
        writer.close()
    assert answer.startswith(b"HTTP/1.1 413")


async def test_a_client_leaving_mid_body_is_a_debug_line_not_an_error(
    server: HealthServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    _, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(LOGIN_HEAD + b"token=abc")
    await writer.drain()
    await asyncio.sleep(0.2)  # the app is reading the body now
    writer.close()
    for _ in range(300):  # until the server has noticed (at most 30 s)
        if any(r.name == "priceadvisor.service.webguard" for r in caplog.records):
            break
        await asyncio.sleep(0.1)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    [left] = [r for r in caplog.records if r.name == "priceadvisor.service.webguard"]
    assert left.levelno == logging.DEBUG and "left" in left.getMessage()
    assert (await get(server, "/healthz")).status_code == 200
