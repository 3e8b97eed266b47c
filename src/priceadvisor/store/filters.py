"""Offer filters as people type them, resolved to catalog codes or refused in one line: the one
resolution the CLI (`prices`, `history`) and the Python API (priceadvisor.api) share.

Countries and continents are accepted by code or name (DE / Germany, EU / Europe); GPUs by
canonical id (H100-SXM-80GB) or family (H100, which is every H100 variant but not GH100), or by
prefix with a trailing `*` (H100-S*). Comparisons ignore case, spaces and dashes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import duckdb

from priceadvisor.store import reads


class FilterError(ValueError):
    """A filter value that names nothing (an unknown country, GPU, pricing or sort); the message
    is one line. The CLI answers it as a usage error (exit 2)."""


CONTINENTS = {
    "AF": "Africa",
    "AS": "Asia",
    "EU": "Europe",
    "NA": "North America",
    "OC": "Oceania",
    "SA": "South America",
}


def _key(text: str) -> str:
    return re.sub(r"[^A-Z0-9]", "", text.upper())


def continent_code(value: str) -> str:
    names = {_key(code): code for code in CONTINENTS} | {
        _key(name): code for code, name in CONTINENTS.items()
    }
    if _key(value) not in names:
        known = ", ".join(f"{code} ({name})" for code, name in CONTINENTS.items())
        raise FilterError(f"unknown continent {value!r} (use one of {known})")
    return names[_key(value)]


def country_code(value: str) -> str:
    from priceadvisor import gpu_specs  # noqa: PLC0415 - only --country needs the catalog

    known = gpu_specs.countries()
    names = {_key(code): code for code in known} | {
        _key(name): code for code, (name, _) in known.items()
    }
    if _key(value) not in names:
        raise FilterError(
            f"unknown country {value!r} (an ISO code such as DE or a name such as Germany; "
            f'list them: priceadvisor sql "select distinct country, country_name from regions")'
        )
    return names[_key(value)]


def gpu_models(value: str, known: Iterable[tuple[str, str]]) -> list[str]:
    """Canonical ids matching an id, a family, or (with a trailing *) a prefix of an id, among
    the `known` (id, family) pairs of the GPU catalog."""
    if value.endswith("*"):
        prefix = _key(value[:-1])
        found = [gpu for gpu, _ in known if _key(gpu).startswith(prefix)]
    else:
        wanted = _key(value)
        found = [gpu for gpu, family in known if wanted in (_key(gpu), _key(family))]
    if not found:
        raise FilterError(
            f"unknown GPU {value!r} (a model such as H100-SXM-80GB, a family such as H100, or a "
            "prefix such as H100-S*; list them: "
            'priceadvisor sql "select gpu_model, family from gpus")'
        )
    return sorted(found)


def pricing(value: str) -> str:
    normalised = value.strip().lower().replace("-", "_")
    if normalised not in ("on_demand", "spot", "market", "reserved"):
        raise FilterError(f"unknown pricing {value!r} (use on_demand, spot, market or reserved)")
    return normalised


def sort_order(value: str) -> str:
    """A sort of `prices` (reads.PRICE_SORTS), or refused."""
    if value not in reads.PRICE_SORTS:
        raise FilterError(f"unknown sort {value!r} (use one of {', '.join(reads.PRICE_SORTS)})")
    return value


def offer_filter(
    providers: Sequence[str],
    country: str | None,
    continent: str | None,
    eu: bool,
    pricing_kind: str | None,
    include_derived: bool = False,
    include_flagged: bool = False,
) -> reads.OfferFilter:
    """The filters resolved to catalog codes; `providers` already checked by the caller (the
    adapters' registry, which the store does not import); the GPU resolves with resolve_gpu."""
    return reads.OfferFilter(
        providers=list(providers),
        country=country_code(country) if country else None,
        continent=continent_code(continent) if continent else None,
        eu=eu,
        pricing=pricing(pricing_kind) if pricing_kind else None,
        include_derived=include_derived,
        include_flagged=include_flagged,
    )


def resolve_gpu(con: duckdb.DuckDBPyConnection, flt: reads.OfferFilter, gpu: str | None) -> None:
    """A GPU as typed to catalog ids, against the catalog the database holds: a small query
    where parsing gpus.toml cost each start ~7 ms."""
    if gpu:
        flt.gpu_models = gpu_models(gpu, reads.gpu_families(con))
