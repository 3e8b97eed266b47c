from __future__ import annotations

import datetime as dt

import httpx
import pytest
import respx

from priceadvisor import __version__
from priceadvisor.collect.http import (
    FetchError,
    HttpSession,
    MemoryValidatorCache,
    build_client,
    retry_after_seconds,
)
from priceadvisor.config import HttpSettings

pytestmark = pytest.mark.anyio

URL = "https://api.example.test/prices"


def session(client: httpx.AsyncClient, **kw: object) -> HttpSession:
    return HttpSession(client, HttpSettings(**kw), MemoryValidatorCache())  # type: ignore[arg-type]


def test_retry_after_seconds_and_http_date() -> None:
    now = dt.datetime(2026, 11, 21, 12, 0, tzinfo=dt.UTC)
    assert retry_after_seconds(httpx.Response(429, headers={"Retry-After": "7"})) == 7
    dated = httpx.Response(503, headers={"Retry-After": "Sat, 21 Nov 2026 12:00:30 GMT"})
    assert retry_after_seconds(dated, now) == 30
    assert retry_after_seconds(httpx.Response(429, headers={"Retry-After": "soon"})) is None
    assert retry_after_seconds(httpx.Response(429)) is None


@respx.mock
async def test_user_agent_names_priceadvisor() -> None:
    route = respx.get(URL).respond(json={})
    async with build_client(HttpSettings(contact="ops@example.com")) as client:
        await session(client).get_json(URL)
    agent = route.calls.last.request.headers["User-Agent"]
    assert agent.startswith(f"priceadvisor/{__version__}") and "ops@example.com" in agent


@respx.mock
async def test_429_with_retry_after_is_retried_then_succeeds() -> None:
    route = respx.get(URL).mock(
        side_effect=[
            httpx.Response(429, headers={"Retry-After": "1"}),
            httpx.Response(200, json={"ok": True}),
        ]
    )
    async with build_client(HttpSettings()) as client:
        s = session(client)
        assert await s.get_json(URL) == {"ok": True}
    assert route.call_count == 2
    assert s.requests == 2


def test_backoff_hook_waits_what_the_server_asks_up_to_the_cap() -> None:
    s = HttpSession(httpx.AsyncClient(), HttpSettings(max_retry_after=60))
    request = httpx.Request("GET", URL)
    from priceadvisor.collect.http import _RetryableStatus

    asked = _RetryableStatus(httpx.Response(429, headers={"Retry-After": "12"}, request=request))
    too_long = _RetryableStatus(
        httpx.Response(429, headers={"Retry-After": "3600"}, request=request)
    )
    plain = _RetryableStatus(httpx.Response(503, request=request))
    assert s._backoff(asked) == 12.0
    assert s._backoff(too_long) is False
    assert s._backoff(plain) is True
    assert s._backoff(ValueError("not ours")) is False


@respx.mock
async def test_persistent_5xx_gives_one_line_error_without_query_string() -> None:
    route = respx.get(URL).respond(500)
    async with build_client(HttpSettings()) as client:
        with pytest.raises(FetchError) as caught:
            await session(client).get_json(URL, params={"key": "SECRET-KEY"})
    assert route.call_count == 3  # stamina testing mode caps attempts at 3
    message = str(caught.value)
    assert "HTTP 500" in message and "api.example.test/prices" in message
    assert "SECRET-KEY" not in message


@respx.mock
async def test_404_is_not_retried() -> None:
    route = respx.get(URL).respond(404)
    async with build_client(HttpSettings()) as client:
        with pytest.raises(FetchError, match="HTTP 404"):
            await session(client).get_json(URL)
    assert route.call_count == 1


@respx.mock
async def test_timeouts_are_retried_then_reported() -> None:
    respx.get(URL).mock(side_effect=httpx.ReadTimeout("slow"))
    async with build_client(HttpSettings()) as client:
        with pytest.raises(FetchError, match="timed out"):
            await session(client).get_json(URL)


@respx.mock
async def test_truncated_json_is_a_clear_error() -> None:
    respx.get(URL).respond(200, content=b'{"Items": [{"armSkuName": "Stand')
    async with build_client(HttpSettings()) as client:
        with pytest.raises(FetchError, match="invalid JSON"):
            await session(client).get_json(URL)


@respx.mock
async def test_conditional_get_reuses_the_cached_body_on_304() -> None:
    route = respx.get(URL).mock(
        side_effect=[
            httpx.Response(200, json={"n": 1}, headers={"ETag": '"v1"'}),
            httpx.Response(304),
        ]
    )
    async with build_client(HttpSettings()) as client:
        s = session(client)
        first = await s.get_json(URL)
        second = await s.get_json(URL)
    assert first == second == {"n": 1}
    assert route.calls.last.request.headers["If-None-Match"] == '"v1"'
    assert s.not_modified == 1


@respx.mock
async def test_a_host_that_cannot_be_reached_is_not_retried_again_in_the_same_fetch() -> None:
    route = respx.get(URL).mock(side_effect=httpx.ConnectTimeout("no route"))
    other = respx.get(URL + "/page2").respond(json={})
    async with build_client(HttpSettings()) as client:
        s = session(client)
        with pytest.raises(FetchError, match=r"api\.example\.test \(connect timed out"):
            await s.get_json(URL)
        with pytest.raises(FetchError, match=r"cannot reach api\.example\.test"):
            await s.get_json(URL + "/page2")
    assert route.call_count == 3 and other.call_count == 0
    assert s.retries == 2
