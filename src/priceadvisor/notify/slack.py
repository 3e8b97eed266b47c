"""Slack incoming webhook: Block Kit payloads through the shared HTTP client.

Limits (api.slack.com/reference/block-kit/blocks): at most 50 blocks per message and 3000
characters per section text; longer messages are split into several payloads. Provider strings
are untrusted: `&`, `<`, `>` are escaped in mrkdwn so an instance called "<!channel>" cannot
ping anyone. A 429 is retried after its Retry-After by the HTTP layer.
"""

from __future__ import annotations

from typing import Any

from pydantic import SecretStr

from priceadvisor.collect.http import FetchError, HttpSession, build_client
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

    async def send(self, message: Message) -> None:
        async with build_client(self.http) as client:
            session = HttpSession(client, self.http)
            for payload in message.slack:
                try:
                    await session.request("POST", self.webhook.get_secret_value(), json=payload)
                except FetchError as exc:
                    raise DeliveryError(f"Slack webhook: {_without_url(str(exc))}") from None


def _without_url(error: str) -> str:
    """The webhook URL (path included) is the secret: keep only what went wrong."""
    if error.startswith("HTTP "):
        return error.split(" from ", maxsplit=1)[0]
    return "timed out" if error.startswith("timed out") else "unreachable"
