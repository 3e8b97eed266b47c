"""Scale-out end to end: two `priceadvisor run` processes, each owning its providers, and CLI
fetches write one lake (PostgreSQL catalog, data files on a local S3 server) while readers
query in a loop; one daemon is killed with SIGKILL mid-run and restarted. No reader fails, the
history keeps its invariants, and the digest both daemons find due is emailed once."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from priceadvisor.config import load_settings
from priceadvisor.service.stores import configured_store
from priceadvisor.store import connections
from tests.history import violations_in
from tests.notify.test_notify import SECRET, Inbox, email_config, free_port, smtp_server
from tests.s3 import KEY_ID, S3Server
from tests.s3 import SECRET as S3_SECRET
from tests.service.test_daemon import config_for, count, daemon, runs, servers, wait_for

pytestmark = pytest.mark.slow


def lake_config(
    tmp_path: Path, base: Path, name: str, owned: list[str], lake_lines: str, notify: str
) -> Path:
    text = base.read_text().replace(
        "[daemon]\n", f"[daemon]\nproviders = {owned!r}\n".replace("'", '"'), 1
    )
    path = tmp_path / f"{name}.toml"
    path.write_text('storage = "ducklake"\n' + text + lake_lines + notify)
    return path


def lake_section(pg_dsn: str, s3: S3Server, bucket: str) -> str:
    return (
        f'\n[lake]\ncatalog = "postgres:{pg_dsn}"\ndata_path = "{bucket}/prices/"\n'
        f'[lake.s3]\nendpoint = "{s3.endpoint}"\nregion = "us-east-1"\nurl_style = "path"\n'
        "use_ssl = false\n"
    )


def read_loop(target: object, stop: threading.Event, problems: list[str], reads: list[int]) -> None:
    while not stop.is_set():
        try:
            with connections.reader(target) as con:  # type: ignore[arg-type]
                [(offers,)] = con.execute("SELECT count(*) FROM offers").fetchall()
            reads.append(offers)
        except Exception as exc:
            problems.append(f"{type(exc).__name__}: {exc}")
        time.sleep(0.2)


def cli_fetch(config: Path, provider: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "priceadvisor", "--config", str(config), "fetch", "-p", provider],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_two_daemons_a_cli_fetch_and_readers_share_one_lake(
    tmp_path: Path,
    pg_dsn: str,
    s3_server: S3Server,
    s3_bucket: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", S3_SECRET)
    monkeypatch.setenv("PRICEADVISOR_SMTP_PASSWORD", SECRET)
    inbox, smtp_port = Inbox(), free_port()
    notify = email_config(tmp_path, smtp_port).read_text() + (
        '\n[digest]\ncron = "0 0 * * mon"\ntimezone = "UTC"\n'  # due this week: both catch up
        '[alerts]\nfor_fetches = 1\n[[alerts.rules]]\nkind = "new_offer"\n'
    )
    lake_lines = lake_section(pg_dsn, s3_server, s3_bucket)
    rng = random.Random(18)
    with servers("azure", "oracle") as s, smtp_server(smtp_port, inbox):
        base = config_for(tmp_path, s, "1s")
        first = lake_config(tmp_path, base, "first", ["azure"], lake_lines, notify)
        second = lake_config(tmp_path, base, "second", ["oracle"], lake_lines, notify)
        target = configured_store(load_settings(first)).where
        with connections.writer(target):
            pass  # the lake's first migration, so both daemons start within the helper's wait
        stop, problems, reads = threading.Event(), [], []
        db = tmp_path / "unused.duckdb"  # --db is ignored with storage = "ducklake"
        with daemon(first, db) as a, daemon(second, db) as b:
            reader = threading.Thread(target=read_loop, args=(target, stop, problems, reads))
            reader.start()
            try:
                wait_for(lambda: count(target, "oracle", "ok") >= 2, 180, "oracle runs")
                fetched = cli_fetch(first, "oracle")  # a writer of a daemon's provider
                assert fetched.returncode == 0, fetched.stderr
                wait_for(lambda: count(target, "azure", "ok") >= 2, 180, "azure runs")
                time.sleep(rng.uniform(0.2, 1.5))
                a.proc.send_signal(signal.SIGKILL)  # wherever it is: fetching or ingesting
                a.proc.wait(timeout=30)
            finally:
                stop.set()
                reader.join(timeout=120)
            logs = a.lines + b.lines
        with daemon(first, db) as again, daemon(second, db) as b2:  # the killed one restarts
            done = count(target, "azure", "ok")
            wait_for(lambda: count(target, "azure", "ok") >= done + 1, 180, "a run after restart")
            wait_for(lambda: len(inbox.messages) >= 1, 60, "the digest")
            for d in (again, b2):
                d.proc.send_signal(signal.SIGTERM)
                assert d.proc.wait(timeout=60) == 0
            logs += again.lines + b2.lines
    assert problems == [] and len(reads) > 0
    with connections.reader(target) as con:
        assert violations_in(con) == dict.fromkeys(violations_in(con), 0)
        statuses = {
            st for _, st in con.execute("SELECT provider, status FROM fetch_runs").fetchall()
        }
        notifications = con.execute(
            "SELECT kind, channel, status, count(*) FROM notifications GROUP BY ALL"
        ).fetchall()
    assert "running" not in statuses  # the killed daemon's run was marked abandoned
    assert ("digest", "email", "sent", 1) in notifications
    assert all(n == 1 for *_, n in notifications if _[0] == "digest")
    ids = [message["Message-ID"] for _, message, _ in inbox.messages]
    assert len(ids) == len(set(ids))  # nothing sent twice
    digests = [m for _, m, _ in inbox.messages if "GPU prices" in str(m["Subject"])]
    assert len(digests) == 1
    assert not any(S3_SECRET in line or SECRET in line for line in logs)
    assert {p for p, _ in runs(target)} == {"azure", "oracle"}
