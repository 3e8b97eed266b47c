"""Provider manifests: `providers/<id>.toml`, the data half of every adapter.

A manifest names the source's endpoints (each overridable from config), its credential, its
default schedule and the maps from its raw names to canonical ids. Code never hard-codes these.
"""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ByteSize, ConfigDict, Field, ValidationError

from priceadvisor.durations import parse_duration
from priceadvisor.models import PriceBasis
from priceadvisor.resources import providers_dir

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
    pricing: list[Literal["on_demand", "spot", "market"]] = Field(
        default_factory=list, description="pricing kinds present"
    )


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    kind: Literal["prices", "fx"] = "prices"
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
    guard: GuardSpec = Field(default_factory=GuardSpec)
    expect: Expectations = Field(default_factory=Expectations)


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
    path = providers_dir() / f"{provider_id}.toml"
    if not path.is_file():
        raise ManifestError(f"no manifest providers/{provider_id}.toml")
    loaded = load_manifest_file(path)
    if loaded.id != provider_id:
        raise ManifestError(f"providers/{provider_id}.toml declares id {loaded.id!r}")
    return loaded


def manifest_ids() -> list[str]:
    """Every provider manifest shipped (catalog files excluded)."""
    catalog_files = {"gpus", "regions", "models", "calibration"}
    return sorted(p.stem for p in providers_dir().glob("*.toml") if p.stem not in catalog_files)
