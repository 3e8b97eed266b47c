"""Provider manifests: `providers/<id>.toml`, the data half of every adapter.

A manifest names the source's endpoints (each overridable from config), its credential, its
default schedule and the maps from its raw names to canonical ids. Code never hard-codes these.
"""

from __future__ import annotations

import datetime as dt
import tomllib
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ByteSize,
    ConfigDict,
    Field,
    HttpUrl,
    ValidationError,
    model_validator,
)

from priceadvisor.durations import parse_duration
from priceadvisor.manifest_files import (
    DEFAULT_KIND,
    KIND_FIELD,
    ManifestKind,
    manifest_ids,
    manifest_path,
)
from priceadvisor.records import PriceBasis

# What callers import from here; manifest_ids lives in manifest_files (read without pydantic).
__all__ = [
    "Hosts",
    "Manifest",
    "ManifestError",
    "load_manifest_file",
    "manifest",
    "manifest_ids",
    "marketplaces",
]

Seconds = Annotated[float, BeforeValidator(parse_duration)]

# Redirects a fetch follows: only to the endpoint's own scheme, host and port, or none at all.
# Another host's data must never be ingested as this provider's.
RedirectPolicy = Literal["same-origin", "none"]

# The largest JSON, XML or HTML body any source sends today is a few MB (AWS's spot feed, about
# 3 MB); parsing needs about 3.4x the body in memory, so 64 MiB stays far below the daemon's 1 GB.
DEFAULT_MAX_RESPONSE = ByteSize(64 * 1024 * 1024)


