"""Canonical GPU and region catalog, and the mapping of providers' raw names onto it.

Name resolution works on distinct raw names only (a few hundred per snapshot), never per row:
store.ingest resolves the distinct names here and joins the result set-based in DuckDB.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any, Literal

from priceadvisor.resources import providers_dir

# Family patterns over the normalised (upper-case, space-separated) raw name. Order matters only
# where one family's spelling contains another's; \b keeps A10 from matching A100 or A10G.
_FAMILY_PATTERNS: tuple[tuple[str, str], ...] = (
    ("GH200", r"\bGH200\b"),
    ("GB200", r"\bGB200\b"),
    ("GB300", r"\bGB300\b"),
    ("H100", r"\bH100\b"),
    ("H200", r"\bH200\b"),
    ("B200", r"\bB200\b"),
    ("B300", r"\bB300\b"),
    ("A100", r"\bA100\b"),
    ("A10G", r"\bA10G\b"),
    ("A10", r"\bA10\b"),
    ("A40", r"\bA40\b"),
    ("RTXA6000", r"\b(?:RTX )?A6000\b"),
    ("RTXA5000", r"\b(?:RTX )?A5000\b"),
    ("RTXA4000", r"\b(?:RTX )?A4000\b"),
    ("RTX6000ADA", r"\b(?:RTX )?6000 ADA\b|\bRTX6000ADA\b"),
    ("RTXPRO6000", r"\bRTX PRO ?6000\b"),
    ("QUADRORTX6000", r"\bQUADRO RTX ?6000\b"),
    ("L40S", r"\bL40S\b"),
    ("L40", r"\bL40\b"),
    ("L4", r"\bL4\b"),
    ("T4", r"\bT4\b"),
    ("V100", r"\bV100\b"),
    ("P100", r"\bP100\b"),
    ("K80", r"\bK80\b"),
    ("RTX3080", r"\b(?:RTX )?3080\b"),
    ("P4", r"\bP4\b"),
    ("M60", r"\bM60\b"),
    ("V520", r"\bV520\b"),
    ("RTX3070", r"\b(?:RTX )?3070\b"),
    ("RTX3090", r"\b(?:RTX )?3090\b"),
    ("RTX4090", r"\b(?:RTX )?4090\b"),
    ("RTX5090", r"\b(?:RTX )?5090\b"),
    ("MI250X", r"\bMI250X\b"),
    ("MI300X", r"\bMI300X\b"),
    ("MI325X", r"\bMI325X\b"),
    ("MI355X", r"\bMI355X\b"),
    ("GAUDI2", r"\bGAUDI ?2\b|\bHL ?225\b"),
    ("GAUDI3", r"\bGAUDI ?3\b"),
    ("TPUV5E", r"\bTPU ?V5 ?(?:E|LITE)\b|\bV5LITEPOD\b"),
    ("TPUV5P", r"\bTPU ?V5 ?P\b"),
    ("TPUV6E", r"\bTPU ?V6 ?E\b|\bTRILLIUM\b"),
    ("TRN2", r"\bTRN ?2\b|\bTRAINIUM ?2\b"),
    ("TRN1", r"\bTRN ?1N?\b|\bTRAINIUM ?1?\b"),
    ("INF2", r"\bINF ?2\b|\bINFERENTIA ?2\b"),
)


# Compiled on the first name to resolve (an ingest), not at import: the read commands only look
# up ids and families, and compiling every pattern was a few ms of each start.
@cache
def _compiled_families() -> tuple[tuple[str, re.Pattern[str]], ...]:
    return tuple((fam, re.compile(pat)) for fam, pat in _FAMILY_PATTERNS)


_MEMORY = re.compile(r"\b(\d+(?:\.\d+)?) ?G(?:I?B)?\b")
_VARIANTS = (
    ("NVL", re.compile(r"\bNVL\b")),
    ("PCIE", re.compile(r"\bPCI ?E(?:\d+)?\b")),
    ("SXM", re.compile(r"\bSXM\d*\b|\bHGX\b|\bDGX\b|\bMEGA\b")),
)
# Memory sizes a source states in MB or as usable rather than nominal memory differ a little from
# the datasheet (Vast: H100 81559 MB); 8 % separates every pair of variants in the catalog.
_MEMORY_TOLERANCE = 0.08


DeviceKind = Literal["gpu", "accelerator"]
DEVICE_KINDS: tuple[DeviceKind, ...] = ("gpu", "accelerator")


@dataclass(frozen=True, slots=True)
class GpuSpec:
    id: str
    name: str
    vendor: str
    family: str
    variant: str | None
    default: bool
    memory_gb: float
    aliases: tuple[str, ...]
    specs: dict[str, Any]
    kind: DeviceKind = "gpu"
    sizing_unsupported: str | None = None  # why sizing refuses this model (no published basis)

    @property
    def noun(self) -> str:
        """What output calls one of these: "GPU" or "accelerator" (a TPU is not a GPU)."""
        return "GPU" if self.kind == "gpu" else "accelerator"


@dataclass(frozen=True, slots=True)
class RegionInfo:
    provider: str
    region: str
    city: str | None
    country: str | None
    country_name: str | None
    continent: str | None
    is_eu: bool | None


def normalise_name(raw: str) -> str:
    """Upper-case, punctuation to spaces, "80 GB" and "80GB" alike: the form patterns match."""
    text = raw.upper().replace("_", " ").replace("-", " ")
    text = re.sub(r"[^A-Z0-9. ]", " ", text)
    return re.sub(r"\s+", " ", text).strip()


class GpuCatalog:
    def __init__(self, gpus: list[GpuSpec]) -> None:
        self.gpus = {g.id: g for g in gpus}
        self._aliases = {normalise_name(a): g.id for g in gpus for a in (g.id, g.name, *g.aliases)}

    def __contains__(self, gpu_id: object) -> bool:
        return gpu_id in self.gpus

    @lru_cache(maxsize=4096)  # noqa: B019 - the catalog lives for the process
    def resolve(self, raw: str | None, memory_gb: float | None = None) -> str | None:
        """Canonical id for a raw GPU name, or None when it cannot be told for sure."""
        if not raw:
            return None
        text = normalise_name(raw)
        if text in self._aliases:
            return self._aliases[text]
        family = next((fam for fam, pat in _compiled_families() if pat.search(text)), None)
        if family is None:
            return None
        variant = next((name for name, pat in _VARIANTS if pat.search(text)), None)
        stated = _MEMORY.search(text)
        memory = float(stated.group(1)) if stated else memory_gb
        return self._pick(family, variant, memory)

    def _pick(self, family: str, variant: str | None, memory: float | None) -> str | None:
        candidates = [g for g in self.gpus.values() if g.family == family]
        if variant and any(g.variant == variant for g in candidates):
            candidates = [g for g in candidates if g.variant == variant]
        if memory:
            candidates = [g for g in candidates if _memory_matches(g.memory_gb, memory)]
        return _prefer_default(family, candidates, self.gpus.values())


def _memory_matches(catalog_gb: float, stated_gb: float) -> bool:
    return abs(catalog_gb - stated_gb) <= _MEMORY_TOLERANCE * catalog_gb


def _prefer_default(family: str, candidates: list[GpuSpec], everything: Any) -> str | None:
    """One candidate wins outright; among several, the family's default or its variant does."""
    if len(candidates) == 1:
        return candidates[0].id
    defaults = [g for g in candidates if g.default]
    if len(defaults) == 1:
        return defaults[0].id
    family_default = next((g for g in everything if g.family == family and g.default), None)
    if family_default is not None:
        same_variant = [g for g in candidates if g.variant == family_default.variant]
        if len(same_variant) == 1:
            return same_variant[0].id
    return None


