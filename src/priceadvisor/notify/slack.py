"""Slack incoming webhook: Block Kit payloads through the shared HTTP client.

Limits (api.slack.com/reference/block-kit/blocks): at most 50 blocks per message and 3000
characters per section text; longer messages are split into several payloads. Provider strings
are untrusted: `&`, `<`, `>` are escaped in mrkdwn so an instance called "<!channel>" cannot
ping anyone.

A webhook POST is not idempotent: Slack documents no idempotency key, so a payload is sent again
only when Slack cannot have posted it — the connection was never made, or Slack answered 429
(rate limited: rejected, retry after Retry-After; api.slack.com/apis/rate-limits). A timeout
waiting for the answer, a connection closed after the body, or a 5xx leave the outcome unknown:
the message is not resent (at most once there) and its outbox row fails with that reason.
Redirects are not followed (a webhook URL does not redirect); the URL is never logged.
"""

from __future__ import annotations

from typing import Any

import httpx
import stamina
from pydantic import SecretStr

from priceadvisor.collect.http import build_client, retry_after_seconds
from priceadvisor.config import HttpSettings
from priceadvisor.notify import DeliveryError, Message

MAX_BLOCKS = 50
MAX_SECTION_CHARS = 3000


def escape(text: str) -> str:
    """mrkdwn control characters (Slack: "Escaping text")."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text[:MAX_SECTION_CHARS]}}


def header(text: str) -> dict[str, Any]:
    return {"type": "header", "text": {"type": "plain_text", "text": text[:150]}}


def sections(lines: list[str]) -> list[dict[str, Any]]:
    """Pack lines into as few sections as fit 3000 characters each (lines never split)."""
    blocks, current = [], ""
    for raw in lines:
        line = raw[: MAX_SECTION_CHARS - 1]
        if current and len(current) + 1 + len(line) > MAX_SECTION_CHARS:
            blocks.append(section(current))
            current = ""
        current = f"{current}\n{line}" if current else line
    if current:
        blocks.append(section(current))
    return blocks


def paginate(blocks: list[dict[str, Any]], fallback: str) -> list[dict[str, Any]]:
    """Split into payloads of at most 50 blocks each."""
    pages = [blocks[i : i + MAX_BLOCKS] for i in range(0, len(blocks), MAX_BLOCKS)] or [[]]
    total = len(pages)
    return [
        {"text": fallback if total == 1 else f"{fallback} ({n}/{total})", "blocks": page}
        for n, page in enumerate(pages, 1)
    ]


class SlackChannel:
    name = "slack"

    def __init__(self, webhook: SecretStr, http: HttpSettings) -> None:
        self.webhook = webhook
        self.http = http

    async def send(self, message: Message, skip: int = 0) -> None:
        if not valid_webhook(self.webhook.get_secret_value()):
            raise DeliveryError("Slack webhook: invalid URL", retry=False)
        async with build_client(self.http) as client:
            for part, payload in enumerate(message.slack[skip:], skip):
                try:
                    await self._post(client, payload)
                except DeliveryError as exc:
                    raise DeliveryError(str(exc), exc.retry, parts_sent=part) from None

    async def _post(self, client: httpx.AsyncClient, payload: dict[str, Any]) -> None:
        """One payload, retried only while Slack cannot have taken it (see the module doc)."""
        async for attempt in stamina.retry_context(
            on=self._retry_wait, attempts=self.http.attempts, timeout=None
        ):
            with attempt:
                await self._post_once(client, payload)

    async def _post_once(self, client: httpx.AsyncClient, payload: dict[str, Any]) -> None:
        try:
            response = await client.post(
                self.webhook.get_secret_value(), json=payload, follow_redirects=False
            )
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout):
            raise _NotSent("Slack webhook: unreachable") from None
        except (httpx.InvalidURL, httpx.UnsupportedProtocol, ValueError):
            raise DeliveryError("Slack webhook: invalid URL", retry=False) from None
        except httpx.TimeoutException:
            raise DeliveryError(f"Slack webhook: {_UNKNOWN} (no answer)", retry=False) from None
        except httpx.TransportError as exc:
            reason = f"{_UNKNOWN} ({type(exc).__name__})"
            raise DeliveryError(f"Slack webhook: {reason}", retry=False) from None
        _check(response)

    def _retry_wait(self, exc: Exception) -> bool | float:
        """stamina hook: retry what was not sent, after Retry-After when Slack gave one."""
        if not isinstance(exc, _NotSent):
            return False
        if exc.wait is None:
            return True
        return exc.wait if exc.wait <= self.http.max_retry_after else False


def valid_webhook(url: str) -> bool:
    """http(s), a host and a port in range (httpx fails deep in its connection code on a port
    out of range)."""
    try:
        parsed = httpx.URL(url)
        port = parsed.port
    except (httpx.InvalidURL, ValueError):
        return False
    return parsed.scheme in ("http", "https") and bool(parsed.host) and 0 < (port or 80) < 65536


_UNKNOWN = "outcome unknown, not resent (it may have been posted)"


class _NotSent(DeliveryError):
    """Slack cannot have posted it (no connection, or a 429): safe to send again."""

    def __init__(self, reason: str, wait: float | None = None) -> None:
        super().__init__(reason, retry=True)
        self.wait = wait


def _check(response: httpx.Response) -> None:
    """2xx: posted. 429: rejected, retry after Retry-After. Anything else: not resent — a 5xx
    may come after the post was made, a 3xx or 4xx will not change on a retry."""
    status = response.status_code
    if 200 <= status < 300:
        return
    if status == 429:
        raise _NotSent("Slack webhook: HTTP 429 (rate limited)", retry_after_seconds(response))
    if status >= 500:
        raise DeliveryError(f"Slack webhook: HTTP {status}, {_UNKNOWN}", retry=False)
    raise DeliveryError(f"Slack webhook: HTTP {status}", retry=False)