class InstanceTypeSpec(BaseModel):
    """Hardware of one instance type, for sources whose price feed has none (Azure, AWS)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    gpu: str | None = Field(None, description="canonical GPU id; None = accelerator not in catalog")
    gpus: float = Field(gt=0, description="GPUs per instance; fractions for partial GPUs")
    vcpus: float | None = None
    ram_gb: float | None = None
    note: str | None = None


UNKNOWN = "unknown"
Unknown = Literal["unknown"]


def _term_table(value: Any) -> Any:
    """A term is written bare (`granularity = "second"`, using the table's source) or as
    `{ value = ..., source = "...", note = "..." }`."""
    return value if isinstance(value, dict) else {"value": value}


T = TypeVar("T")


class Term(BaseModel, Generic[T]):
    """One billing term: its value or "unknown", the public page that states it, a note."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    value: T | Unknown
    source: HttpUrl | None = Field(None, description="the page stating it; default: the table's")
    note: str | None = None

    @property
    def known(self) -> bool:
        return self.value != UNKNOWN


# strict: a quoted "0" is a typo, not a price; bool is not a number either
Amount = Annotated[float, Field(ge=0, allow_inf_nan=False, strict=True)]
Granularity = Literal["second", "minute", "hour", "day", "month"]
# What keeps being billed while an instance is stopped: nothing, its disks only, the whole
# instance, or no stop exists (only terminate, which ends all billing and deletes the disk).
BilledWhileStopped = Literal["nothing", "storage", "instance", "no_stop"]
# How an interruptible price is set: none offered; a fixed discount off on-demand; a market
# price the provider moves; or the user's bid in an auction.
SpotPricing = Literal["none", "fixed_discount", "market", "bid"]
SpotBilledAt = Literal["not_applicable", "list", "market", "bid"]

_Bare = BeforeValidator(_term_table)
AmountTerm = Annotated[Term[Amount], _Bare]


class Billing(BaseModel):
    """What a provider bills beyond the list price, each term cited (`[billing]` in a manifest).

    A number of 0 means the page says free; "unknown" means no public page says. Every known
    term needs a source: its own or the table's."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: HttpUrl | None = Field(None, description="the page stating the terms without one")
    read_on: dt.date = Field(description="the date the sources were read")
    granularity: Annotated[Term[Granularity], _Bare] = Field(
        description="the unit usage is rounded up to"
    )
    minimum_minutes: AmountTerm = Field(description="the least billed per start")
    billed_while_stopped: Annotated[Term[BilledWhileStopped], _Bare]
    disk_usd_per_gb_month: AmountTerm = Field(description="boot/storage disk price")
    minimum_disk_gb: AmountTerm = Field(description="the smallest disk an instance takes")
    egress_usd_per_gb: AmountTerm = Field(description="internet egress, first paid tier")
    egress_free_gb_month: AmountTerm = Field(description="egress free each month")
    spot_pricing: Annotated[Term[SpotPricing], _Bare]
    spot_billed_at: Annotated[Term[SpotBilledAt], _Bare]

    @model_validator(mode="after")
    def _every_known_term_cited(self) -> Billing:
        uncited = [
            name for name, term in self.terms().items() if term.known and not self.cited(term)
        ]
        if uncited:
            raise ValueError(f"billing terms without a source: {', '.join(uncited)}")
        # 0 is easy to write for "don't know": a free term must say so in its note
        unexplained = [n for n, t in self.terms().items() if t.value == 0 and not t.note]
        if unexplained:
            raise ValueError(f"billing terms of 0 without a note saying free: {unexplained}")
        return self

    def terms(self) -> dict[str, Term[Any]]:
        return {name: getattr(self, name) for name in TERM_NAMES}

    def cited(self, term: Term[Any]) -> HttpUrl | None:
        return term.source or self.source

    def known(self) -> int:
        return sum(term.known for term in self.terms().values())

    def as_record(self) -> dict[str, Any]:
        """Each term's value, source and note, for `providers --format json`."""
        record: dict[str, Any] = {"read_on": self.read_on.isoformat()}
        for name, term in self.terms().items():
            source = self.cited(term)
            record[name] = {
                "value": term.value,
                "source": str(source) if source and term.known else None,
                "note": term.note,
            }
        return record


def billing_record(billing: Billing | None) -> dict[str, Any]:
    """A manifest's billing terms as a record; every term "unknown" where it has no table."""
    if billing is not None:
        return billing.as_record()
    unknown = {"value": UNKNOWN, "source": None, "note": None}
    return {"read_on": None} | {name: dict(unknown) for name in TERM_NAMES}


TERM_NAMES = (
    "granularity",
    "minimum_minutes",
    "billed_while_stopped",
    "disk_usd_per_gb_month",
    "minimum_disk_gb",
    "egress_usd_per_gb",
    "egress_free_gb_month",
    "spot_pricing",
    "spot_billed_at",
)


class GuardSpec(BaseModel):
    """What the offer guard (store.guard) knows of this provider's quirks."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    placeholder_prices: list[float] = Field(
        default_factory=list,
        description="prices (as the source states them) the provider is known to list as "
        "placeholders; flagged unless the market confirms them",
    )


class Expectations(BaseModel):
    """What a healthy snapshot of this provider contains (store.expectations). A snapshot that
    breaks one ends `partial` with the reason and closes nothing."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    min_offers: int = Field(0, ge=0, description="at least this many valid offers")
    gpus: list[str] = Field(default_factory=list, description="canonical GPU ids present")
    regions: list[str] = Field(default_factory=list, description="region codes present")
    pricing: list[Literal["on_demand", "spot", "market", "reserved"]] = Field(
        default_factory=list, description="pricing kinds present"
    )


class Hosts(BaseModel):
    """Who runs the machines an offer lands on. A marketplace's hosts are individual sellers
    with no service-level agreement: advice marks their offers "no SLA" and keeps a workload
    with `sla = true` off them. `some`: only the offers in `regions`, or whose instance type
    has `instance_type_word` as one of its words (a source that mixes both kinds)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    marketplace: Literal["all", "some", "none"] = "none"
    regions: tuple[str, ...] = ()
    instance_type_word: str | None = None
    source: HttpUrl | None = Field(None, description="the page that says who the hosts are")
    note: str | None = None

    @model_validator(mode="after")
    def _scoped_and_sourced(self) -> Hosts:
        if self.marketplace == "some" and not (self.regions or self.instance_type_word):
            raise ValueError("marketplace = 'some' needs regions or instance_type_word")
        if self.marketplace != "none" and self.source is None:
            raise ValueError("a marketplace needs the source that says so")
        return self


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    # "fx": exchange rates (ECB); "api": LLM API token prices (OpenRouter), not GPU offers.
    # Read without pydantic too (manifest_files.py, the light start of `prices`).
    kind: ManifestKind = DEFAULT_KIND
    # False: fetched only when the config enables it or --provider names it: a source whose
    # format has no recorded response yet (CloudRift, QuantaCloud), or one that yields no
    # storable offer yet (GMI Cloud shows only "from" floors).
    enabled_by_default: bool = True
    name: str
    homepage: str
    interval: Seconds
    price_basis: PriceBasis
    endpoints: dict[str, str]
    credential_env: str | None = None
    credential_required: bool = False
    regions: dict[str, str] = Field(
        default_factory=dict, description="region code -> the source's own name for it"
    )
    notes: str | None = None
    gpu_names: dict[str, str] = Field(default_factory=dict)
    source: dict[str, Any] = Field(
        default_factory=dict, description="adapter-specific data, read by that adapter only"
    )
    instance_types: dict[str, InstanceTypeSpec] = Field(default_factory=dict)
    max_response_size: ByteSize = Field(
        DEFAULT_MAX_RESPONSE, gt=0, description="largest decompressed body read, e.g. '64 MiB'"
    )
    redirects: RedirectPolicy = "same-origin"
    billing: Billing | None = Field(None, description="billing terms; absent = all unknown")
    guard: GuardSpec = Field(default_factory=GuardSpec)
    expect: Expectations = Field(default_factory=Expectations)
    hosts: Hosts = Field(default_factory=Hosts)


assert KIND_FIELD in Manifest.model_fields  # the name manifest_files reads without the model


class ManifestError(ValueError):
    pass


def load_manifest_file(path: Path) -> Manifest:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        return Manifest.model_validate(data)
    except (tomllib.TOMLDecodeError, ValidationError) as exc:
        raise ManifestError(f"invalid provider manifest {path.name}: {exc}") from exc


@cache
def manifest(provider_id: str) -> Manifest:
    path = manifest_path(provider_id)
    if not path.is_file():
        raise ManifestError(f"no manifest providers/{provider_id}.toml")
    loaded = load_manifest_file(path)
    if loaded.id != provider_id:
        raise ManifestError(f"providers/{provider_id}.toml declares id {loaded.id!r}")
    return loaded


@cache
def marketplaces() -> tuple[tuple[str, Hosts], ...]:
    """Every provider whose offers are all or partly from a marketplace, with its scope."""
    found = ((pid, manifest(pid).hosts) for pid in manifest_ids())
    return tuple((pid, hosts) for pid, hosts in found if hosts.marketplace != "none")