_SPEC_KEYS = (
    "architecture",
    "memory_type",
    "memory_bandwidth_gbs",
    "bf16_dense_tflops",
    "fp16_dense_tflops",
    "fp8_dense_tflops",
    "int8_dense_tops",
    "fp32_tflops",
    "tdp_w",
    "interconnect",
    "nvlink_bandwidth_gbs",
    "form_factor",
    "launch_year",
    "approx_list_price_usd",
    "list_price_year",
    "list_price_kind",
    "list_price_source",
    "list_price_note",
    "source",
    "notes",
)


@cache
def gpu_catalog() -> GpuCatalog:
    data = _toml((providers_dir() / "gpus.toml").read_text(encoding="utf-8"))
    gpus = [_gpu_spec(gpu_id, entry) for gpu_id, entry in data["gpus"].items()]
    return GpuCatalog(gpus)


def _gpu_spec(gpu_id: str, entry: dict[str, Any]) -> GpuSpec:
    return GpuSpec(
        id=gpu_id,
        name=entry["name"],
        vendor=entry["vendor"],
        family=entry["family"],
        variant=entry.get("variant"),
        default=bool(entry.get("default", False)),
        memory_gb=float(entry["memory_gb"]),
        aliases=tuple(entry.get("aliases", ())),
        specs={k: entry.get(k) for k in _SPEC_KEYS},
        kind=_device_kind(gpu_id, entry.get("kind", "gpu")),
        sizing_unsupported=entry.get("sizing_unsupported"),
    )


