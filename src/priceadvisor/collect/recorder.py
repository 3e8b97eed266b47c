"""`fetch --record DIR`: a live fetch writes every response it receives as a recording, in the
layout `--offline` reads (collect/offline.py): `DIR/<provider>/recordings.toml`, one file per
response, and a README.md listing each request for the provenance note a reviewer completes.

Secrets never reach the files: request headers are not written at all; query parameters named
like a credential (key, api_key, token, access_token, secret, signature, password, auth) or
holding the provider's credential are left out of the index; the credential itself, wherever
it appears (a response echoing it, a URL path, a POST body), reads REDACTED, and a POST body
is matched on its longest stretch without it. Only final 2xx answers are recorded: a 404 is
what the offline transport answers for anything unrecorded anyway.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

INDEX = "recordings.toml"
REDACTED = "REDACTED"
# Query parameter names that carry a credential (a page token such as GCP's pageToken does not).
_SECRET_PARAM = re.compile(
    r"(?:api[-_]?)?key|(?:access[-_]?|auth[-_]?|id[-_]?)?token|(?:client[-_]?)?secret"
    r"|passw(?:or)?d|sig(?:nature)?|auth(?:orization)?|credentials?",
    re.IGNORECASE,
)
_EXTENSIONS = (("json", "json"), ("javascript", "js"), ("html", "html"), ("xml", "xml"))
_MIN_SECRET = 4  # shorter pieces of a credential would redact ordinary text


class RecordError(Exception):
    """The recording folder cannot be used (it already holds recordings, or cannot be written)."""


@dataclass
class Recorder:
    """Collects one provider's responses during a fetch; `finish()` writes the index."""

    provider: str
    folder: Path
    endpoints: dict[str, str]
    secrets: tuple[str, ...] = ()
    entries: list[dict[str, Any]] = field(default_factory=list)
    _seen: set[str] = field(default_factory=set)

    def record(self, response: httpx.Response) -> None:
        request = response.request
        endpoint, extra = self._endpoint(request.url)
        if endpoint is None:
            return  # not one of the provider's endpoints (a rebased link elsewhere): nothing to
            # replay it against
        entry = self._entry(endpoint, extra, request, response)
        identity = json.dumps({k: v for k, v in entry.items() if k != "file"}, sort_keys=True)
        if identity in self._seen:
            return
        self._seen.add(identity)
        self.folder.mkdir(parents=True, exist_ok=True)
        body = self._redact(response.content)
        (self.folder / str(entry["file"])).write_bytes(body)
        self.entries.append(entry)

    def _entry(
        self, endpoint: str, extra: str, request: httpx.Request, response: httpx.Response
    ) -> dict[str, Any]:
        content_type = response.headers.get("Content-Type", "application/json")
        entry: dict[str, Any] = {"endpoint": endpoint}
        if extra:
            entry["path"] = self._redact_text(extra)
        query = {k: v for k, v in request.url.params.multi_items() if not self._secret_param(k, v)}
        if query:
            entry["query"] = {k: self._redact_text(v) for k, v in query.items()}
        if request.method != "GET":
            entry["method"] = request.method
            body = self._body_match(request.content)
            if body:
                entry["body_contains"] = body
        entry["content_type"] = content_type
        entry["file"] = f"{endpoint}-{len(self.entries) + 1:02d}.{_extension(content_type)}"
        return entry

    def _secret_param(self, name: str, value: str) -> bool:
        named = _SECRET_PARAM.fullmatch(name) is not None
        return named or any(secret in value for secret in self._secret_pieces())

    def _endpoint(self, url: httpx.URL) -> tuple[str | None, str]:
        """The endpoint whose origin and path prefix the URL has (the longest), and the rest."""
        best: tuple[str | None, str] = (None, "")
        longest = -1
        for name, base in self.endpoints.items():
            parsed = httpx.URL(base)
            same_origin = (parsed.scheme, parsed.host, parsed.port) == (
                url.scheme,
                url.host,
                url.port,
            )
            if same_origin and url.path.startswith(parsed.path) and len(parsed.path) > longest:
                best, longest = (name, url.path[len(parsed.path) :]), len(parsed.path)
        return best

    def _body_match(self, content: bytes) -> str:
        compact = "".join(content.decode("utf-8", "replace").split())
        pieces = [compact]
        for secret in self._secret_pieces():
            pieces = [part for piece in pieces for part in piece.split(secret)]
        return max(pieces, key=len)

    def _secret_pieces(self) -> list[str]:
        parts = {p for s in self.secrets for p in (s, *s.split(":")) if len(p) >= _MIN_SECRET}
        return sorted(parts, key=len, reverse=True)

    def _redact(self, body: bytes) -> bytes:
        for secret in self._secret_pieces():
            body = body.replace(secret.encode(), REDACTED.encode())
        return body

    def _redact_text(self, text: str) -> str:
        for secret in self._secret_pieces():
            text = text.replace(secret, REDACTED)
        return text

    def finish(self, when: dt.datetime) -> None:
        """Write recordings.toml (more specific queries first: the first match answers) and
        a README.md skeleton listing what was recorded."""
        self.folder.mkdir(parents=True, exist_ok=True)
        ordered = sorted(self.entries, key=lambda e: -len(e.get("query", {})))
        (self.folder / INDEX).write_text(_index(self.provider, ordered, when), encoding="utf-8")
        readme = self.folder / "README.md"
        readme.write_text(_readme(self.provider, ordered, self.endpoints, when), encoding="utf-8")


