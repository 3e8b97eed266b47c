"""Hostile responses from a real local server: gzip bombs, oversized bodies, redirects to another
origin, JSON nested past the parser's recursion limit. Each ends as a failed run with a one-line
reason, and the offers of the last good run stay as they were."""

from __future__ import annotations

import logging
import zlib
from pathlib import Path
from urllib.parse import urlencode

import pytest

from priceadvisor.collect import offline
from priceadvisor.collect.fetch import run_cycle
from priceadvisor.records import RunStatus
from priceadvisor.service.stores import configured_store
from tests.conftest import query
from tests.localserver import RecordingServer, local_settings, serving

JSON = {"Content-Type": "application/json"}


def gzip_bomb(decompressed: int) -> bytes:
    """A gzip body that inflates to `decompressed` bytes of JSON whitespace (about 1000:1),
    built chunk by chunk so the test itself never holds the inflated size."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)  # wbits 31: gzip framing
    chunk = b" " * 2**20
    parts = [packer.compress(b"[")]
    parts += [packer.compress(chunk) for _ in range(decompressed // len(chunk))]
    return b"".join([*parts, packer.compress(b"]"), packer.flush()])


def offers(db: Path) -> list[tuple[object, ...]]:
    return query(db, "SELECT * EXCLUDE (last_seen) FROM offers ORDER BY ALL")


def fails_cleanly(server: RecordingServer, db: Path, **provider: object) -> str:
    """A good run, then the fault's run: failed, one line, the good run's offers unchanged."""
    settings = local_settings(db, server, **provider)
    faults, server.faults[:] = list(server.faults), []
    [good] = run_cycle(settings, configured_store(settings), ["azure"], False, lambda *_: None)
    assert good.status is RunStatus.OK, good.error
    before = offers(db)
    server.faults[:] = faults
    [bad] = run_cycle(settings, configured_store(settings), ["azure"], False, lambda *_: None)
    assert bad.status is RunStatus.FAILED
    assert bad.error and "\n" not in bad.error
    assert offers(db) == before
    return bad.error


def test_a_gzip_bomb_is_abandoned_at_the_configured_cap(db_path: Path) -> None:
    bomb = gzip_bomb(64 * 2**20)
    assert len(bomb) < 100_000
    with serving("azure") as server:
        server.faults.append(lambda path, q: (200, JSON | {"Content-Encoding": "gzip"}, bomb))
        error = fails_cleanly(server, db_path, max_response_size="1 MiB")
    assert "exceeds 1 MiB decompressed" in error and "/api/retail/prices" in error


def test_a_gzip_bomb_past_the_manifest_default_fails_too(db_path: Path) -> None:
    bomb = gzip_bomb(80 * 2**20)  # the default cap is 64 MiB
    with serving("azure") as server:
        server.faults.append(lambda path, q: (200, JSON | {"Content-Encoding": "gzip"}, bomb))
        error = fails_cleanly(server, db_path)
    assert "exceeds 64 MiB decompressed" in error


def test_an_oversized_plain_body_fails(db_path: Path) -> None:
    body = b'{"Items": [' + b" " * (2 * 2**20) + b"]}"
    with serving("azure") as server:
        server.faults.append(lambda path, q: (200, JSON, body))
        error = fails_cleanly(server, db_path, max_response_size="1 MiB")
    assert "exceeds 1 MiB" in error


def test_a_redirect_to_another_port_is_not_followed(db_path: Path) -> None:
    with serving("azure") as server, serving("azure") as elsewhere:
        target = f"{elsewhere.base_url}/api/retail/prices"
        server.faults.append(lambda path, q: (302, {"Location": target}, b""))
        error = fails_cleanly(server, db_path)
    assert "redirects to another origin" in error and elsewhere.base_url in error
    assert elsewhere.requests == []


def test_a_redirect_within_the_origin_is_followed(db_path: Path) -> None:
    def moved(path: str, q: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        if not path.startswith("/moved"):
            return 301, {"Location": "/moved" + path + "?" + urlencode(q)}, b""
        found = offline.find("azure", "GET", path.removeprefix("/moved"), q)
        assert found is not None
        return 200, JSON, found.file.read_bytes()

    with serving("azure") as server:
        server.faults.append(moved)
        local = local_settings(db_path, server)
        [summary] = run_cycle(local, configured_store(local), ["azure"], False, lambda *_: None)
    assert summary.status is RunStatus.OK, summary.error
    assert summary.offers_seen > 0
    assert sum(r.startswith("/moved/api/retail/prices") for r in server.requests) == 3


def test_redirects_none_refuses_even_a_same_origin_redirect(db_path: Path) -> None:
    with serving("azure") as server:
        server.faults.append(
            lambda path, q: (302, {"Location": "/elsewhere"}, b"") if path != "/elsewhere" else None
        )
        error = fails_cleanly(server, db_path, redirects="none")
    assert "redirects (HTTP 302); not followed" in error


def test_json_nested_past_the_recursion_limit_is_a_clean_failure(
    db_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    deep = b"[" * 200_000 + b"]" * 200_000
    with serving("azure") as server:
        server.faults.append(lambda path, q: (200, JSON, deep))
        with caplog.at_level(logging.INFO):
            error = fails_cleanly(server, db_path)
    assert "nested too deeply" in error
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
