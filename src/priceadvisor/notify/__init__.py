"""Where results leave: alerts, the weekly digest, the outbox and its email/Slack channels.

This module holds what every channel shares: a rendered Message, the Channel protocol and
DeliveryError (each channel sends one rendered message or raises it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


class DeliveryError(Exception):
    """A channel could not deliver now; the outbox retries later. One line, no secrets."""


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

    async def send(self, message: Message) -> None: ...
