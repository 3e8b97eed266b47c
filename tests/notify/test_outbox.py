"""The outbox delivers each message exactly once, against real peers on 127.0.0.1: an aiosmtpd
SMTP server and a local webhook that answers, hangs, closes after the body, fails or redirects.
Every test counts what the peers received."""

from __future__ import annotations

import asyncio
import datetime as dt
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from apscheduler.schedulers.asyncio import AsyncIOScheduler

from priceadvisor.config import Settings, load_settings
from priceadvisor.notify import Message, outbox
from priceadvisor.notify.email import message_id
from priceadvisor.records import utcnow
from priceadvisor.service.daemon import Daemon
from priceadvisor.service.stores import configured_store
from priceadvisor.store import connections
from priceadvisor.store.handle import Store
from tests.conftest import query
from tests.notify.test_notify import (
    SECRET,
    Inbox,
    Webhook,
    database,  # noqa: F401 - the fixture, for the digest
    email_config,
    free_port,
    smtp_server,
    webhook_server,
)


def settings_for(tmp_path: Path, db: Path, extra: str = "", slack: str | None = None) -> Settings:
    """Retries after 1 s, a 1 s HTTP timeout, and the channels asked for."""
    config = tmp_path / "outbox.toml"
    text = '[notify]\nretry_base = "1s"\nretry_max = "1s"\n' + extra
    if slack is not None:
        text += f'[notify.slack]\nwebhook_url = "{slack}"\n'
    config.write_text('lock_timeout = "1s"\n[http]\ntimeout = "1s"\n' + text)
    return load_settings(config, db=db)


def message(n: int, parts: int = 1) -> Message:
    return Message(
        key=f"test:{n}",
        subject=f"message {n}",
        text=f"message {n}",
        html=f"<p>message {n}</p>",
        slack=[{"text": f"message {n} part {p}"} for p in range(parts)],
    )


def queue(settings: Settings, *messages: Message) -> None:
    with connections.writer(settings.db_path()) as con:
        for m in messages:
            outbox.enqueue(con, "test", m, sorted(outbox.channels(settings)))


def deliver(settings: Settings) -> dict[str, int]:
    return asyncio.run(
        outbox.deliver(settings, configured_store(settings), outbox.channels(settings))
    )


def rows(db: Path) -> list[tuple[Any, ...]]:
    return query(db, "SELECT channel, status, attempts, last_error FROM notifications ORDER BY id")


def texts(bodies: list[dict[str, Any]]) -> list[str]:
    return sorted(b["text"] for b in bodies)


# --- (a) concurrent deliverers ----------------------------------------------------------------


def test_two_concurrent_deliverers_send_each_row_once(db_path: Path, tmp_path: Path) -> None:
    hook = Webhook(on_post=lambda: time.sleep(0.5))  # a slow webhook widens the race
    with webhook_server(hook) as url:
        settings = settings_for(tmp_path, db_path, slack=url)
        queue(settings, message(1), message(2), message(3))

        async def both() -> list[dict[str, int]]:
            available = outbox.channels(settings)
            return await asyncio.gather(
                outbox.deliver(settings, Store(db_path), available),
                outbox.deliver(settings, Store(db_path), available),
            )

        first, second = asyncio.run(both())
    assert texts(hook.received) == [f"message {n} part 0" for n in (1, 2, 3)]
    assert first.get("sent", 0) + second.get("sent", 0) == 3
    assert [r[1] for r in rows(db_path)] == ["sent"] * 3


def test_two_alerts_test_processes_send_each_message_once(db_path: Path, tmp_path: Path) -> None:
    hook = Webhook(on_post=lambda: time.sleep(1.0))
    with webhook_server(hook) as url:
        config = tmp_path / "slack.toml"
        config.write_text(f'[notify.slack]\nwebhook_url = "{url}"\n')
        args = [sys.executable, "-m", "priceadvisor", "--config", str(config), "--db"]
        procs = [
            subprocess.Popen([*args, str(db_path), "alerts", "test"], stdout=subprocess.PIPE)
            for _ in range(2)
        ]
        for proc in procs:
            proc.communicate(timeout=120)
            assert proc.returncode == 0
    keys = query(db_path, "SELECT key FROM notifications WHERE status = 'sent'")
    assert len(keys) == 2  # two test messages, each posted once
    assert len(hook.received) == 2  # one POST per message (5 for 3 before rows were claimed)


