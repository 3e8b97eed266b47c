"""The adapter contract: build requests, page through results, parse. Nothing else.

Normalisation (GPU names, regions, currency, per-GPU prices) and validation happen in the core
(store.ingest), so an adapter stays a faithful reader of one source's format.
"""

from __future__ import annotations

import asyncio
import math
import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any, ClassVar

import httpx
from pydantic import SecretStr

from priceadvisor.collect.http import HttpSession
from priceadvisor.collect.pages import ParsedPage, get_page
from priceadvisor.collect.source import SourceFormatError, require_complete_html
from priceadvisor.manifest import Manifest
from priceadvisor.records import ApiPrice, FxRate, RawQuote

ProgressCallback = Callable[[str], None]
_COUNT_TEXT = re.compile(r"[0-9]+(?:\.0+)?")
__all__ = ["Adapter", "AdapterOutput", "SourceFormatError", "require_complete_html"]


@dataclass(slots=True)
class AdapterOutput:
    """Quotes plus completeness: `failed_scopes` non-empty makes the run partial, and then only
    `complete_scopes` ("region" or "region|pricing") may have offers closed."""

    quotes: list[RawQuote] = field(default_factory=list)
    fx_rates: list[FxRate] = field(default_factory=list)
    api_prices: list[ApiPrice] = field(default_factory=list)
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


def summarise_failures(failed: dict[str, str], limit: int = 300) -> str:
    """One short line for many failed scopes: each distinct cause once, with what it hit (24
    regions that cannot reach the same host are one cause, not 24 copies of it)."""
    by_cause: dict[str, list[str]] = {}
    for scope, cause in sorted(failed.items()):
        by_cause.setdefault(cause, []).append(scope)
    text = "; ".join(f"{_scopes(scopes)}: {cause}" for cause, scopes in by_cause.items())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _scopes(scopes: list[str]) -> str:
    return scopes[0] if len(scopes) == 1 else f"{len(scopes)} scopes"


class PageAdapter(Adapter):
    """An adapter that reads one public pricing page: one request with a browser's headers, a
    truncated page refused, and a page that yields no price at all a failed run (the layout
    moved), never an empty success that would close every offer."""

    page_endpoint: ClassVar[str] = "pricing"

    async def fetch(self, session: HttpSession, progress: ProgressCallback) -> AdapterOutput:
        url = self.endpoints[self.page_endpoint]
        html = await get_page(session, url)
        # Parsing HTML is CPU work (tens of ms a page): off the event loop, so the other
        # providers' requests of the same cycle keep moving meanwhile.
        page = await asyncio.to_thread(self.parse, html, url)
        if not page.quotes:
            raise SourceFormatError(
                f"no GPU prices found on {self.manifest.name}'s page (layout changed?)"
            )
        progress(page.summary())
        return AdapterOutput(quotes=page.quotes)

    @abstractmethod
    def parse(self, html: str, url: str) -> ParsedPage:
        """The page's quotes, and what was left out on purpose (counted by reason)."""


def exact_decimal(value: Any) -> Decimal | None:
    """A JSON number or decimal string as an exact Decimal; None for anything else."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = Decimal(str(value).strip())
    except InvalidOperation:
        return None
    return number if number.is_finite() else None


def exact_price(value: Any, scale: int = 0) -> float | None:
    """A price stated as a JSON number or a decimal string, divided by 10**scale in decimal
    arithmetic (US cents: scale 2; OVHcloud's 1e-8 currency units: scale 8), so 319 cents is
    exactly 3.19 and "1.99" stays 1.99. Anything else is None, for the core to reject."""
    number = exact_decimal(value)
    return None if number is None else float(number.scaleb(-scale))


def sum_of_units(parts: list[tuple[Any, int]]) -> float | None:
    """Σ unit price × amount in decimal arithmetic (a VM assembled from GPU, vCPU and memory
    prices; the GPU first). None when a unit price is unusable or the GPU's is not positive
    (a free GPU is a broken source, not a cheap VM), for the core to reject."""
    total = Decimal(0)
    for index, (price, amount) in enumerate(parts):
        exact = exact_decimal(price)
        if exact is None or (index == 0 and exact <= 0):
            return None
        total += exact * amount
    return float(total)


def json_records(
    document: Any, required: tuple[str, ...], listing: str, item: str
) -> list[dict[str, Any]]:
    """A JSON list of objects each holding `required` keys, or a SourceFormatError naming what
    is off ("the rental options are not a JSON list", "a rental option lacks price")."""
    if not isinstance(document, list):
        raise SourceFormatError(f"{listing} are not a JSON list (format changed?)")
    for entry in document:
        missing = [k for k in required if not isinstance(entry, dict) or k not in entry]
        if missing:
            raise SourceFormatError(f"{item} lacks {', '.join(missing)}")
    return document


def json_object(parent: dict[str, Any], key: str) -> dict[str, Any]:
    """A nested object, or an empty one when it is missing or not an object."""
    value = parent.get(key)
    return value if isinstance(value, dict) else {}


def json_number(value: Any) -> float | None:
    """A JSON number as a float; None for anything else (booleans included)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def json_count(value: Any) -> int | None:
    """A count of things (GPUs free, bids) given as a whole, non-negative JSON number or as the
    same number quoted ("3", " 0 "; some APIs quote every number). None for anything else, so
    "many", "", "N/A", a fraction, a negative, NaN or a boolean (an int in Python) never
    becomes a count."""
    if isinstance(value, str):
        value = _count_text(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or value < 0 or value != int(value):
        return None
    return int(value)


def _count_text(text: str) -> float | None:
    # Plain ASCII digits only: float() alone would also take "nan", "1e3", "1_0" and "+3".
    stripped = text.strip()
    return float(stripped) if _COUNT_TEXT.fullmatch(stripped) else None


def gpus_free(value: Any) -> str | None:
    """A source's count of GPUs free now as a stock level ("8"), or None when it gives none."""
    count = json_count(value)
    return None if count is None else str(count)
