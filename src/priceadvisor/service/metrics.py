"""Prometheus metrics and the daemon's /healthz + /metrics endpoint (127.0.0.1 by default).

The endpoint is a small Starlette app served by uvicorn inside the daemon's own event loop: a
maintained HTTP/1.1 parser (h11) answers malformed requests and header blocks over 16 KiB with
400, and the app is the place later pages (a dashboard) join. The server is bounded so that
the HTTP side can never starve the fetch side of file descriptors or time: at most
MAX_CONNECTIONS open connections (past it the oldest connection that has not sent a request is
dropped, so a scraper still gets through a flood of idle sockets), a connection must send its
whole request head within REQUEST_HEAD_TIMEOUT, and kept-alive connections close after 5 s.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import socket
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import uvicorn
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import Collector
from stamina.instrumentation import get_prometheus_counter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from uvicorn.protocols.http.h11_impl import H11Protocol

from priceadvisor.collect.http import install_retry_hooks
from priceadvisor.models import utcnow

MAX_CONNECTIONS = 64
REQUEST_HEAD_TIMEOUT = 10.0
MAX_REQUEST_HEAD = 16 * 1024


@dataclass(frozen=True, slots=True)
class Freshness:
    """A provider's last successful fetch (naive UTC, as stored) and the age that is stale."""

    last_success: dt.datetime | None
    max_age: float

    def fresh(self, now: dt.datetime) -> bool:
        last = self.last_success
        return last is not None and (now - last).total_seconds() <= self.max_age


FreshnessSource = Callable[[], Mapping[str, Freshness]]


class _FreshnessCollector(Collector):
    """Freshness computed at every scrape, from what the daemon knows (loaded from the database
    at start, updated after each run): never a value left over from the last /healthz call."""

    def __init__(self, source: FreshnessSource) -> None:
        self.source = source

    def collect(self) -> Iterator[GaugeMetricFamily]:
        now, states = utcnow(), self.source()
        last = GaugeMetricFamily(
            "priceadvisor_last_success_timestamp_seconds",
            "Unix time of the last ok/partial fetch",
            labels=["provider"],
        )
        fresh = GaugeMetricFamily(
            "priceadvisor_provider_fresh",
            "1 if the provider succeeded within 2x its interval",
            labels=["provider"],
        )
        for provider, state in sorted(states.items()):
            if state.last_success is not None:
                last.add_metric([provider], state.last_success.replace(tzinfo=dt.UTC).timestamp())
            fresh.add_metric([provider], 1.0 if state.fresh(now) else 0.0)
        yield last
        yield fresh


class Metrics:
    def __init__(self, freshness: FreshnessSource | None = None) -> None:
        self.registry = CollectorRegistry()
        self.fetches = Counter(
            "priceadvisor_fetch_runs",
            "Fetch runs by provider and outcome",
            ["provider", "outcome"],
            registry=self.registry,
        )
        self.duration = Histogram(
            "priceadvisor_fetch_duration_seconds",
            "Wall time of one fetch job",
            ["provider"],
            buckets=(0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300),
            registry=self.registry,
        )
        self.offers = Gauge(
            "priceadvisor_offers",
            "Current offers per provider",
            ["provider"],
            registry=self.registry,
        )
        self.notifications = Counter(
            "priceadvisor_notifications",
            "Notifications by outcome",
            ["channel", "outcome"],
            registry=self.registry,
        )
        self._register_standard_collectors()
        if freshness is not None:
            self.registry.register(_FreshnessCollector(freshness))

    def _register_standard_collectors(self) -> None:
        """process_* (memory, CPU, open fds), python_info, python_gc_*, and stamina's own
        stamina_retries_total counter of the HTTP retries."""
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        install_retry_hooks()
        retries = get_prometheus_counter()
        if retries is not None:
            self.registry.register(retries)

    def exposition(self, accept: str | None = None) -> tuple[bytes, str]:
        """The registry in the format the scraper asked for (text or OpenMetrics)."""
        encoder, content_type = choose_encoder(accept or "")
        return encoder(self.registry), content_type


HealthCheck = Callable[[], tuple[bool, dict[str, Any]]]


def build_app(metrics: Metrics, health: HealthCheck) -> Starlette:
    async def healthz(request: Request) -> Response:
        healthy, detail = health()
        body = json.dumps({"status": "ok" if healthy else "unhealthy", **detail}, default=str)
        return Response(body, 200 if healthy else 503, media_type="application/json")

    async def metrics_page(request: Request) -> Response:
        body, content_type = metrics.exposition(request.headers.get("accept"))
        return Response(body, headers={"Content-Type": content_type})

    return Starlette(routes=[Route("/healthz", healthz), Route("/metrics", metrics_page)])


class _BoundedH11(H11Protocol):
    """uvicorn's h11 protocol with a connection cap and a deadline for the request head."""

    opened: float
    _head_deadline: asyncio.TimerHandle
    _head_bytes = 0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.opened = self.loop.time()
        self._head_deadline = self.loop.call_later(REQUEST_HEAD_TIMEOUT, self._drop_if_waiting)
        if len(self.connections) > MAX_CONNECTIONS:
            self._make_room()

    def connection_lost(self, exc: Exception | None) -> None:
        self._head_deadline.cancel()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        """h11 bounds only a head that arrives in pieces; one sent whole is bounded here."""
        if self._waiting():
            self._head_bytes += len(data)
            if self._head_bytes > MAX_REQUEST_HEAD:
                self.send_400_response("Request head too large.")
                return
        super().data_received(data)

    def on_response_complete(self) -> None:
        self._head_bytes = 0
        super().on_response_complete()

    def _waiting(self) -> bool:
        """No request in progress: none sent yet, or the last one answered."""
        return self.cycle is None or self.cycle.response_complete

    def _drop_if_waiting(self) -> None:
        if self.cycle is None:
            self.transport.close()

    def _make_room(self) -> None:
        others = [c for c in self.connections if isinstance(c, _BoundedH11) and c is not self]
        waiting = [c for c in others if c._waiting()]
        victim = min(waiting, key=lambda c: c.opened) if waiting else self
        victim.transport.close()


class _EmbeddedServer(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """The daemon owns SIGTERM/SIGINT; uvicorn must not take them over."""
        yield


@dataclass(slots=True)
class HealthServer:
    server: uvicorn.Server
    task: asyncio.Task[None]
    port: int

    def close(self) -> None:
        """Ask the server to stop; its task ends on its own (the daemon waits for tasks)."""
        self.server.should_exit = True

    async def wait_closed(self) -> None:
        await self.task


async def serve(host: str, port: int, metrics: Metrics, health: HealthCheck) -> HealthServer:
    sock = _listen(host, port)
    config = uvicorn.Config(
        build_app(metrics, health),
        http=_BoundedH11,
        ws="none",
        lifespan="off",
        log_config=None,
        access_log=False,
        h11_max_incomplete_event_size=MAX_REQUEST_HEAD,
        timeout_keep_alive=5,
        timeout_graceful_shutdown=1,
    )
    server = _EmbeddedServer(config)
    task = asyncio.create_task(server.serve(sockets=[sock]), name="health server")
    while not server.started and not task.done():
        await asyncio.sleep(0.01)
    if task.done():
        task.result()  # startup failed: raise its error
    return HealthServer(server, task, sock.getsockname()[1])


def _listen(host: str, port: int) -> socket.socket:
    family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    return socket.create_server((host, port), family=family, backlog=128)
