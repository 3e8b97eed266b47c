"""What a fetch reports when the network is gone: one short cause per provider, retries counted
rather than printed, and durations that are the run's."""

from __future__ import annotations

import io
import logging
import socket
import subprocess
import sys
from pathlib import Path

from rich.console import Console

from priceadvisor.cli.progress import FetchProgress
from priceadvisor.collect.adapters.base import summarise_failures
from priceadvisor.collect.fetch import run_cycle
from priceadvisor.config import load_settings
from priceadvisor.manifest import manifest
from priceadvisor.records import RunStatus
from priceadvisor.service.stores import configured_store
from tests.localserver import local_settings, serving


def closed_port() -> int:
    """A port nothing listens on: connections are refused at once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def unreachable_config(tmp_path: Path, provider: str) -> Path:
    url = f"http://127.0.0.1:{closed_port()}"
    endpoints = ", ".join(f'{name} = "{url}"' for name in manifest(provider).endpoints)
    path = tmp_path / "config.toml"
    path.write_text(f"[providers.{provider}]\nendpoints = {{ {endpoints} }}\n")
    return path


def test_an_unreachable_source_is_one_short_cause_with_retries_counted(db_path: Path) -> None:
    port = closed_port()
    endpoints = {name: f"http://127.0.0.1:{port}" for name in manifest("aws").endpoints}
    settings = load_settings(db=db_path, providers={"aws": {"endpoints": endpoints}})
    [summary] = run_cycle(settings, configured_store(settings), ["aws"], False, lambda *_: None)
    assert summary.status is RunStatus.FAILED
    error = summary.error or ""
    assert error.startswith(f"{len(manifest('aws').regions)} scopes: cannot reach 127.0.0.1 (")
    assert error.count("cannot reach") == 3  # on-demand (every region), spot feed, advisor
    assert error.endswith("(2 retries)")
    assert "\n" not in error and "http://" not in error
    assert summary.requests == 3  # one host: later requests do not retry what already failed


def test_the_cli_prints_no_line_per_retry(tmp_path: Path) -> None:
    """A real process, so that its logging is the CLI's own (not pytest's capture)."""
    config = unreachable_config(tmp_path, "azure")
    config.write_text(config.read_text() + "\n[http]\nattempts = 3\n")
    command = [sys.executable, "-m", "priceadvisor", "--config", str(config)]
    command += ["--db", str(tmp_path / "x.duckdb"), "fetch", "-p", "azure", "-f", "csv"]
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert "cannot reach 127.0.0.1 (All connection attempts failed) (2 retries)" in done.stdout
    assert "retry" not in done.stderr and "stamina" not in done.stderr


def test_a_run_lasts_its_fetch_not_only_its_ingest(db_path: Path) -> None:
    with serving("ecb") as server:
        server.delay = 1.0
        local = local_settings(db_path, server)
        [summary] = run_cycle(local, configured_store(local), ["ecb"], False, lambda *_: None)
    assert summary.status is RunStatus.OK
    assert summary.duration_s >= 1.0


def test_progress_routes_logs_through_its_console_and_drops_retry_lines() -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, width=120)
    root = logging.getLogger()
    before = root.handlers[:]
    with FetchProgress(console, ["azure"]) as progress:
        logging.getLogger("priceadvisor.collect.http").info("retry 2/4 of https://h/p")
        logging.getLogger("priceadvisor.other").warning("a warning worth seeing")
        progress.update("azure", "retry 2/4 of h: refused [/]")  # not read as markup
    assert root.handlers == before
    assert "a warning worth seeing" in buffer.getvalue()
    assert "retry 2/4 of https" not in buffer.getvalue()


def test_many_scopes_with_one_cause_are_one_clause() -> None:
    failed = {f"r{i}|on_demand": "cannot reach h (refused)" for i in range(24)}
    failed["spot"] = "spot feed: HTTP 500 from https://s/spot.json"
    assert summarise_failures(failed) == (
        "24 scopes: cannot reach h (refused); spot: spot feed: HTTP 500 from https://s/spot.json"
    )
    assert len(summarise_failures({str(i): f"cause {i} " * 20 for i in range(20)})) == 300
