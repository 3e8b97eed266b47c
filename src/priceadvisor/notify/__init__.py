"""Where results leave: alerts, the weekly digest, the outbox and its email/Slack channels.

This module holds what every channel shares: a rendered Message, the Channel protocol and
DeliveryError (each channel sends one rendered message or raises it).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Protocol

from priceadvisor.notify.render import money


class DeliveryError(Exception):
    """A channel did not deliver a message. One line, no secrets.

    `retry` is False when resending could deliver it twice (the request may have reached the
    receiver) or could never succeed (a malformed address): the outbox then gives up at once.
    `parts_sent` counts the leading parts of a split message that were accepted.
    """

    def __init__(self, reason: str, retry: bool = True, parts_sent: int = 0) -> None:
        super().__init__(reason)
        self.retry = retry
        self.parts_sent = parts_sent


@dataclass(frozen=True, slots=True)
class Message:
    """One notification, rendered for every channel."""

    key: str  # idempotency key (also the email Message-ID's local part)
    subject: str
    text: str
    html: str
    slack: list[dict[str, Any]] = field(default_factory=list)  # Block Kit payloads (≥ 1)
    images: dict[str, bytes] = field(default_factory=dict)  # CID -> PNG


class Channel(Protocol):
    name: str

    async def send(self, message: Message, skip: int = 0) -> None:
        """Deliver the message's parts after the first `skip` (already accepted)."""
        ...


def list_vs_effective(r: dict[str, Any]) -> str:
    """` effective (list $x: terms)` where a row's effective cost differs from its list cost
    by a cent or more (the digest's and alerts' wording); with the term that moved its rank
    where it has a `rank_reason` (`rank moved: list #2 → #1: storage …`), which a row can have
    with no term of its own (the rows it passed had them)."""
    listed = r.get("list_cost")
    moved = f"rank moved: {r['rank_reason']}" if r.get("rank_reason") else ""
    if listed is None or abs(r["cost"] - listed) < 0.005:  # moved by others' terms only
        return f" ({moved})" if moved else ""
    terms = "; ".join(r.get("terms") or [])
    said = "; ".join(part for part in (terms, moved) if part)
    return f" effective (list {money(listed)}{': ' + said if said else ''})"


def provenance(
    provider: str,
    source_url: str | None,
    fetched_at: dt.datetime | None,
    origin: str | None,
    now: dt.datetime,
) -> str:
    """Where a price came from, for a line of an alert or digest: "runpod, published, fetched
    2026-11-27 04:00 UTC (2.0 h ago), https://…"."""
    parts = [provider, origin or "published"]
    if fetched_at is not None:
        age = (now - fetched_at).total_seconds() / 3600
        parts.append(f"fetched {fetched_at:%Y-%m-%d %H:%M} UTC ({age:.1f} h ago)")
    if source_url:
        parts.append(source_url)
    return ", ".join(parts)
