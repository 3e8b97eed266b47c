"""The daemon's web endpoint: /healthz, /metrics and the dashboard (127.0.0.1 by default).

A small Starlette app served by uvicorn inside the daemon's own event loop (or alone, by
`priceadvisor serve`): a maintained HTTP/1.1 parser (h11) answers malformed requests with 400.
The server is bounded so that the HTTP side can never starve the fetch side of
file descriptors or time: at most MAX_CONNECTIONS open connections (past it the oldest connection
that has not sent a request is dropped, so a scraper still gets through a flood of idle
sockets), a request head of at most MAX_REQUEST_HEAD bytes sent within REQUEST_HEAD_TIMEOUT, and
kept-alive connections closed after 5 s idle.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass

import uvicorn
from pydantic import SecretStr
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route
from uvicorn.protocols.http.h11_impl import H11Protocol

from priceadvisor.service.dashboard import BadQuery
from priceadvisor.service.metrics import HealthCheck, Metrics
from priceadvisor.service.webguard import Guard

MAX_CONNECTIONS = 64
REQUEST_HEAD_TIMEOUT = 10.0
MAX_REQUEST_HEAD = 16 * 1024


def health_routes(metrics: Metrics, health: HealthCheck) -> list[BaseRoute]:
    async def healthz(request: Request) -> Response:
        healthy, detail = health()
        body = json.dumps({"status": "ok" if healthy else "unhealthy", **detail}, default=str)
        return Response(body, 200 if healthy else 503, media_type="application/json")

    async def metrics_page(request: Request) -> Response:
        body, content_type = metrics.exposition(request.headers.get("accept"))
        return Response(body, headers={"Content-Type": content_type})

    return [Route("/healthz", healthz), Route("/metrics", metrics_page)]


def build_app(routes: list[BaseRoute], token: SecretStr | None = None) -> Starlette:
    """The app: the given routes behind the security headers and the optional token check."""

    async def bad_query(request: Request, exc: Exception) -> Response:
        return Response(json.dumps({"error": str(exc)}), 400, media_type="application/json")

    return Starlette(
        routes=routes,
        middleware=[Middleware(Guard, token=token)],
        exception_handlers={BadQuery: bad_query},
    )


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


async def serve(host: str, port: int, app: Starlette) -> HealthServer:
    sock = _listen(host, port)
    config = uvicorn.Config(
        app,
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
