"""Plain data shapes shared by adapters, the core and the store.

`RawQuote` is deliberately a slotted dataclass, not a pydantic model: a large provider yields
hundreds of thousands of them and validation happens set-based in DuckDB (store.ingest), so
per-row model validation would only cost time. A quote shares the values quotes repeat (a
region, an instance type, a GPU count) with the quotes before it instead of holding its own
copy: parsers create a new string or float per row, so 100,000 quotes would otherwise hold
~20 MB of copies of a few hundred values until the ingest (docs/benchmarks.md).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal

from priceadvisor.clock import utcnow
from priceadvisor.pricing import RENTABLE, Pricing

if TYPE_CHECKING:
    from decimal import Decimal

# The clock and the pricing kinds are re-exported: the core's shapes are imported from here (a
# reader, such as `prices`, imports those two modules alone).
__all__ = ["RENTABLE", "TRAINING_TASKS", "ApiPrice", "CachedBody", "FetchResult", "FxRate"]
__all__ += ["IngestSummary", "Precision", "PriceBasis", "Pricing", "RawQuote", "RunStatus"]
__all__ += ["Task", "utcnow"]


# The values quotes share, by equality (an int and an equal float may stand for each other: the
# fields are typed float and read by value). Bounded so that a source whose instance types are
# all different (one per marketplace machine) cannot make it grow without end; what it holds
# between fetches (at most 20,000 small values, ~2 MB) stays for the next fetch.
_SHARED: dict[object, object] = {}
_MAX_SHARED = 20_000


# What a workload is and the number format it runs in (config and sizing share these).
Task = Literal["pretrain", "finetune", "lora", "qlora", "serve", "batch"]
Precision = Literal["bf16", "fp16", "fp8", "fp4", "int8", "int4"]
TRAINING_TASKS = ("pretrain", "finetune", "lora", "qlora")


class PriceBasis(StrEnum):
    """What a source's price is for: the whole offer (node) or one GPU of it."""

    NODE = "node"
    GPU = "gpu"


class RunStatus(StrEnum):
    OK = "ok"
    PARTIAL = "partial"
    FAILED = "failed"
    SKIPPED = "skipped"
    # Observed before the provider's latest merged snapshot: recorded, nothing changed.
    SUPERSEDED = "superseded"


@dataclass(slots=True)
class RawQuote:
    """One price as a source states it, before normalisation."""

    region: str
    instance_type: str
    pricing: str
    price: float | None
    price_basis: str = PriceBasis.NODE
    currency: str = "USD"
    zone: str = ""
    gpu_name_raw: str | None = None
    gpu_count: float | None = None
    gpu_memory_gb: float | None = None
    vcpus: float | None = None
    ram_gb: float | None = None
    available: bool | None = None
    # The source's own statement of how much can be rented now, where it gives one: a count of
    # free GPUs ("8") or its level word ("high", "low", "shortage"); stored lower case.
    stock: str | None = None
    interruption_rate: float | None = None
    source_url: str | None = None
    offer_count: int | None = None  # marketplaces: asks aggregated into this quote
    price_median: float | None = None  # marketplaces: their median, same basis as price
    price_date: str | None = None  # market averages: the ISO day the average is for
    # Commitments (pricing `reserved`): the term in months (part of the offer's key), and how it
    # is paid where the source says so: upfront for the whole term and/or per month, in
    # `currency` and on the same basis as `price` (per node or per GPU).
    term_months: int | None = None
    upfront: float | None = None
    monthly: float | None = None
    # Billing terms the source prices per offer (a marketplace host's own disk and egress
    # prices), in `currency`: disk per GB-month, internet egress per GB. None: not stated per
    # offer (the provider's manifest terms apply).
    disk_usd_gb_month: float | None = None
    egress_usd_gb: float | None = None
    # None: the provider published this price. Else the rule it was derived by from a published
    # one ("OCI preemptible = 50 % of on-demand"); stored as price_origin 'derived'.
    price_rule: str | None = None
    # Set when a field of the source says this offer does not exist although a price is
    # listed (RunPod `communityCloud: false`, a stock state meaning "not offered"): the reason,
    # in the source's words. The quote is kept and flagged by the offer guard (store.guard),
    # never ranked; a price alone is not an offer.
    not_offered_reason: str | None = None

    def __post_init__(self) -> None:
        """Share the fields that repeat across a snapshot's quotes (under 1 µs a quote)."""
        if len(_SHARED) > _MAX_SHARED:
            _SHARED.clear()
        share: Any = _SHARED.setdefault
        self.region = share(self.region, self.region)
        self.zone = share(self.zone, self.zone)
        self.instance_type = share(self.instance_type, self.instance_type)
        self.gpu_name_raw = share(self.gpu_name_raw, self.gpu_name_raw)
        # Parsed from each row by some sources (Azure's and Verda's currency, RunPod's, Cudo's,
        # Scaleway's and TensorDock's stock level): ~50 bytes a quote each otherwise.
        self.currency = share(self.currency, self.currency)
        self.stock = share(self.stock, self.stock)
        self.gpu_count = share(self.gpu_count, self.gpu_count)
        self.gpu_memory_gb = share(self.gpu_memory_gb, self.gpu_memory_gb)
        self.vcpus = share(self.vcpus, self.vcpus)
        self.ram_gb = share(self.ram_gb, self.ram_gb)


@dataclass(frozen=True, slots=True)
class CachedBody:
    """A response body with the validators (ETag / Last-Modified) a conditional GET sends."""

    content: bytes
    etag: str | None
    last_modified: str | None


@dataclass(slots=True, frozen=True)
class FxRate:
    """ECB convention: `per_eur` units of `currency` buy one euro on `day`."""

    day: dt.date
    currency: str
    per_eur: float


@dataclass(slots=True, frozen=True)
class ApiPrice:
    """One LLM API's token prices as its listing states them: US dollars per token, exact.
    A price is None when the listing gives none or gives a sentinel (the caller counts it)."""

    api_model_id: str
    name: str
    input_per_token: Decimal | None
    output_per_token: Decimal | None
    cached_input_per_token: Decimal | None = None
    request_fee: Decimal | None = None
    context_length: int | None = None


@dataclass(slots=True)
class FetchResult:
    """What one fetch of one provider produced, and how complete it is.

    `complete_scopes` names what is complete when status is PARTIAL: a region ("eastus") or a
    region and pricing kind ("us-east-1|spot"). Only there may offers that were not seen be
    closed.
    """

    provider: str
    status: RunStatus
    quotes: list[RawQuote] = field(default_factory=list)
    complete_scopes: frozenset[str] = frozenset()
    error: str | None = None
    requests: int = 0
    bytes: int = 0
    started_at: dt.datetime = field(default_factory=utcnow)
    finished_at: dt.datetime | None = None
    fx_rates: list[FxRate] = field(default_factory=list)
    api_prices: list[ApiPrice] = field(default_factory=list)


@dataclass(slots=True, frozen=True)
class IngestSummary:
    """Counts of one ingest, as recorded in fetch_runs."""

    run_id: int
    provider: str
    status: RunStatus
    offers_seen: int
    offers_changed: int
    offers_new: int
    offers_closed: int
    offers_rejected: int
    unmapped: int
    requests: int
    bytes: int
    error: str | None
    duration_s: float
    offers_duplicate: int = 0
    offers_flagged: int = 0  # kept, but left out of "cheapest" answers (store.guard)
