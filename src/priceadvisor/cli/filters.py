"""Offer filters as people type them, resolved to catalog codes or refused in one line.

Countries and continents are accepted by code or name (DE / Germany, EU / Europe); GPUs by
canonical id (H100-SXM-80GB) or family (H100, which is every H100 variant but not GH100), or by
prefix with a trailing `*` (H100-S*). Comparisons ignore case, spaces and dashes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from priceadvisor import gpu_specs
from priceadvisor.cli.common import UsageError

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
        raise UsageError(f"unknown continent {value!r} (use one of {known})")
    return names[_key(value)]


def country_code(value: str) -> str:
    known = gpu_specs.countries()
    names = {_key(code): code for code in known} | {
        _key(name): code for code, (name, _) in known.items()
    }
    if _key(value) not in names:
        raise UsageError(
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
        raise UsageError(
            f"unknown GPU {value!r} (a model such as H100-SXM-80GB, a family such as H100, or a "
            "prefix such as H100-S*; list them: "
            'priceadvisor sql "select gpu_model, family from gpus")'
        )
    return sorted(found)


def pricing(value: str) -> str:
    normalised = value.strip().lower().replace("-", "_")
    if normalised not in ("on_demand", "spot", "market", "reserved"):
        raise UsageError(f"unknown pricing {value!r} (use on_demand, spot, market or reserved)")
    return normalised
