"""`fetch --record DIR`: a live fetch writes what it receives as recordings that replay to the
same offers, and never writes a credential."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import tomllib
from pathlib import Path
from typing import Any

import httpx
import pytest

from priceadvisor.cli.app import main
from priceadvisor.collect import offline
from priceadvisor.collect.adapters import adapter_class
from priceadvisor.collect.fetch import fetch_one, plan, run_cycle
from priceadvisor.collect.http import HttpSession, build_client
from priceadvisor.collect.recorder import Recorder
from priceadvisor.config import Settings
from priceadvisor.manifest import manifest
from priceadvisor.records import RawQuote, RunStatus
from priceadvisor.service.stores import configured_store
from tests.localserver import local_settings, serving

KEY = "k3y-SECRET-0451"  # the GCP API key travels in the query string


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _live(settings: Settings, provider: str, record: Path) -> list[RawQuote]:
    result = asyncio.run(
        fetch_one(settings, plan(settings, provider, False), False, lambda *_: None, None, record)
    )
    assert result.status is RunStatus.OK, result.error
    return result.quotes


def _replayed(settings: Settings, provider: str, folder: Path) -> list[RawQuote]:  # folder/<id>
    """The adapter fetched from the written recordings alone: no key, no server."""

    async def run() -> list[RawQuote]:
        transport = offline.transport(provider, folder)
        async with build_client(settings.http, transport=transport) as client:
            adapter = adapter_class(provider)(
                manifest(provider), manifest(provider).endpoints, None
            )
            return (await adapter.fetch(HttpSession(client, settings.http), lambda _: None)).quotes

    return asyncio.run(run())


def _comparable(quotes: list[RawQuote]) -> list[Any]:
    return sorted(repr(dataclasses.replace(q, source_url=None)) for q in quotes)


@pytest.mark.parametrize("provider", ["gcp", "azure", "aws"])
def test_recorded_responses_replay_to_the_same_offers(
    db_path: Path, tmp_path: Path, provider: str
) -> None:
    record = tmp_path / "rec"
    with serving(provider) as server:
        settings = local_settings(db_path, server, api_key=KEY)
        live = _live(settings, provider, record)
    assert live
    folder = record / provider
    index = tomllib.loads((folder / "recordings.toml").read_text())
    assert len(index["response"]) == len(list(folder.glob("*-*.*"))) >= 1
    assert _comparable(_replayed(settings, provider, record)) == _comparable(live)
    if provider == "gcp":
        assert any(KEY in r for r in server.requests)  # the key was sent ...
        assert all(KEY.encode() not in body for body in _files(record).values())  # ... not kept
        assert all("key" not in e.get("query", {}) for e in index["response"])


def test_run_cycle_records_and_refuses_to_overwrite(db_path: Path, tmp_path: Path) -> None:
    record = tmp_path / "rec"
    with serving("gcp") as server:
        settings = local_settings(db_path, server, api_key=KEY)
        [summary] = run_cycle(
            settings, configured_store(settings), ["gcp"], False, lambda *_: None, record
        )
    assert summary.status is RunStatus.OK
    assert (record / "gcp" / "README.md").read_text().count("- `") == len(
        tomllib.loads((record / "gcp" / "recordings.toml").read_text())["response"]
    )
    with pytest.raises(SystemExit) as done:
        main(["--db", str(db_path), "fetch", "--provider", "gcp", "--record", str(record)])
    assert done.value.code == 2  # refused before any request: a reviewed recording stays


def test_record_with_offline_is_a_usage_error(
    db_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--db", str(db_path), "fetch", "--offline", "--record", str(tmp_path)])
    assert done.value.code == 2 and "not with --offline" in capsys.readouterr().err


def test_post_bodies_and_echoed_credentials_are_redacted(tmp_path: Path) -> None:
    tape = Recorder("x", tmp_path, {"api": "https://api.example.com/v1"}, ("user:s3cretpass",))
    request = httpx.Request(
        "POST",
        "https://api.example.com/v1/graphql?token=abc&page=2",
        json={"query": "{ gpuTypes { id } }", "auth": "s3cretpass"},
    )
    tape.record(httpx.Response(200, json={"echo": "s3cretpass", "ok": 1}, request=request))
    tape.record(httpx.Response(200, json={"ok": 2}, request=request))  # the same request again
    tape.finish(dt.datetime(2026, 11, 27, tzinfo=dt.UTC))
    [entry] = tomllib.loads((tmp_path / "recordings.toml").read_text())["response"]
    assert entry["method"] == "POST" and entry["path"] == "/graphql"
    assert entry["query"] == {"page": "2"}  # token= left out
    assert "s3cretpass" not in entry["body_contains"] and "gpuTypes" in entry["body_contains"]
    written = b"".join(_files(tmp_path).values())
    assert b"s3cretpass" not in written and b"REDACTED" in written
