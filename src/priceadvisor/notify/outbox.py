"""The outbox: every digest and alert is a row with an idempotency key, queued until a channel
takes it, retried with exponential backoff while the channel is down.

Enqueueing is idempotent (the key is unique: the same digest week or alert state is queued once
whatever happens). Delivery is exactly once outside one crash window:
  - a deliverer claims a row (`claimed_until` = now + `notify.claim_lease`) in one transaction
    before sending it, so concurrent deliverers (the daemon's digest and delivery jobs, a CLI
    `digest --send`, two `alerts test` runs, several daemons on one lake) never send the same
    row (on a lake, the losing commit conflicts and is decided again on a fresh snapshot);
  - the outcome is recorded right after the channel answered, waiting for the database lock as
    long as the lease lasts, so a reader holding the database does not make a delivered message
    look undelivered;
  - a channel that cannot say whether it delivered (a Slack POST that timed out after sending)
    is not retried: the row fails with that reason (at most once there).
The crash window: a process killed between the channel accepting a message and the "sent"
mark leaves the row claimed; the claim expires after the lease and the row is sent again. The
email Message-ID, derived from the key only, lets the receiving side recognise that resend.
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import json
import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import duckdb

from priceadvisor.config import Settings, lookup_secret
from priceadvisor.notify import Channel, DeliveryError, Message
from priceadvisor.notify.email import EmailChannel
from priceadvisor.notify.slack import SlackChannel
from priceadvisor.records import utcnow
from priceadvisor.store import errors, transactions
from priceadvisor.store.handle import Store
from priceadvisor.store.ids import next_id

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
    """`enqueue_within` in a transaction of its own, which also logs the ids it takes; run
    again on a lake when another writer's commit wins (transactions.retried)."""
    return transactions.retried(con, lambda c: enqueue_within(c, kind, message, channel_names))


def enqueue_within(
    con: duckdb.DuckDBPyConnection, kind: str, message: Message, channel_names: list[str]
) -> int:
    """Inside the caller's transaction (store.ids: an id is taken in the transaction that writes
    its row), queue the message once per channel; returns how many rows were new. A key already
    queued is skipped by a look-up, not ON CONFLICT: a lake has no unique key to conflict on
    (in a DuckDB file the UNIQUE constraint stays as a backstop)."""
    images = {cid: base64.b64encode(png).decode() for cid, png in message.images.items()}
    payload = json.dumps(asdict(message) | {"images": images})
    new = 0
    for name in channel_names:
        key = f"{message.key}:{name}"
        if _queued(con, key):
            continue
        row_id, now = next_id(con, "core.notification_ids"), utcnow()
        con.execute(
            "INSERT INTO core.notifications (id, kind, channel, key, payload, created_at, "
            "status, attempts, next_attempt_at) VALUES (?, ?, ?, ?, ?, ?, 'queued', 0, ?)",
            [row_id, kind, name, key, payload, now, now],
        )
        new += 1
    return new


def _queued(con: duckdb.DuckDBPyConnection, key: str) -> bool:
    row = con.execute("SELECT count(*) FROM core.notifications WHERE key = ?", [key]).fetchone()
    return bool(row and row[0])


@dataclass(frozen=True, slots=True)
class Claim:
    """A row this process may send until its lease ends (`deadline`, monotonic seconds)."""

    row_id: int
    message: Message
    parts_sent: int
    deadline: float


# Queued, due, and not claimed by a deliverer whose lease still runs.
_DUE = (
    "status = 'queued' AND next_attempt_at <= $now "
    "AND (claimed_until IS NULL OR claimed_until <= $now)"
)


def due(con: duckdb.DuckDBPyConnection, now: dt.datetime) -> list[tuple[int, str]]:
    """(id, channel) of what may be sent now, oldest first."""
    sql = f"SELECT id, channel FROM core.notifications WHERE {_DUE} ORDER BY id"
    return [(int(i), str(ch)) for i, ch in con.execute(sql, {"now": now}).fetchall()]


def claim(
    con: duckdb.DuckDBPyConnection, row_id: int, now: dt.datetime, lease: float
) -> Claim | None:
    """Take the row for `lease` seconds, or None when it is no longer due (sent, or claimed
    by another deliverer meanwhile). A conditional UPDATE and the read of what it took, in one
    transaction: two deliverers cannot both take the row. On a lake the second commit
    conflicts; it is retried on a fresh snapshot, where the row is no longer due."""

    def take(con: duckdb.DuckDBPyConnection) -> tuple[str, int] | None:
        updated = con.execute(
            f"UPDATE core.notifications SET claimed_until = $until WHERE id = $id AND {_DUE}",
            {"until": now + dt.timedelta(seconds=lease), "id": row_id, "now": now},
        ).fetchone()
        if not (updated and updated[0]):
            return None
        row = con.execute(
            "SELECT payload, coalesce(parts_sent, 0) FROM core.notifications WHERE id = ?",
            [row_id],
        ).fetchone()
        return (str(row[0]), int(row[1])) if row else None

    taken = transactions.retried(con, take)
    if taken is None:
        return None
    return Claim(row_id, _message(taken[0]), taken[1], time.monotonic() + lease)


def _message(payload: str) -> Message:
    fields = json.loads(payload)
    fields["images"] = {cid: base64.b64decode(png) for cid, png in fields["images"].items()}
    return Message(**fields)


