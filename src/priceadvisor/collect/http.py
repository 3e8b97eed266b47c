"""The one place an HTTP client is built (DESIGN §1): timeouts, User-Agent, retries that honour
Retry-After, conditional GET, and per-fetch request/byte counts.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import email.utils
import json
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx
import stamina

from priceadvisor import __version__
from priceadvisor.config import HttpSettings
from priceadvisor.models import CachedBody

RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})


class FetchError(Exception):
    """A request that failed for good; the message is one line fit for fetch_runs.error."""


class _RetryableStatus(Exception):
    def __init__(self, response: httpx.Response) -> None:
        super().__init__(f"HTTP {response.status_code}")
        self.response = response


def user_agent(contact: str | None = None) -> str:
    suffix = f"; {contact}" if contact else ""
    return f"priceadvisor/{__version__} (GPU price tracker{suffix})"


def build_client(
    settings: HttpSettings,
    transport: httpx.AsyncBaseTransport | None = None,
    headers: dict[str, str] | None = None,
) -> httpx.AsyncClient:
    timeout = httpx.Timeout(settings.timeout, connect=min(settings.timeout, 10.0))
    base_headers = {"User-Agent": user_agent(settings.contact), "Accept-Encoding": "gzip"}
    return httpx.AsyncClient(
        timeout=timeout,
        headers=base_headers | (headers or {}),
        transport=transport,
        follow_redirects=True,
    )


def retry_after_seconds(response: httpx.Response, now: dt.datetime | None = None) -> float | None:
    """Retry-After as seconds: either delta-seconds or an HTTP date (RFC 9110 §10.2.3)."""
    value = response.headers.get("Retry-After")
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    now = now or dt.datetime.now(dt.UTC)
    return max(0.0, (when - now).total_seconds())


class ValidatorCache(Protocol):
    """Keeps ETag / Last-Modified and the body per URL for conditional GET."""

    def get(self, url: str) -> CachedBody | None: ...
    def put(self, url: str, body: CachedBody) -> None: ...


@dataclass(slots=True)
class MemoryValidatorCache:
    entries: dict[str, CachedBody] = field(default_factory=dict)

    def get(self, url: str) -> CachedBody | None:
        return self.entries.get(url)

    def put(self, url: str, body: CachedBody) -> None:
        self.entries[url] = body


class HttpSession:
    """One provider's fetch: its requests are counted, retried and conditionally cached."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        settings: HttpSettings,
        cache: ValidatorCache | None = None,
        min_interval: float = 0.0,
    ) -> None:
        self.client = client
        self.settings = settings
        self.cache = cache
        self.min_interval = min_interval  # politeness: a source's documented rate limit
        self._last_sent = 0.0
        self.requests = 0
        self.bytes = 0
        self.not_modified = 0

    async def get_json(self, url: str, params: dict[str, str] | None = None) -> Any:
        response = await self.request("GET", url, params=params)
        return decode_json(response)

    async def get_text(self, url: str, headers: dict[str, str] | None = None) -> str:
        response = await self.request("GET", url, headers=headers)
        return response.text

    async def post_json(self, url: str, payload: Any) -> Any:
        response = await self.request("POST", url, json=payload)
        return decode_json(response)

    async def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        """Send with retries; return a 2xx response (a 304 comes back as the cached body)."""
        try:
            async for attempt in stamina.retry_context(
                on=self._backoff, attempts=self.settings.attempts, timeout=None
            ):
                with attempt:
                    return await self._send_once(method, url, **kwargs)
        except _RetryableStatus as exc:
            raise FetchError(_status_message(exc.response, self.settings.attempts)) from None
        except httpx.TimeoutException:
            raise FetchError(f"timed out requesting {_short(url)}") from None
        except httpx.TransportError as exc:
            raise FetchError(f"cannot reach {_short(url)}: {type(exc).__name__}") from None
        raise AssertionError("unreachable: stamina re-raises the last error")  # pragma: no cover

    async def _send_once(
        self, method: str, url: str, headers: dict[str, str] | None = None, **kwargs: Any
    ) -> httpx.Response:
        cached = self.cache.get(url) if (self.cache and method == "GET") else None
        headers = (headers or {}) | _conditional_headers(cached)
        await self._space_out()
        self.requests += 1
        response = await self.client.request(method, url, headers=headers, **kwargs)
        self.bytes += len(response.content)
        if response.status_code == 304 and cached is not None:
            self.not_modified += 1
            return httpx.Response(200, content=cached.content, request=response.request)
        if response.status_code in RETRY_STATUSES:
            raise _RetryableStatus(response)
        if response.status_code >= 400:
            raise FetchError(_status_message(response, None))
        self._remember(url, response, method)
        return response

    async def _space_out(self) -> None:
        wait = self._last_sent + self.min_interval - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)
        self._last_sent = time.monotonic()

    def _remember(self, url: str, response: httpx.Response, method: str) -> None:
        etag, modified = response.headers.get("ETag"), response.headers.get("Last-Modified")
        if self.cache is not None and method == "GET" and (etag or modified):
            self.cache.put(url, CachedBody(response.content, etag, modified))

    def _backoff(self, exc: Exception) -> bool | float:
        """stamina backoff hook: retry transport errors and retryable statuses, honouring
        Retry-After; a server asking for a longer wait than allowed is not retried."""
        if isinstance(exc, httpx.TransportError):
            return True
        if not isinstance(exc, _RetryableStatus):
            return False
        wait = retry_after_seconds(exc.response)
        if wait is None:
            return True
        return wait if wait <= self.settings.max_retry_after else False


def _conditional_headers(cached: CachedBody | None) -> dict[str, str]:
    headers: dict[str, str] = {}
    if cached is not None and cached.etag:
        headers["If-None-Match"] = cached.etag
    if cached is not None and cached.last_modified:
        headers["If-Modified-Since"] = cached.last_modified
    return headers


def decode_json(response: httpx.Response) -> Any:
    try:
        return json.loads(response.content)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        size = len(response.content)
        raise FetchError(
            f"invalid JSON from {_short(str(response.request.url))} "
            f"({size} bytes, {exc.__class__.__name__} at position {getattr(exc, 'pos', '?')})"
        ) from None


def _status_message(response: httpx.Response, attempts: int | None) -> str:
    after = f" after {attempts} attempts" if attempts else ""
    wait = retry_after_seconds(response)
    asked = f"; server asked to wait {wait:.0f} s" if wait is not None else ""
    url = _short(str(response.request.url))
    return f"HTTP {response.status_code} from {url}{after}{asked}"


def _short(url: str) -> str:
    """Scheme, host and path only: query strings may carry API keys (GCP's ?key=)."""
    parsed = httpx.URL(url)
    return f"{parsed.scheme}://{parsed.host}{parsed.path}"
