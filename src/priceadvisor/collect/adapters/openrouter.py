"""OpenRouter: public LLM API token prices (GET /api/v1/models, no key). Not GPU offers.

Format (read from a real saved response; provenance in providers/recordings/openrouter/README.md):
`{"data": [{"id", "name", "pricing": {"prompt", "completion", "request", "image",
"input_cache_read"?}, "context_length", "architecture", "top_provider", ...}]}`.

- Prices are decimal **strings** of US dollars **per token**; they are read exactly (Decimal)
  and passed on as stated. The core turns them into $ per 1M tokens.
- `"-1"` is a sentinel, not a price: `openrouter/auto` (a router that picks a model per
  request) lists every price as "-1". It is passed on as stated; the core rejects negative
  prices and counts them, so a router never looks like the cheapest API.
- `"0"` is a real price: `:free` variants are free, rate-limited tiers of a paid model.
- `input_cache_read` (cached-input price) appears only in newer listings; absent, the
  cached-input price is None. `request` is a per-request fee on top of the token prices.
- Uncertain: the listing names no hosting provider (it is OpenRouter's own price, routed to
  the cheapest upstream); the API provider recorded is therefore "openrouter" for every row.
"""

from __future__ import annotations

from typing import Any, ClassVar

from priceadvisor.collect.adapters.base import (
    Adapter,
    AdapterOutput,
    ProgressCallback,
    SourceFormatError,
    exact_decimal,
    json_object,
    json_records,
)
from priceadvisor.collect.http import HttpSession
from priceadvisor.records import ApiPrice

REQUIRED = ("id", "pricing")


class OpenRouterAdapter(Adapter):
    id: ClassVar[str] = "openrouter"

    async def fetch(self, session: HttpSession, progress: ProgressCallback) -> AdapterOutput:
        document = await session.get_json(self.endpoints["models"])
        prices = parse_listing(document)
        progress(f"{len(prices)} API models")
        return AdapterOutput(api_prices=prices)


def parse_listing(document: Any) -> list[ApiPrice]:
    """Every model of the listing, or a SourceFormatError when it is not the listing's shape."""
    if not isinstance(document, dict) or "data" not in document:
        raise SourceFormatError("the models listing has no 'data' list (format changed?)")
    models = json_records(document["data"], REQUIRED, "the models", "a model")
    if not models:
        raise SourceFormatError("the models listing is empty")
    return [parse_model(m) for m in models]


def parse_model(model: dict[str, Any]) -> ApiPrice:
    pricing = json_object(model, "pricing")
    length = model.get("context_length")
    return ApiPrice(
        api_model_id=str(model["id"]),
        name=str(model.get("name") or model["id"]),
        input_per_token=exact_decimal(pricing.get("prompt")),
        output_per_token=exact_decimal(pricing.get("completion")),
        cached_input_per_token=exact_decimal(pricing.get("input_cache_read")),
        request_fee=exact_decimal(pricing.get("request")),
        context_length=length if isinstance(length, int) and not isinstance(length, bool) else None,
    )
