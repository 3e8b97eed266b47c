"""The adapter contract: build requests, page through results, parse. Nothing else.

Normalisation (GPU names, regions, currency, per-GPU prices) and validation happen in the core
(store.ingest), so an adapter stays a faithful reader of one source's format.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

import httpx
from pydantic import SecretStr

from priceadvisor.collect.http import HttpSession
from priceadvisor.manifest import Manifest
from priceadvisor.models import FxRate, RawQuote

ProgressCallback = Callable[[str], None]


class SourceFormatError(Exception):
    """The source answered, but not in the format this adapter reads (schema or layout drift)."""


@dataclass(slots=True)
class AdapterOutput:
    """Quotes plus completeness: `failed_scopes` non-empty makes the run partial, and then only
    `complete_scopes` ("region" or "region|pricing") may have offers closed."""

    quotes: list[RawQuote] = field(default_factory=list)
    fx_rates: list[FxRate] = field(default_factory=list)
    complete_scopes: set[str] = field(default_factory=set)
    failed_scopes: dict[str, str] = field(default_factory=dict)


class Adapter(ABC):
    id: ClassVar[str]

    def __init__(
        self,
        manifest: Manifest,
        endpoints: dict[str, str],
        credential: SecretStr | None = None,
    ) -> None:
        self.manifest = manifest
        self.endpoints = endpoints
        self.credential = credential

    @abstractmethod
    async def fetch(self, session: HttpSession, progress: ProgressCallback) -> AdapterOutput:
        """Request every page of the source and parse it into raw quotes."""


def require_complete_html(html: str) -> str:
    """A page cut short still parses, with rows missing, and missing rows would read as offers
    that vanished: refuse a page that does not end."""
    if "</html>" not in html[-4096:].lower():
        raise SourceFormatError("the page ends before </html> (truncated?)")
    return html


def resolve_endpoint(default: str, override: str | None) -> str:
    """An override with only scheme and host keeps the default's path."""
    if not override:
        return default
    target = httpx.URL(override)
    if target.path in ("", "/"):
        return str(
            httpx.URL(default).copy_with(scheme=target.scheme, host=target.host, port=target.port)
        )
    return override


def rebase_link(link: str, endpoint: str) -> str:
    """Point a source's absolute next-page link at the configured endpoint (mirror, proxy, test
    server), keeping the link's query: a mirror then sees every page, not only the first."""
    source = httpx.URL(link)
    return str(httpx.URL(endpoint).copy_with(query=source.query))
