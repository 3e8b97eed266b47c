"""Recorded responses: served by `--offline` through an httpx mock transport, and by the tests'
local HTTP server. Each provider's folder under the recordings directory has a
`recordings.toml` listing responses and the requests they answer:

    [[response]]
    endpoint = "prices"               # endpoint name from the provider's manifest
    path = "/US East/index.json"      # optional: appended to the endpoint's path (decoded)
    query = { "$skip" = "1000" }      # optional: these query parameters must be present
    file = "prices-page2.json"
    method = "GET"                    # optional; POST for GraphQL
    body_contains = "US-TX-3"         # optional: the request body (spaces removed) contains this
    status = 200                      # optional
    content_type = "application/json" # optional

Entries are tried in order; the first whose endpoint path and query match answers.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import httpx

from priceadvisor.manifest import manifest
from priceadvisor.resources import recordings_dir


@dataclass(frozen=True, slots=True)
class Recording:
    path: str
    query: dict[str, str]
    file: Path
    status: int
    content_type: str
    method: str = "GET"
    body_contains: str | None = None

    def matches(self, method: str, path: str, query: dict[str, str], body: bytes = b"") -> bool:
        return (
            method == self.method
            and path == self.path
            and all(query.get(k) == v for k, v in self.query.items())
            and (self.body_contains is None or self.body_contains.encode() in _compact(body))
        )


def _compact(body: bytes) -> bytes:
    return b"".join(body.split())


@cache
def recordings(provider_id: str, folder: Path | None = None) -> tuple[Recording, ...]:
    base = (folder or recordings_dir()) / provider_id
    index = base / "recordings.toml"
    if not index.is_file():
        return ()
    endpoints = manifest(provider_id).endpoints
    entries = tomllib.loads(index.read_text(encoding="utf-8")).get("response", [])
    return tuple(
        Recording(
            path=httpx.URL(endpoints[e["endpoint"]]).path + str(e.get("path", "")),
            query={str(k): str(v) for k, v in e.get("query", {}).items()},
            file=base / e["file"],
            status=int(e.get("status", 200)),
            content_type=str(e.get("content_type", "application/json")),
            method=str(e.get("method", "GET")),
            body_contains=e.get("body_contains"),
        )
        for e in entries
    )


def find(
    provider_id: str,
    method: str,
    path: str,
    query: dict[str, str],
    body: bytes = b"",
    folder: Path | None = None,
) -> Recording | None:
    candidates = recordings(provider_id, folder)
    return next((r for r in candidates if r.matches(method, path, query, body)), None)


def respond(provider_id: str, request: httpx.Request, folder: Path | None = None) -> httpx.Response:
    query = dict(request.url.params.multi_items())
    found = find(provider_id, request.method, request.url.path, query, request.read(), folder)
    if found is None:
        return httpx.Response(404, text=f"no recording for {request.url.path}", request=request)
    return httpx.Response(
        found.status,
        content=found.file.read_bytes(),
        headers={"Content-Type": found.content_type},
        request=request,
    )


def transport(provider_id: str, folder: Path | None = None) -> httpx.MockTransport:
    """A transport that answers every request of this provider from its recordings (those
    shipped, or those in `folder`/<provider>, as `fetch --record DIR` writes them)."""
    return httpx.MockTransport(lambda request: respond(provider_id, request, folder))


def has_recordings(provider_id: str) -> bool:
    return bool(recordings(provider_id))
