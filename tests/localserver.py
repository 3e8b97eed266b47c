"""A real HTTP server on 127.0.0.1 that serves a provider's recordings, with injectable faults."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from priceadvisor.collect import offline
from priceadvisor.collect.fetch import run_cycle
from priceadvisor.config import Settings, load_settings
from priceadvisor.manifest import manifest
from priceadvisor.records import IngestSummary
from priceadvisor.service.stores import configured_store

# A fault gets (path, query) and returns (status, headers, body) to send instead, or None.
Fault = Callable[[str, dict[str, str]], tuple[int, dict[str, str], bytes] | None]


@dataclass
class RecordingServer:
    provider: str
    faults: list[Fault] = field(default_factory=list)
    post_faults: list[Callable[[bytes], tuple[int, dict[str, str], bytes] | None]] = field(
        default_factory=list
    )
    requests: list[str] = field(default_factory=list)
    agents: list[str] = field(default_factory=list)
    accepts: list[str] = field(default_factory=list)
    authorizations: list[str] = field(default_factory=list)
    delay: float = 0.0
    base_url: str = ""
    etag: str | None = None  # when set: sent with every answer, and If-None-Match gets a 304
    not_modified: int = 0


def _handler(state: RecordingServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self._answer(b"")

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            self._answer(self.rfile.read(length))

        def _answer(self, body: bytes) -> None:
            parts = urlsplit(self.path)
            path = unquote(parts.path)
            query = dict(parse_qsl(parts.query, keep_blank_values=True))
            state.requests.append(self.path)
            state.agents.append(self.headers.get("User-Agent", ""))
            state.accepts.append(self.headers.get("Accept", ""))
            state.authorizations.append(self.headers.get("Authorization", ""))
            if state.delay:
                time.sleep(state.delay)
            answers = [fault(path, query) for fault in state.faults]
            answers += [fault(body) for fault in state.post_faults if self.command == "POST"]
            for answer in answers:
                if answer is not None:
                    return self._send(*answer)
            found = offline.find(state.provider, self.command, path, query, body)
            if found is None:
                return self._send(404, {}, b"no recording")
            if state.etag and self.headers.get("If-None-Match") == state.etag:
                state.not_modified += 1
                return self._send(304, {"ETag": state.etag}, b"")
            headers = {"Content-Type": found.content_type}
            headers |= {"ETag": state.etag} if state.etag else {}
            return self._send(found.status, headers, found.file.read_bytes())

        def _send(self, status: int, headers: dict[str, str], body: bytes) -> None:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    return Handler


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up mid-body (a size cap, a deadline) is expected here."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@contextmanager
def serving(provider: str) -> Iterator[RecordingServer]:
    state = RecordingServer(provider)
    server = _QuietServer(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def local_settings(
    db: Path,
    *servers: RecordingServer,
    http: dict[str, Any] | None = None,
    overrides: dict[str, dict[str, Any]] | None = None,
    **provider: Any,
) -> Settings:
    """Settings whose every endpoint of each server's provider points at that local server (an
    override with only scheme and host keeps each endpoint's default path). `provider` keys go
    to every provider, `overrides[id]` to one."""
    providers = {
        s.provider: {
            "endpoints": {name: s.base_url for name in manifest(s.provider).endpoints},
            "request_spacing": 0,
            **provider,
            **(overrides or {}).get(s.provider, {}),
        }
        for s in servers
    }
    return load_settings(db=db, providers=providers, http=http or {})


def fetch_served(provider: str, db: Path) -> tuple[IngestSummary, RecordingServer]:
    """One fetch cycle of `provider` against its recordings on a local server."""
    with serving(provider) as server:
        local = local_settings(db, server)
        [summary] = run_cycle(local, configured_store(local), [provider], False, lambda *_: None)
    return summary, server


def fetch_locally(
    db: Path, *providers: str, faults: list[Fault] | None = None, **provider: Any
) -> dict[str, Any]:
    """One fetch cycle of these providers, each against its own local server; summaries by id.
    `faults` go to the first provider's server. The servers are returned too (under "servers")
    for checking the requests they saw."""
    with ExitStack() as stack:
        servers = [stack.enter_context(serving(p)) for p in providers]
        servers[0].faults.extend(faults or [])
        settings = local_settings(db, *servers, **provider)
        summaries = run_cycle(
            settings, configured_store(settings), list(providers), False, lambda *_: None
        )
    return {s.provider: s for s in summaries} | {"servers": {s.provider: s for s in servers}}