def test_daemon_digest_job_and_delivery_job_send_the_digest_once(
    database: Path,  # noqa: F811 - the fixture imported above
    tmp_path: Path,
) -> None:
    hook = Webhook(on_post=lambda: time.sleep(0.5))  # the 20 s webhook of the report, shorter
    with webhook_server(hook) as url:
        settings = settings_for(tmp_path, database, slack=url)
        daemon = Daemon(settings)
        daemon.channels = outbox.channels(settings)

        async def jobs() -> None:
            await asyncio.gather(daemon.digest_job(), daemon.deliver_job(), daemon.deliver_job())

        asyncio.run(jobs())
    assert len(hook.received) == 1 and " · GPU prices " in hook.received[0]["text"]
    assert rows(database) == [("slack", "sent", 1, None)]


def test_a_crashed_claim_expires_and_the_row_is_sent_once(db_path: Path, tmp_path: Path) -> None:
    hook = Webhook()
    with webhook_server(hook) as url:
        settings = settings_for(tmp_path, db_path, slack=url)
        queue(settings, message(1))
        with connections.writer(db_path) as con:  # a deliverer claims the row, then dies
            [(row_id, _)] = outbox.due(con, utcnow())
            assert outbox.claim(con, row_id, utcnow(), 600.0) is not None
            assert outbox.claim(con, row_id, utcnow(), 600.0) is None  # nobody else gets it
        assert deliver(settings) == {}  # still claimed
        with connections.writer(db_path) as con:  # the lease runs out (its end moved into the past)
            con.execute(
                "UPDATE core.notifications SET claimed_until = ? WHERE id = ?",
                [utcnow() - dt.timedelta(seconds=1), row_id],
            )
        assert deliver(settings) == {"sent": 1}
        assert deliver(settings) == {}
    assert len(hook.received) == 1


# --- (b) a POST that may have arrived is never sent again -----------------------------------


@pytest.mark.parametrize("mode", ["hang", "close", "500"])
def test_slack_post_with_unknown_outcome_is_not_resent(
    mode: str, db_path: Path, tmp_path: Path
) -> None:
    hook = Webhook(script=[mode, "ok"])
    with webhook_server(hook) as url:
        settings = settings_for(tmp_path, db_path, slack=url)
        queue(settings, message(1))
        assert deliver(settings) == {"failed": 1}
        time.sleep(1.1)  # past the retry backoff: nothing is due again
        assert deliver(settings) == {}
    assert len(hook.received) == 1
    [(_, status, attempts, error)] = rows(db_path)
    assert (status, attempts) == ("failed", 1)
    assert "not resent" in error and "SECRETPATH" not in error


def test_slack_429_is_retried_until_posted_once(db_path: Path, tmp_path: Path) -> None:
    hook = Webhook(script=["429", "429", "ok"])
    with webhook_server(hook) as url:
        settings = settings_for(tmp_path, db_path, slack=url)
        queue(settings, message(1))
        assert deliver(settings) == {"sent": 1}
    assert hook.answers == [429, 429, 200] and len(hook.posts) == 1


def test_a_split_message_resumes_after_the_parts_already_posted(
    db_path: Path, tmp_path: Path
) -> None:
    # part 0 posted; part 1 rate limited for all 3 attempts (conftest); then everything goes
    hook = Webhook(script=["ok", "429", "429", "429", "ok"])
    with webhook_server(hook) as url:
        settings = settings_for(tmp_path, db_path, slack=url)
        queue(settings, message(1, parts=3))
        assert deliver(settings) == {"retry": 1}
        time.sleep(1.1)
        assert deliver(settings) == {"sent": 1}
    assert texts(hook.posts) == [f"message 1 part {p}" for p in range(3)]


# --- (c) a reader holding the database when "sent" is recorded ------------------------------

HOLD = """
import sys, time, duckdb
con = duckdb.connect(sys.argv[1], read_only=True)
print("holding", flush=True)
time.sleep(float(sys.argv[2]))
"""