def prepare(folder: Path, provider: str) -> Path:
    """DIR/<provider>, created empty; refused when it already holds recordings (a reviewed
    recording is never overwritten by the next fetch)."""
    target = folder / provider
    if (target / INDEX).exists():
        raise RecordError(f"{target / INDEX} exists: record into another folder")
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RecordError(f"cannot create {target}: {exc.strerror or exc}") from None
    return target


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    return url.scheme, url.host, url.port


def _extension(content_type: str) -> str:
    lowered = content_type.lower()
    return next((ext for marker, ext in _EXTENSIONS if marker in lowered), "txt")


def _toml_value(value: Any) -> str:
    """TOML for a string or a table of strings: JSON's string escapes are TOML's."""
    if isinstance(value, dict):
        inner = ", ".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in value.items())
        return "{ " + inner + " }"
    return json.dumps(value, ensure_ascii=False)


def _index(provider: str, entries: list[dict[str, Any]], when: dt.datetime) -> str:
    lines = [f"# {provider}: recorded by `priceadvisor fetch --record` at {when:%Y-%m-%dT%H:%MZ}."]
    for entry in entries:
        lines += ["", "[[response]]"]
        lines += [f"{key} = {_toml_value(value)}" for key, value in entry.items()]
    return "\n".join(lines) + "\n"


def _readme(
    provider: str, entries: list[dict[str, Any]], endpoints: dict[str, str], when: dt.datetime
) -> str:
    rows = [
        f"- `{e['file']}`: {e.get('method', 'GET')} {endpoints[e['endpoint']]}"
        f"{e.get('path', '')}{_query_text(e)} ({e['content_type']})"
        for e in entries
    ]
    return "\n".join(
        [
            f"# {provider} recordings",
            "",
            f"Recorded from a live fetch (`priceadvisor fetch --record`) on {when:%Y-%m-%d %H:%M} "
            "UTC, anonymously unless the provider needs a key (credentials are never written: "
            "query parameters that carry one are left out, and the key itself reads REDACTED).",
            "",
            *rows,
            "",
            "To review before shipping: trim long lists (keep every trap), say which values are "
            "real, and what each file keeps that the parser must handle.",
            "",
        ]
    )


def _query_text(entry: dict[str, Any]) -> str:
    query = entry.get("query")
    return "?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else ""
