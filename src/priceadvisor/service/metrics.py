"""Prometheus metrics and the /healthz + /metrics endpoint of the daemon (127.0.0.1 only by
default). A tiny asyncio HTTP server: two GET routes need no web framework."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

log = logging.getLogger(__name__)


class Metrics:
    def __init__(self) -> None:
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
        self.last_success = Gauge(
            "priceadvisor_last_success_timestamp_seconds",
            "Unix time of the last ok/partial fetch",
            ["provider"],
            registry=self.registry,
        )
        self.offers = Gauge(
            "priceadvisor_offers",
            "Current offers per provider",
            ["provider"],
            registry=self.registry,
        )
        self.fresh = Gauge(
            "priceadvisor_provider_fresh",
            "1 if the provider succeeded within 2x its interval",
            ["provider"],
            registry=self.registry,
        )
        self.notifications = Counter(
            "priceadvisor_notifications",
            "Notifications by outcome",
            ["channel", "outcome"],
            registry=self.registry,
        )

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


HealthCheck = Callable[[], tuple[bool, dict[str, Any]]]


async def serve(host: str, port: int, metrics: Metrics, health: HealthCheck) -> asyncio.Server:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=5)
            path = request.split(b" ", 2)[1].decode("latin-1") if b" " in request else "/"
            status, content_type, body = _route(path, metrics, health)
            writer.write(_response(status, content_type, body))
            await writer.drain()
        except (TimeoutError, asyncio.IncompleteReadError, ConnectionError, IndexError):
            pass
        finally:
            writer.close()

    return await asyncio.start_server(handle, host, port)


def _route(path: str, metrics: Metrics, health: HealthCheck) -> tuple[int, str, bytes]:
    if path.startswith("/metrics"):
        return 200, CONTENT_TYPE_LATEST, metrics.exposition()
    if path.startswith("/healthz"):
        healthy, detail = health()
        body = json.dumps({"status": "ok" if healthy else "unhealthy", **detail}, default=str)
        return (200 if healthy else 503), "application/json", body.encode()
    return 404, "text/plain", b"not found\n"


def _response(status: int, content_type: str, body: bytes) -> bytes:
    reason = {200: "OK", 404: "Not Found", 503: "Service Unavailable"}[status]
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode("latin-1") + body
