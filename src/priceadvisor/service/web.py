"""The daemon's web endpoint: /healthz, /metrics and the dashboard (127.0.0.1 by default).

A small Starlette app served by uvicorn inside the daemon's own event loop (or alone, by
`priceadvisor serve`): a maintained HTTP/1.1 parser (h11) answers malformed requests with 400.
The server is bounded so that the HTTP side can never starve the fetch side of
file descriptors or time, and no client can take the port from a health probe: at most
MAX_CONNECTIONS open connections (past it the connection whose request has been arriving for the
longest is dropped, whether it sent nothing yet or is dripping a body, so a scraper still gets
through a flood of idle or slow sockets), a request head of at most MAX_REQUEST_HEAD bytes, the
whole request (head and body) received within REQUEST_TIMEOUT or the connection is closed, and
kept-alive connections closed after 5 s idle. The only route that reads a body (/login) caps it
before reading (webguard).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass

import uvicorn
from pydantic import SecretStr
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route
from uvicorn.protocols.http.h11_impl import H11Protocol

from priceadvisor.service.metrics import HealthCheck, Metrics
from priceadvisor.service.webguard import Guard
from priceadvisor.service.webreads import BadQuery

MAX_CONNECTIONS = 64
# From a connection's first byte (or the previous answer) to the last byte of its request body.
REQUEST_TIMEOUT = 10.0
MAX_REQUEST_HEAD = 16 * 1024


def health_routes(metrics: Metrics, health: HealthCheck) -> list[BaseRoute]:
    async def healthz(request: Request) -> Response:
        healthy, detail = health()
        body = json.dumps({"status": "ok" if healthy else "unhealthy", **detail}, default=str)
        return Response(body, 200 if healthy else 503, media_type="application/json")

    async def metrics_page(request: Request) -> Response:
        # In a worker thread: the price gauges read the store, which may wait for the writer.
        accept = request.headers.get("accept")
        body, content_type = await run_in_threadpool(metrics.exposition, accept)
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
    """uvicorn's h11 protocol with a connection cap and a deadline for the whole request."""

    # When the request now arriving started to (the connection's opening, or the last answer).
    since: float
    _deadline: asyncio.TimerHandle | None = None
    _head_bytes = 0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._expect_request()
        if len(self._open_peers()) >= MAX_CONNECTIONS:
            self._make_room()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_deadline()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        """h11 bounds only a head that arrives in pieces; one sent whole is bounded here."""
        if self._waiting():
            self._head_bytes += len(data)
            if self._head_bytes > MAX_REQUEST_HEAD:
                self.send_400_response("Request head too large.")
                return
        super().data_received(data)
        if not self._receiving():
            self._stop_deadline()  # all of the request is in: the answer may take its time

    def on_response_complete(self) -> None:
        self._head_bytes = 0
        super().on_response_complete()
        self._expect_request()

    def _expect_request(self) -> None:
        self._stop_deadline()
        self.since = self.loop.time()
        self._deadline = self.loop.call_later(REQUEST_TIMEOUT, self._drop_if_receiving)

    def _stop_deadline(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _waiting(self) -> bool:
        """No request in progress: none sent yet, or the last one answered."""
        return self.cycle is None or self.cycle.response_complete

    def _receiving(self) -> bool:
        """Part of a request is still to come: its head, or the rest of its body."""
        return self._waiting() or self.cycle.more_body

    def _drop_if_receiving(self) -> None:
        if self._receiving():
            self.transport.close()

    def _open_peers(self) -> list[_BoundedH11]:
        """The other connections not already being closed (a closed one leaves the set on the
        loop's next turn, and closing it again would make no room)."""
        return [
            c
            for c in self.connections
            if isinstance(c, _BoundedH11) and c is not self and not c.transport.is_closing()
        ]

    def _make_room(self) -> None:
        receiving = [c for c in self._open_peers() if c._receiving()]
        victim = min(receiving, key=lambda c: c.since) if receiving else self
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


def exposed(host: str) -> bool:
    """Whether a server bound to `host` can be reached from other machines (anything but a
    loopback address or localhost)."""
    if host.strip("[]").lower() == "localhost":
        return False
    try:
        return not ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return True  # a host name: whatever it resolves to may be reachable


def urls(host: str, port: int) -> list[str]:
    """Addresses a browser can open for a server bound to `host`: a wildcard address (0.0.0.0,
    ::) is no destination, so this machine's loopback and its host name stand in for it."""
    bare = host.strip("[]")
    try:
        address: ipaddress.IPv4Address | ipaddress.IPv6Address | None = ipaddress.ip_address(bare)
    except ValueError:
        address = None  # a host name
    if address is not None and address.is_unspecified:
        loopback = "127.0.0.1" if address.version == 4 else "[::1]"
        return [f"http://{loopback}:{port}/", f"http://{socket.gethostname()}:{port}/"]
    shown = f"[{bare}]" if address is not None and address.version == 6 else bare
    return [f"http://{shown}:{port}/"]


def _listen(host: str, port: int) -> socket.socket:
    family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    return socket.create_server((host, port), family=family, backlog=128)