async def deliver(
    settings: Settings, store: Store, available: dict[str, Channel]
) -> dict[str, int]:
    """Send what is due; returns counts by outcome (sent, retry, failed, no_channel). Each
    channel has its own queue, worked concurrently: a slow or broken channel delays no other."""
    pending = await asyncio.to_thread(_due_now, store)
    queues: dict[str, list[int]] = {}
    for row_id, name in pending:
        queues.setdefault(name, []).append(row_id)
    outcomes: dict[str, int] = {}
    for result in await asyncio.gather(
        *(_deliver_queue(settings, store, available.get(name), ids) for name, ids in queues.items())
    ):
        for outcome in result:
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
    return outcomes


def _claim_lease_left(taken: Claim) -> float:
    """Seconds a send may take: what is left of the lease, less the time to record it."""
    return max(1.0, taken.deadline - time.monotonic()) * 0.9


def _due_now(store: Store) -> list[tuple[int, str]]:
    with store.writer() as con:
        return due(con, utcnow())


def _claim_now(settings: Settings, store: Store, row_id: int) -> Claim | None:
    with store.writer() as con:
        return claim(con, row_id, utcnow(), settings.notify.claim_lease)


async def _deliver_queue(
    settings: Settings, store: Store, channel: Channel | None, ids: list[int]
) -> list[str]:
    """One channel's rows in order; a database that stays busy ends the pass (nothing claimed
    is left behind: the rows stay due for the next one)."""
    outcomes = []
    for row_id in ids:
        try:
            taken = await asyncio.to_thread(_claim_now, settings, store, row_id)
        except errors.StoreError as exc:
            log.warning("delivery postponed: %s", exc, extra={"job": "outbox"})
            break
        if taken is not None:
            outcomes.append(await _deliver_one(settings, store, channel, taken))
    return outcomes


async def _deliver_one(
    settings: Settings, store: Store, channel: Channel | None, taken: Claim
) -> str:
    if channel is None:
        failure = DeliveryError("channel not configured")
        await asyncio.to_thread(_record_failure, settings, store, taken, failure)
        return "no_channel"
    try:
        async with asyncio.timeout(_claim_lease_left(taken)):
            await channel.send(taken.message, taken.parts_sent)
    except DeliveryError as exc:
        failure = exc
    except TimeoutError:  # past the lease another deliverer could take the row: stop here
        failure = DeliveryError("still sending when its claim ran out: not resent", retry=False)
    except Exception as exc:  # a channel bug must not stop the other rows or channels
        log.exception("%s channel crashed", channel.name, extra={"job": f"outbox:{channel.name}"})
        failure = DeliveryError(f"internal error: {type(exc).__name__}", retry=False)
    else:
        await asyncio.to_thread(_record_sent, settings, store, taken)
        return "sent"
    outcome = await asyncio.to_thread(_record_failure, settings, store, taken, failure)
    log.warning(
        "delivery failed (%s): %s",
        "will retry" if outcome == "retry" else "gave up",
        failure,
        extra={"job": f"outbox:{channel.name}"},
    )
    return outcome


def _record_sent(settings: Settings, store: Store, taken: Claim) -> None:
    def write(con: duckdb.DuckDBPyConnection) -> None:
        con.execute(
            "UPDATE core.notifications SET status = 'sent', sent_at = ?, attempts = attempts + 1, "
            "last_error = NULL, claimed_until = NULL WHERE id = ?",
            [utcnow(), taken.row_id],
        )

    _persist(settings, store, taken, write)


def _record_failure(settings: Settings, store: Store, taken: Claim, failure: DeliveryError) -> str:
    """Count the attempt and back off exponentially; give up after max_attempts, or at once
    when resending could deliver twice. Returns the outcome (retry or failed)."""
    notify = settings.notify
    outcome = "retry" if failure.retry else "failed"

    def write(con: duckdb.DuckDBPyConnection) -> None:
        nonlocal outcome
        row = con.execute(
            "SELECT attempts FROM core.notifications WHERE id = ?", [taken.row_id]
        ).fetchone()
        attempts = (int(row[0]) if row else 0) + 1
        if attempts >= notify.max_attempts:
            outcome = "failed"
        wait = min(notify.retry_max, notify.retry_base * 2 ** (attempts - 1))
        con.execute(
            "UPDATE core.notifications SET attempts = ?, last_error = ?, status = ?, "
            "next_attempt_at = ?, claimed_until = NULL, parts_sent = ? WHERE id = ?",
            [
                attempts,
                str(failure)[:500],
                "failed" if outcome == "failed" else "queued",
                utcnow() + dt.timedelta(seconds=wait),
                taken.parts_sent + failure.parts_sent,
                taken.row_id,
            ],
        )

    _persist(settings, store, taken, write)
    return outcome


def _persist(
    settings: Settings,
    store: Store,
    taken: Claim,
    write: Callable[[duckdb.DuckDBPyConnection], None],
) -> None:
    """Record an outcome, waiting for the database as long as the claim lasts: a reader holding
    the lock must not make a delivered message look undelivered. Only when the lease runs out
    is the outcome lost, and the row is then sent again (the documented crash window)."""
    while True:
        try:
            with store.writer() as con:
                write(con)
            return
        except errors.StoreError as exc:
            if time.monotonic() + store.lock_timeout >= taken.deadline:
                log.error(
                    "could not record the outcome of notification %d before its claim "
                    "expired (%s): it will be sent again",
                    taken.row_id,
                    exc,
                    extra={"job": "outbox"},
                )
                return
            log.warning("outbox waits for the database: %s", exc, extra={"job": "outbox"})
