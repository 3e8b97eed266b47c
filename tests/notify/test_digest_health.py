"""The digest's data-health heading and Slack line say what the health report found: no
"all providers fresh" over rows that say otherwise, and only the providers with a problem."""

from __future__ import annotations

from pathlib import Path

import pytest

from priceadvisor.cli.app import main
from priceadvisor.collect.adapters import REGISTRY
from priceadvisor.config import Settings, load_settings
from priceadvisor.notify import digest
from priceadvisor.records import RunStatus, utcnow
from priceadvisor.service.stores import configured_store
from priceadvisor.store import connections
from tests.conftest import ingest_quotes


def only(tmp_path: Path, db: Path, *providers: str) -> Settings:
    """Settings with every provider but these disabled."""
    config = tmp_path / "c.toml"
    off = [p for p in REGISTRY if p not in providers]
    config.write_text("".join(f"[providers.{p}]\nenabled = false\n" for p in off))
    return load_settings(config, db=db)


def built(settings: Settings) -> digest.Digest:
    with connections.reader(settings.db) as con:
        found = digest.build(con, settings, utcnow())
    return digest.with_health(found, settings, configured_store(settings))


def test_healthy_is_not_all_fresh(db_path: Path, tmp_path: Path) -> None:
    settings = only(tmp_path, db_path, "lambda", "gcp")  # gcp: no API key
    with pytest.raises(SystemExit):
        main(["--db", str(settings.db), "fetch", "--offline", "-p", "lambda"])
    report = built(settings)
    states = {h["state"] for h in report.health}
    assert report.healthy and "fresh" not in states  # replayed, disabled, not configured
    message = digest.render(report)
    assert "all providers fresh" not in message.text
    assert "all providers fresh" not in message.html


def test_slack_names_only_the_providers_with_a_problem(db_path: Path, tmp_path: Path) -> None:
    settings = only(tmp_path, db_path, "lambda", "gcp", "azure")
    with pytest.raises(SystemExit):
        main(["--db", str(settings.db), "fetch", "--offline", "-p", "lambda"])
    for _ in range(settings.daemon.failing_after):
        ingest_quotes(settings.db, "azure", [], RunStatus.FAILED, "HTTP 500")
    report = built(settings)
    assert not report.healthy
    [line] = [
        b["text"]["text"]
        for p in digest.render(report).slack
        for b in p["blocks"]
        if b["type"] == "section" and b["text"]["text"].startswith("*Data health*")
    ]
    assert line == "*Data health*: azure: failing"


def test_slack_lists_only_providers_with_offers_not_rentable(db_path: Path, tmp_path: Path) -> None:
    # RunPod's recording says some of its GPUs cannot be rented now; every Vast.ai ask can be.
    settings = only(tmp_path, db_path, "vast", "runpod")
    with pytest.raises(SystemExit):
        main(["--db", str(db_path), "fetch", "--offline", "-p", "vast", "-p", "runpod"])
    report = built(settings)
    said = {h["provider"]: h["not_rentable"] for h in report.health if h["not_rentable"]}
    assert said["vast"].startswith("0/") and not said["runpod"].startswith("0/")
    [line] = [
        b["text"]["text"]
        for p in digest.render(report).slack
        for b in p["blocks"]
        if b["type"] == "section" and b["text"]["text"].startswith("*Listed but not rentable*")
    ]
    assert line == f"*Listed but not rentable*: runpod {said['runpod']}"
