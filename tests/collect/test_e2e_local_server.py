"""End to end: the Azure adapter against a real HTTP server on 127.0.0.1 serving recordings."""

from __future__ import annotations

from pathlib import Path

from priceadvisor.collect.fetch import run_cycle
from priceadvisor.records import RunStatus
from priceadvisor.service.stores import configured_store
from tests.conftest import query
from tests.localserver import local_settings, serving


def offers(db: Path) -> list[tuple[object, ...]]:
    return query(db, "SELECT * EXCLUDE (last_seen) FROM offers ORDER BY ALL")


def test_fetch_through_a_local_server_sees_every_page(db_path: Path) -> None:
    with serving("azure") as server:
        local = local_settings(db_path, server)
        [summary] = run_cycle(local, configured_store(local), ["azure"], False, lambda *_: None)
    assert (
        summary.status is RunStatus.OK and summary.offers_seen == 57
    )  # 56 hourly prices, 1 reservation
    assert len(server.requests) == 3  # NextPageLink rebased onto 127.0.0.1, not prices.azure.com
    assert all(r.startswith("/api/retail/prices") for r in server.requests)
    assert "%24skip=2000" in server.requests[-1] or "$skip=2000" in server.requests[-1]


def test_server_error_on_page_two_keeps_earlier_offers(db_path: Path) -> None:
    with serving("azure") as server:
        settings = local_settings(db_path, server)
        run_cycle(settings, configured_store(settings), ["azure"], False, lambda *_: None)
        before = offers(db_path)
        server.faults.append(
            lambda path, q: (500, {}, b"oops") if q.get("$skip") == "1000" else None
        )
        [summary] = run_cycle(
            settings, configured_store(settings), ["azure"], False, lambda *_: None
        )
    assert summary.status is RunStatus.FAILED and "HTTP 500" in (summary.error or "")
    assert offers(db_path) == before


def test_rate_limit_with_retry_after_then_success(db_path: Path) -> None:
    with serving("azure") as server:
        remaining = [2]

        def limited(path: str, q: dict[str, str]) -> tuple[int, dict[str, str], bytes] | None:
            if remaining[0]:
                remaining[0] -= 1
                return 429, {"Retry-After": "1"}, b"slow down"
            return None

        server.faults.append(limited)
        local = local_settings(db_path, server)
        [summary] = run_cycle(local, configured_store(local), ["azure"], False, lambda *_: None)
    assert summary.status is RunStatus.OK and summary.requests == 5


def test_truncated_body_fails_cleanly(db_path: Path) -> None:
    with serving("azure") as server:
        server.faults.append(
            lambda path, q: (
                200,
                {"Content-Type": "application/json"},
                b'{"Items": [{"currencyCode": "US',
            )
        )
        local = local_settings(db_path, server)
        [summary] = run_cycle(local, configured_store(local), ["azure"], False, lambda *_: None)
    assert summary.status is RunStatus.FAILED and "invalid JSON" in (summary.error or "")


def test_hanging_server_hits_the_deadline(db_path: Path) -> None:
    with serving("azure") as server:
        server.delay = 3.0
        settings = local_settings(db_path, server, deadline="1s")
        [summary] = run_cycle(
            settings, configured_store(settings), ["azure"], False, lambda *_: None
        )
    assert summary.status is RunStatus.FAILED and "deadline" in (summary.error or "")
