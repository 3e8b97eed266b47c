"""Which provider manifests ship (`providers/<id>.toml`) and what kind of data each provider
gives, read without pydantic: the light start of `prices` (cli/light.py) needs only this, and
the full manifest model (manifest.py) takes its field's name, values and default from here, so
the two cannot disagree."""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Literal, get_args

from priceadvisor.resources import providers_dir

# "prices": GPU offers; "fx": exchange rates (ECB); "api": LLM API token prices (OpenRouter)
ManifestKind = Literal["prices", "fx", "api"]
KIND_FIELD = "kind"
DEFAULT_KIND: ManifestKind = "prices"
OFFERS_KIND: ManifestKind = "prices"
# providers/ also holds the GPU and region catalogs: not manifests
CATALOG_FILES = frozenset({"gpus", "regions"})


class ManifestFileError(ValueError):
    """A manifest whose `id` or `kind` cannot be read as the model reads them."""


def manifest_ids() -> list[str]:
    """Every provider manifest shipped (catalog files excluded)."""
    return sorted(p.stem for p in providers_dir().glob("*.toml") if p.stem not in CATALOG_FILES)


def manifest_path(provider_id: str) -> Path:
    return providers_dir() / f"{provider_id}.toml"


def declared_kind(provider_id: str) -> ManifestKind:
    """The manifest's `kind` (or the model's default), read with tomllib alone (the light start
    imports this module only when a recorded provider is in a table's notes). Only these two
    fields are checked here: manifest.py's model checks the rest."""
    path = manifest_path(provider_id)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ManifestFileError(f"invalid provider manifest {path.name}: {exc}") from exc
    kind = data.get(KIND_FIELD, DEFAULT_KIND)
    if data.get("id") != provider_id or kind not in get_args(ManifestKind):
        raise ManifestFileError(f"providers/{provider_id}.toml: its id or kind is not valid")
    return kind  # type: ignore[no-any-return]


def holds_offers(provider_id: str, kind_of: Callable[[str], str] = declared_kind) -> bool:
    """Whether a provider's data are offers (FX and API sources, such as ecb, only convert or
    price tokens): a shipped manifest of the offers kind. `kind_of` reads the kind: the full
    model (manifest.py, every field checked) or declared_kind (these two fields alone)."""
    return provider_id in manifest_ids() and kind_of(provider_id) == OFFERS_KIND