def _device_kind(gpu_id: str, value: object) -> DeviceKind:
    for kind in DEVICE_KINDS:
        if value == kind:
            return kind
    raise ValueError(f"gpus.toml: {gpu_id} has kind {value!r} (use gpu or accelerator)")


@cache
def countries() -> dict[str, tuple[str, str]]:
    """ISO 3166-1 alpha-2 code -> (name, continent code), from providers/regions.toml."""
    data = _toml((providers_dir() / "regions.toml").read_text(encoding="utf-8"))
    return {code: (name, continent) for code, (name, continent) in data["countries"].items()}


@cache
def region_catalog() -> dict[tuple[str, str], RegionInfo]:
    """Every known (provider, region) with its place; see providers/regions.toml."""
    data = _toml((providers_dir() / "regions.toml").read_text(encoding="utf-8"))
    countries: dict[str, list[str]] = data["countries"]
    eu = set(data["eu_members"])
    out: dict[tuple[str, str], RegionInfo] = {}
    for provider, regions in data["regions"].items():
        for region, place in regions.items():
            out[provider, region] = _region(provider, region, place, countries, eu)
    for provider in data.get("country_regions", []):
        for code in countries:
            out[provider, code] = _region(provider, code, ["", code], countries, eu)
    return out


def _region(
    provider: str, region: str, place: list[str], countries: dict[str, list[str]], eu: set[str]
) -> RegionInfo:
    city, country = place[0] or None, place[1] or None
    if country is not None and country not in countries:
        raise ValueError(f"regions.toml: {provider}/{region} names unknown country {country!r}")
    continent = countries[country][1] if country else (place[2] or None)
    return RegionInfo(
        provider=provider,
        region=region,
        city=city,
        country=country,
        country_name=countries[country][0] if country else None,
        continent=continent,
        is_eu=(country in eu) if country else None,
    )


@cache
def country_codes() -> dict[str, str]:
    """ISO code by English country name, case-insensitive ("united states" -> "US"), for
    sources that name the country instead of coding it."""
    data = _toml((providers_dir() / "regions.toml").read_text(encoding="utf-8"))
    return {name.casefold(): code for code, (name, _continent) in data["countries"].items()}


def _toml(text: str) -> dict[str, Any]:
    """Parsed on first use: a start that needs no catalog skips importing tomllib."""
    import tomllib  # noqa: PLC0415

    return tomllib.loads(text)
