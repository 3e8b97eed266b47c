"""The outbox: every digest and alert is a row with an idempotency key, queued until
a channel takes it, retried with exponential backoff while the channel is down.

Enqueueing is idempotent (the key is unique: the same digest week or alert state is queued once
whatever happens), and a row is marked sent in its own transaction right after the channel
accepted it, so a restart resends nothing already marked. The one gap is a crash between a
channel accepting a message and that mark: delivery is at-least-once there, and the email
Message-ID, derived from the key, lets the receiving side recognise the resend.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import logging
from dataclasses import asdict
from pathlib import Path

import duckdb

from priceadvisor.config import NotifySettings, Settings, lookup_secret
from priceadvisor.models import utcnow
from priceadvisor.notify import Channel, DeliveryError, Message
from priceadvisor.notify.email import EmailChannel
from priceadvisor.notify.slack import SlackChannel
from priceadvisor.store import db as store

log = logging.getLogger(__name__)


def channels(settings: Settings) -> dict[str, Channel]:
    """The configured channels; a channel whose secret is missing is left out (and logged)."""
    out: dict[str, Channel] = {}
    notify = settings.notify
    if notify.email is not None:
        password = notify.email.password or lookup_secret(settings, notify.email.password_env)
        out["email"] = EmailChannel(notify.email, password)
    if notify.slack is not None:
        webhook = notify.slack.webhook_url or lookup_secret(settings, notify.slack.webhook_env)
        if webhook is None:
            log.warning("Slack not configured: set %s", notify.slack.webhook_env)
        else:
            out["slack"] = SlackChannel(webhook, settings.http)
    return out


def enqueue(
    con: duckdb.DuckDBPyConnection, kind: str, message: Message, channel_names: list[str]
) -> int:
    """Queue the message once per channel; returns how many rows were new."""
    images = {cid: base64.b64encode(png).decode() for cid, png in message.images.items()}
    payload = json.dumps(asdict(message) | {"images": images})
    before = _count(con)
    con.executemany(
        "INSERT INTO core.notifications (kind, channel, key, payload, created_at, status, "
        "attempts, next_attempt_at) VALUES (?, ?, ?, ?, ?, 'queued', 0, ?) "
        "ON CONFLICT (key) DO NOTHING",
        [
            (kind, name, f"{message.key}:{name}", payload, utcnow(), utcnow())
            for name in channel_names
        ],
    )
    return _count(con) - before


def _count(con: duckdb.DuckDBPyConnection) -> int:
    row = con.execute("SELECT count(*) FROM core.notifications").fetchone()
    return int(row[0]) if row else 0


def due(con: duckdb.DuckDBPyConnection, now: dt.datetime) -> list[tuple[int, str, Message]]:
    rows = con.execute(
        "SELECT id, channel, payload FROM core.notifications WHERE status = 'queued' "
        "AND next_attempt_at <= ? ORDER BY id",
        [now],
    ).fetchall()
    return [(int(i), str(ch), _message(p)) for i, ch, p in rows]


def _message(payload: str) -> Message:
    fields = json.loads(payload)
    fields["images"] = {cid: base64.b64decode(png) for cid, png in fields["images"].items()}
    return Message(**fields)


async def deliver(settings: Settings, path: Path, available: dict[str, Channel]) -> dict[str, int]:
    """Send what is due; returns counts by outcome (sent, retry, failed, no_channel)."""
    with store.writer(path, settings.lock_timeout) as con:
        pending = due(con, utcnow())
    outcomes: dict[str, int] = {}
    for row_id, name, message in pending:
        outcome = await _deliver_one(settings, path, available.get(name), row_id, message)
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    return outcomes


async def _deliver_one(
    settings: Settings, path: Path, channel: Channel | None, row_id: int, message: Message
) -> str:
    if channel is None:
        _mark(settings, path, row_id, error="channel not configured", notify=settings.notify)
        return "no_channel"
    try:
        await channel.send(message)
    except DeliveryError as exc:
        failed = _mark(settings, path, row_id, error=str(exc), notify=settings.notify)
        log.warning(
            "delivery failed (%s): %s",
            "gave up" if failed else "will retry",
            exc,
            extra={"job": f"outbox:{channel.name}"},
        )
        return "failed" if failed else "retry"
    with store.writer(path, settings.lock_timeout) as con:
        con.execute(
            "UPDATE core.notifications SET status = 'sent', sent_at = ?, "
            "attempts = attempts + 1, last_error = NULL WHERE id = ?",
            [utcnow(), row_id],
        )
    return "sent"


def _mark(settings: Settings, path: Path, row_id: int, error: str, notify: NotifySettings) -> bool:
    """Record a failed attempt; back off exponentially; give up after max_attempts."""
    with store.writer(path, settings.lock_timeout) as con:
        row = con.execute(
            "SELECT attempts FROM core.notifications WHERE id = ?", [row_id]
        ).fetchone()
        attempts = (int(row[0]) if row else 0) + 1
        give_up = attempts >= notify.max_attempts
        wait = min(notify.retry_max, notify.retry_base * 2 ** (attempts - 1))
        con.execute(
            "UPDATE core.notifications SET attempts = ?, last_error = ?, status = ?, "
            "next_attempt_at = ? WHERE id = ?",
            [
                attempts,
                error[:500],
                "failed" if give_up else "queued",
                utcnow() + dt.timedelta(seconds=wait),
                row_id,
            ],
        )
    return give_up
