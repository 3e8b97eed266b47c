"""The one place an HTTP client is built: timeouts, User-Agent, retries that honour
Retry-After, conditional GET, per-fetch request/byte/retry counts, and bounded inputs: a body is
read streaming and abandoned past the provider's size cap (a gzip bomb never inflates in
memory), and redirects are followed only where the provider's policy allows.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import email.utils
import json
import logging
import re
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx
import stamina
from stamina.instrumentation import PrometheusOnRetryHook, RetryDetails, set_on_retry_hooks

from priceadvisor import __version__
from priceadvisor.config import HttpSettings
from priceadvisor.manifest import DEFAULT_MAX_RESPONSE, RedirectPolicy
from priceadvisor.records import CachedBody

RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})
MAX_REDIRECTS = 5
# Headers that describe the wire form of a body; a body handed on is already decoded.
_WIRE_HEADERS = ("content-encoding", "content-length", "transfer-encoding")

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ResponseLimits:
    """What one provider's responses may be: decoded size and where redirects may lead."""

    max_bytes: int = DEFAULT_MAX_RESPONSE
    redirects: RedirectPolicy = "same-origin"


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
    install_retry_hooks()
    timeout = httpx.Timeout(settings.timeout, connect=min(settings.timeout, 10.0))
    base_headers = {"User-Agent": user_agent(settings.contact), "Accept-Encoding": "gzip"}
    return httpx.AsyncClient(
        timeout=timeout,
        headers=base_headers | (headers or {}),
        transport=transport,
        follow_redirects=False,  # HttpSession follows them itself, within the provider's policy
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


RetryNotice = Callable[[str], None]
ResponseSink = Callable[[httpx.Response], None]  # sees every final 2xx response (fetch --record)


@dataclass(frozen=True, slots=True)
class _Retrying:
    """Who is retrying, for the retry hook (stamina calls it without our context)."""

    session: HttpSession
    url: str


_RETRYING: ContextVar[_Retrying | None] = ContextVar("priceadvisor_retrying", default=None)
# No connection at all (DNS, refused, unroutable) after every attempt: other requests of the same
# fetch to that host fail at once with the same cause instead of retrying it all over again.
_CONNECT_FAILURES = (httpx.ConnectError, httpx.ConnectTimeout)


class HttpSession:
    """One provider's fetch: its requests are counted, retried and conditionally cached."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        settings: HttpSettings,
        cache: ValidatorCache | None = None,
        min_interval: float = 0.0,
        limits: ResponseLimits | None = None,
        label: str | None = None,
        on_retry: RetryNotice | None = None,
        on_response: ResponseSink | None = None,
    ) -> None:
        self.client = client
        self.settings = settings
        self.cache = cache
        self.min_interval = min_interval  # politeness: a source's documented rate limit
        self.limits = limits or ResponseLimits()
        self.label = label  # the provider, in retry log lines
        self.on_retry = on_retry
        self.on_response = on_response
        self._last_sent = 0.0
        self._unreachable: dict[str, str] = {}
        self.requests = 0
        self.bytes = 0
        self.not_modified = 0
        self.retries = 0

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
        host = httpx.URL(url).host
        if host in self._unreachable:  # the network will not be back within this fetch
            raise FetchError(self._unreachable[host])
        token = _RETRYING.set(_Retrying(self, url))
        try:
            return await self._with_retries(method, url, **kwargs)
        except _CONNECT_FAILURES as exc:
            self._unreachable[host] = f"cannot reach {host} ({_cause(exc)})"
            raise FetchError(self._unreachable[host]) from None
        finally:
            _RETRYING.reset(token)

    async def _with_retries(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        try:
            async for attempt in stamina.retry_context(
                on=self._backoff, attempts=self.settings.attempts, timeout=None
            ):
                with attempt:
                    return await self._send_once(method, url, **kwargs)
        except _RetryableStatus as exc:
            raise FetchError(_status_message(exc.response, self.settings.attempts)) from None
        except _CONNECT_FAILURES:
            raise  # request() remembers the host as unreachable
        except httpx.TimeoutException:
            raise FetchError(f"timed out requesting {_short(url)}") from None
        except httpx.TransportError as exc:
            raise FetchError(
                f"connection to {httpx.URL(url).host} failed ({_cause(exc)})"
            ) from None
        except httpx.DecodingError:
            raise FetchError(f"cannot decompress the body from {_short(url)}") from None
        raise AssertionError("unreachable: stamina re-raises the last error")  # pragma: no cover

    async def _send_once(
        self, method: str, url: str, headers: dict[str, str] | None = None, **kwargs: Any
    ) -> httpx.Response:
        cached = self.cache.get(url) if (self.cache and method == "GET") else None
        headers = (headers or {}) | _conditional_headers(cached)
        await self._space_out()
        self.requests += 1
        request = self.client.build_request(method, url, headers=headers, **kwargs)
        response = await self._exchange(request)
        self.bytes += len(response.content)
        if response.status_code == 304 and cached is not None:
            self.not_modified += 1
            return httpx.Response(200, content=cached.content, request=response.request)
        if response.status_code in RETRY_STATUSES:
            raise _RetryableStatus(response)
        if response.status_code >= 400:
            raise FetchError(_status_message(response, None))
        self._remember(url, response, method)
        if self.on_response is not None:
            self.on_response(response)
        return response

    async def _exchange(self, request: httpx.Request) -> httpx.Response:
        """Send, following the redirects the policy allows, and read the final body."""
        origin = _origin(request.url)
        for _ in range(MAX_REDIRECTS + 1):
            response = await self.client.send(request, stream=True)
            try:
                if response.next_request is None:
                    return await self._read_bounded(response)
            finally:
                await response.aclose()
            request = self._allowed_redirect(response, response.next_request, origin)
        raise FetchError(f"more than {MAX_REDIRECTS} redirects from {_short(str(request.url))}")

    def _allowed_redirect(
        self, response: httpx.Response, target: httpx.Request, origin: str
    ) -> httpx.Request:
        source = _short(str(response.request.url))
        if self.limits.redirects == "none":
            raise FetchError(f"{source} redirects (HTTP {response.status_code}); not followed")
        if _origin(target.url) != origin:
            raise FetchError(
                f"{source} redirects to another origin ({_origin(target.url)}); not followed"
            )
        return target

    async def _read_bounded(self, response: httpx.Response) -> httpx.Response:
        """The decoded body, counted as it inflates: past the cap the transfer is abandoned."""
        chunks, size = [], 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > self.limits.max_bytes:
                raise FetchError(
                    f"response from {_short(str(response.request.url))} exceeds "
                    f"{_mib(self.limits.max_bytes)} decompressed; aborted"
                )
            chunks.append(chunk)
        headers = [(k, v) for k, v in response.headers.multi_items() if k not in _WIRE_HEADERS]
        return httpx.Response(
            response.status_code,
            headers=headers,
            content=b"".join(chunks),
            request=response.request,
        )

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

    def note_retry(self, url: str, details: RetryDetails) -> None:
        """Count a scheduled retry, log it with its context and tell the progress display."""
        self.retries += 1
        attempt = f"{details.retry_num + 1}/{self.settings.attempts}"
        cause = _cause(details.caused_by)
        log.info(
            "retry %s of %s in %.1f s: %s",
            attempt,
            _short(url),
            details.wait_for,
            cause,
            extra={"url": _short(url), "attempt": details.retry_num + 1}
            | ({"provider": self.label} if self.label else {}),
        )
        if self.on_retry is not None:
            self.on_retry(f"retry {attempt} of {httpx.URL(url).host}: {cause}")


def _log_retry(details: RetryDetails) -> None:
    """stamina's retry hook: our own line, with provider, URL and attempt, replaces its bare
    `stamina.retry_scheduled` warning."""
    current = _RETRYING.get()
    if current is not None:
        current.session.note_retry(current.url, details)


def install_retry_hooks() -> None:
    """stamina's Prometheus counter (served on /metrics) plus our log line; idempotent."""
    set_on_retry_hooks([PrometheusOnRetryHook, _log_retry])


def _cause(exc: BaseException) -> str:
    """A short reason: the status, the OS's words ("Connection refused", "Name or service not
    known") without their errno prefix, or else the exception's type."""
    if isinstance(exc, _RetryableStatus):
        return str(exc)
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    words = re.sub(r"^\[Errno -?\d+\]\s*", "", text)[:80]
    if isinstance(exc, httpx.ConnectTimeout):
        return "connect timed out"
    return words or type(exc).__name__


def _origin(url: httpx.URL) -> str:
    port = f":{url.port}" if url.port else ""
    return f"{url.scheme}://{url.host}{port}"


def _mib(size: int) -> str:
    return f"{size / 2**20:g} MiB"


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
    except RecursionError:
        raise FetchError(
            f"JSON from {_short(str(response.request.url))} is nested too deeply to read"
        ) from None
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