def test_a_reader_holding_the_lock_at_mark_time_does_not_cause_a_resend(
    db_path: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    holders: list[subprocess.Popen[str]] = []

    def hold_database() -> None:  # another process opens the file as the webhook answers
        proc = subprocess.Popen(
            [sys.executable, "-c", HOLD, str(db_path), "5"], stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None and proc.stdout.readline().strip() == "holding"
        holders.append(proc)

    hook = Webhook(on_post=hold_database)
    with webhook_server(hook) as url:
        settings = settings_for(tmp_path, db_path, slack=url)  # lock_timeout 1 s < 5 s held
        settings = settings.model_copy(
            update={"http": settings.http.model_copy(update={"timeout": 30.0})}
        )
        queue(settings, message(1))
        assert deliver(settings) == {"sent": 1}
        assert deliver(settings) == {}
    for proc in holders:
        proc.communicate(timeout=30)
    assert len(holders) == 1 and len(hook.received) == 1
    assert rows(db_path) == [("slack", "sent", 1, None)]
    assert "outbox waits for the database" in caplog.text  # the mark did meet the lock


# --- (d) the Message-ID of a resend ---------------------------------------------------------


def test_a_resent_email_keeps_its_message_id(
    db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRICEADVISOR_SMTP_PASSWORD", SECRET)
    port, inbox = free_port(), Inbox()
    settings = load_settings(email_config(tmp_path, port), db=db_path)
    with smtp_server(port, inbox):
        queue(settings, message(1), message(2))
        assert deliver(settings) == {"sent": 2}
        with connections.writer(db_path) as con:  # the crash window: the "sent" mark was lost
            con.execute("UPDATE core.notifications SET status = 'queued' WHERE key LIKE 'test:1:%'")
        time.sleep(0.01)
        assert deliver(settings) == {"sent": 1}
    ids = [mail["Message-ID"] for _, mail, _ in inbox.messages]
    assert ids[0] == ids[2] == message_id("test:1") != ids[1] == message_id("test:2")


# --- (e) one channel's failure never blocks another ------------------------------------------


@pytest.mark.parametrize("fault", ["redirect loop", "invalid port", "hang", "crash"])
def test_a_broken_slack_webhook_does_not_hold_up_email(
    fault: str, db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRICEADVISOR_SMTP_PASSWORD", SECRET)
    port, inbox = free_port(), Inbox()
    hook = Webhook(script=["hang" if fault == "hang" else "redirect"])
    with smtp_server(port, inbox), webhook_server(hook) as served:
        url = served
        if fault == "invalid port":
            url = "http://127.0.0.1:99999/services/T000/B000/SECRETPATH"
        if fault == "crash":  # a channel bug, not a delivery error
            monkeypatch.setattr("priceadvisor.notify.slack.build_client", _explode)
        config = email_config(tmp_path, port)
        config.write_text(
            config.read_text() + f'[notify.slack]\nwebhook_url = "{url}"\n[http]\ntimeout = "1s"\n'
        )
        settings = load_settings(config, db=db_path)
        queue(settings, message(1), message(2), message(3))
        outcomes = deliver(settings)
    assert sorted(mail["Subject"] for _, mail, _ in inbox.messages) == [
        "message 1",
        "message 2",
        "message 3",
    ]
    assert outcomes == {"sent": 3, "failed": 3}
    assert len(hook.received) == (3 if fault in ("redirect loop", "hang") else 0)
    slack = [r for r in rows(db_path) if r[0] == "slack"]
    assert all(status == "failed" and "SECRETPATH" not in error for _, status, _, error in slack)


def _explode(*args: object, **kwargs: object) -> None:
    raise RuntimeError("a bug")


def test_a_send_outlasting_its_claim_is_cut_short_and_not_resent(
    db_path: Path, tmp_path: Path
) -> None:
    hook = Webhook(script=["hang", "ok"], hang=4.0)
    with webhook_server(hook) as url:
        settings = settings_for(tmp_path, db_path, 'claim_lease = "2s"\n', slack=url)
        settings = settings.model_copy(
            update={"http": settings.http.model_copy(update={"timeout": 30.0})}
        )
        queue(settings, message(1))
        assert deliver(settings) == {"failed": 1}  # cut before another deliverer may claim it
        time.sleep(2.1)
        assert deliver(settings) == {}
    assert len(hook.received) == 1
    [(_, _, _, error)] = rows(db_path)
    assert "claim ran out" in error


def test_the_daemon_delivers_every_notify_deliver_every(db_path: Path, tmp_path: Path) -> None:
    settings = settings_for(
        tmp_path, db_path, 'deliver_every = "7s"\n', slack="http://127.0.0.1:9/hook"
    )
    with connections.writer(db_path):
        pass  # an empty, migrated database
    scheduler = AsyncIOScheduler()
    Daemon(settings)._schedule_notifications(scheduler)
    job = scheduler.get_job("outbox")
    assert job is not None and job.trigger.interval.total_seconds() == 7
