"""`priceadvisor run` as a real subprocess against real local HTTP servers."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import duckdb
import pytest

from priceadvisor.collect.adapters import REGISTRY
from priceadvisor.manifest import manifest
from priceadvisor.store import connections, errors
from tests.localserver import RecordingServer, serving

pytestmark = pytest.mark.slow


@dataclass
class Running:
    proc: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)
    port: int | None = None

    def logs(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in list(self.lines) if line.startswith("{")]

    def get(self, path: str) -> tuple[int, bytes]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=5) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()


def config_for(
    tmp_path: Path, servers: dict[str, RecordingServer], every: str, **extra: dict[str, Any]
) -> Path:
    lines = [
        "[daemon]",
        "health_port = 0",
        'shutdown_grace = "2s"',
        "",
        "[http]",
        "attempts = 2",
        'timeout = "3s"',
        "",
    ]
    for provider in sorted(REGISTRY):
        lines.append(f"[providers.{provider}]")
        if provider not in servers:
            lines += ["enabled = false", ""]
            continue
        lines += [f'interval = "{every}"', "request_spacing = 0"]
        lines += [f"{k} = {json.dumps(v)}" for k, v in extra.get(provider, {}).items()]
        endpoints = ", ".join(
            f'{n} = "{servers[provider].base_url}"' for n in manifest(provider).endpoints
        )
        lines += [f"endpoints = {{ {endpoints} }}", ""]
    path = tmp_path / "daemon.toml"
    path.write_text("\n".join(lines))
    return path


@contextmanager
def daemon(config: Path, db: Path, *run_args: str) -> Iterator[Running]:
    env = os.environ | {"PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "priceadvisor",
            "--config",
            str(config),
            "--db",
            str(db),
            "run",
            *run_args,
        ],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    running = Running(proc)
    threading.Thread(target=_collect, args=(running,), daemon=True).start()
    try:
        wait_for(lambda: running.port is not None, 30, "the daemon's health endpoint")
        yield running
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        assert proc.stderr is not None
        proc.stderr.close()


def _collect(running: Running) -> None:
    assert running.proc.stderr is not None
    for line in running.proc.stderr:
        running.lines.append(line.rstrip("\n"))
        if "health and metrics on" in line:
            running.port = int(line.split("127.0.0.1:")[1].split("/")[0])


def wait_for(condition: Any, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def runs(db: Path) -> list[tuple[str, str]]:
    try:
        with connections.reader(db, lock_timeout=10) as con:
            return [
                (p, s)
                for p, s in con.execute(
                    "SELECT provider, status FROM fetch_runs ORDER BY run_id"
                ).fetchall()
            ]
    except errors.StoreError:
        return []


def count(db: Path, provider: str, status: str) -> int:
    return sum(1 for p, s in runs(db) if p == provider and s == status)


@contextmanager
def servers(*providers: str) -> Iterator[dict[str, RecordingServer]]:
    with ExitStack() as stack:
        yield {p: stack.enter_context(serving(p)) for p in providers}


def test_jobs_run_data_lands_health_metrics_and_sigterm_exits_0(
    tmp_path: Path, db_path: Path
) -> None:
    with (
        servers("azure", "oracle", "ecb") as s,
        daemon(config_for(tmp_path, s, "1s"), db_path) as d,
    ):
        wait_for(lambda: all(count(db_path, p, "ok") >= 2 for p in s), 60, "two ok runs each")
        status, body = d.get("/healthz")
        assert status == 200 and json.loads(body)["status"] == "ok"
        status, metrics = d.get("/metrics")
        assert status == 200
        assert b'priceadvisor_fetch_runs_total{outcome="ok",provider="azure"}' in metrics
        assert b"priceadvisor_last_success_timestamp_seconds" in metrics
        # the dashboard reads beside the writer, in the same process
        for _ in range(3):
            status, body = d.get("/api/offers?provider=azure")
            assert status == 200 and json.loads(body)["total"] > 0
        status, body = d.get("/providers")
        assert status == 200 and b"oracle" in body
        d.proc.send_signal(signal.SIGTERM)
        assert d.proc.wait(timeout=30) == 0  # a clean exit 0; the deadline only stops a hang
    logs = d.logs()
    assert any(e.get("provider") == "azure" and e.get("status") == "ok" for e in logs)
    assert all({"ts", "level", "msg"} <= set(e) for e in logs)
    with connections.reader(db_path) as con:
        [(offers,)] = con.execute("SELECT count(*) FROM offers").fetchall()
    assert offers > 0


def test_a_failing_and_a_hanging_provider_do_not_stall_the_others(
    tmp_path: Path, db_path: Path
) -> None:
    with servers("azure", "oracle", "coreweave") as s:
        s["azure"].faults.append(lambda path, q: (500, {}, b"down"))
        s["coreweave"].delay = 30
        config = config_for(tmp_path, s, "1s", coreweave={"deadline": "2s"})
        with daemon(config, db_path) as d:
            wait_for(
                lambda: (
                    count(db_path, "azure", "failed") >= 2 and count(db_path, "oracle", "ok") >= 3
                ),
                60,
                "failures and successes",
            )
            assert d.get("/healthz")[0] == 503  # azure has never succeeded
            s["azure"].faults.clear()  # the source heals
            wait_for(lambda: count(db_path, "azure", "ok") >= 1, 60, "azure to recover")
            wait_for(lambda: count(db_path, "coreweave", "failed") >= 1, 60, "the deadline")
            d.proc.send_signal(signal.SIGTERM)
            assert d.proc.wait(timeout=15) == 0
    errors = [e for e in d.logs() if e.get("provider") == "coreweave" and e["level"] != "info"]
    assert any("deadline" in e["msg"] for e in errors)


READS = 12


def test_readers_during_repeated_ingests_never_fail(tmp_path: Path, db_path: Path) -> None:
    """Every read succeeds and sees whole snapshots, however slow the machine: no read counts
    against a clock, only a generous deadline for the daemon to keep ingesting meanwhile."""
    problems: list[str] = []
    seen: list[dict[str, tuple[int, int]]] = []
    with servers("azure", "oracle") as s, daemon(config_for(tmp_path, s, "0.5s"), db_path) as d:
        wait_for(lambda: count(db_path, "azure", "ok") >= 1, 60, "a first run")
        first = len(runs(db_path))
        for _ in range(READS):
            try:
                seen.append(snapshot_counts(db_path))
            except errors.StoreError as exc:
                problems.append(str(exc))
            problems += cli_count_problems(db_path)
        wait_for(lambda: len(runs(db_path)) >= first + 2, 120, "ingests during the reads")
        d.proc.send_signal(signal.SIGTERM)
        assert d.proc.wait(timeout=30) == 0
    assert problems == [] and len(seen) == READS
    for counts in seen:  # each provider's offers are exactly its latest complete run's
        assert all(offers == last_run for offers, last_run in counts.values()), counts
    history = runs(db_path)
    # No ingest lost to a reader: every run ingested, bar the run each provider had in flight
    # when SIGTERM came (the daemon fetches providers concurrently, so up to one per provider).
    assert {st for _, st in history} <= {"ok", "abandoned"}
    latest = {provider: i for i, (provider, _) in enumerate(history)}
    assert all(latest[p] == i for i, (p, st) in enumerate(history) if st == "abandoned"), history
    assert not any("could not store the fetch" in e["msg"] for e in d.logs())


def snapshot_counts(db: Path) -> dict[str, tuple[int, int]]:
    """Per provider, in one read: (current offers, offers_seen of its latest ok run)."""
    with connections.reader(db, lock_timeout=30) as con:
        rows = con.execute("""
            SELECT provider, (SELECT count(*) FROM offers o WHERE o.provider = r.provider),
                   arg_max(offers_seen, run_id)
            FROM fetch_runs r WHERE status = 'ok' GROUP BY provider""").fetchall()
    return {provider: (offers, last_run) for provider, offers, last_run in rows}


def cli_count_problems(db: Path) -> list[str]:
    cli = subprocess.run(
        [
            sys.executable,
            "-m",
            "priceadvisor",
            "--db",
            str(db),
            "sql",
            "-f",
            "json",
            "select count(*) as n from offers",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return [] if cli.returncode == 0 else [cli.stderr]


def _started(db: Path, finished: bool) -> bool:
    return count(db, "azure", "ok") > 0 if finished else bool(runs(db))


def test_kill_9_during_ingests_leaves_a_consistent_database(tmp_path: Path, db_path: Path) -> None:
    rng = random.Random(4)
    with servers("azure") as s:
        config = config_for(tmp_path, s, "0.3s")
        for lifetime in range(4):
            with daemon(config, db_path) as d:
                # The first lifetime lets one run finish (a loaded machine may need longer than
                # any fixed pause for that); the others die wherever the random pause ends.
                wait_for(partial(_started, db_path, lifetime == 0), 60, "a run")
                time.sleep(rng.uniform(0.2, 1.5))
                d.proc.send_signal(signal.SIGKILL)
                d.proc.wait(timeout=15)
    with connections.writer(db_path) as con:  # the next start: opens, marks abandoned runs
        statuses = dict(
            con.execute("SELECT status, count(*) FROM core.fetch_runs GROUP BY 1").fetchall()
        )
        orphans = con.execute("""
            SELECT count(*) FROM core.price_intervals p
            LEFT JOIN core.fetch_runs r ON r.run_id = p.opened_run
            WHERE r.status IS NULL OR r.status NOT IN ('ok', 'partial')""").fetchone()
        [(open_now, last_ok)] = con.execute("""
            SELECT (SELECT count(*) FROM core.price_intervals WHERE valid_to IS NULL),
                   (SELECT offers_seen FROM core.fetch_runs WHERE status = 'ok'
                    ORDER BY run_id DESC LIMIT 1)""").fetchall()
    assert "running" not in statuses and statuses.get("ok", 0) >= 1
    assert orphans == (0,)  # no half-written snapshot is visible
    assert open_now == last_ok
    con = duckdb.connect(str(db_path), read_only=True)
    con.close()


def test_weekly_digest_catches_up_once_and_not_again_after_restart(
    tmp_path: Path, db_path: Path
) -> None:
    from tests.notify.test_notify import Webhook, webhook_server

    hook = Webhook(fail_first=0)
    with servers("azure") as s, webhook_server(hook) as url:
        config = config_for(tmp_path, s, "1s")
        config.write_text(
            config.read_text() + f'\n[notify.slack]\nwebhook_url = "{url}"\n'
            '[digest]\ncron = "0 0 * * mon"\ntimezone = "Europe/Berlin"\n'
        )
        with daemon(config, db_path) as d:
            try:
                wait_for(lambda: len(hook.posts) >= 1, 30, "the caught-up digest")
            except AssertionError:
                raise AssertionError("\n".join(d.lines[-15:])) from None
            d.proc.send_signal(signal.SIGTERM)
            assert d.proc.wait(timeout=15) == 0
        with daemon(config, db_path) as d:  # restarted: this week's digest is already sent
            try:
                wait_for(lambda: count(db_path, "azure", "ok") >= 3, 30, "more fetches")
            except AssertionError:
                raise AssertionError("\n".join(d.lines[-10:]) + repr(runs(db_path))) from None
            d.proc.send_signal(signal.SIGTERM)
            assert d.proc.wait(timeout=15) == 0
    assert len(hook.posts) == 1 and " · GPU prices " in hook.posts[0]["text"]
    with connections.reader(db_path) as con:
        rows = con.execute("SELECT kind, channel, status FROM notifications").fetchall()
    assert rows == [("digest", "slack", "sent")]
    assert not any("SECRETPATH" in line for line in d.lines)


def test_run_offline_exports_parquet_after_each_fetch(tmp_path: Path, db_path: Path) -> None:
    export = tmp_path / "export"
    config = tmp_path / "offline.toml"
    disabled = "".join(
        f"[providers.{p}]\nenabled = false\n" for p in REGISTRY if p not in ("ecb", "oracle")
    )
    config.write_text(f'[daemon]\nhealth_port = 0\nexport_dir = "{export}"\n' + disabled)
    with daemon(config, db_path, "--offline") as d:
        wait_for(
            lambda: (
                count(db_path, "oracle", "ok") >= 1
                and count(db_path, "ecb", "ok") >= 1
                and (export / "offers.parquet").exists()
            ),
            60,
            "offline fetches and an export",
        )
        d.proc.send_signal(signal.SIGTERM)
        assert d.proc.wait(timeout=15) == 0
    con = duckdb.connect()
    [(n,)] = con.execute(f"SELECT count(*) FROM read_parquet('{export}/offers.parquet')").fetchall()
    assert n == 32  # the recorded Oracle offers
