"""Which offer classes each workload's constraints allow: a [workload, class] mask, in numpy.

The ~3,300 offer classes (`advisor.GROUPS_SQL`: provider, country, continent, EU membership,
pricing, GPU count, rentable now, marketplace host) are read once as columns; each distinct set
of constraints is then a few elementwise operations over them, shared by the workloads that
state it (workloads differ mostly in model and task, rarely in where they may run). A
cross join of workloads and classes in DuckDB took ~8 ms at 50 workloads and ~3,300 classes;
this takes ~3.5 ms, half of it reading the classes.

SQL's NULLs are kept as they were: a class without a country (or continent) is allowed only
by workloads that name no countries (continents), and a class whose marketplace flag is
unknown counts as a marketplace host (`NOT NULL` is not true).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np

from priceadvisor.config import WorkloadProfile
from priceadvisor.sizing.topk import Bools, Floats
from priceadvisor.store import reads

# NULLs are read as flags beside the values: fetchnumpy would give a masked array (and import
# numpy.ma, ~5 ms on first use) for a column holding any.
_CLASS_COLUMNS_SQL = """
SELECT coalesce(provider, '') AS provider, provider IS NOT NULL AS has_provider,
    coalesce(country, '') AS country, country IS NOT NULL AS has_country,
    coalesce(continent, '') AS continent, continent IS NOT NULL AS has_continent,
    is_eu IS TRUE AS is_eu, coalesce(pricing, '') AS pricing, pricing IS NOT NULL AS has_pricing,
    coalesce(gpu_count, 0) AS gpu_count, gpu_count IS NOT NULL AS has_count,
    rentable IS TRUE AS rentable, no_sla IS NOT FALSE AS no_sla
FROM {relation} ORDER BY {order}
"""


def offer_class_sql(alias: str) -> str:
    """The attributes of an offer of `offers` (as `alias`) that constraints look at besides its
    provider, pricing and GPU count, as a class holds them: where it is, whether its host is a
    marketplace one (no SLA) and whether its source says it can be rented now."""
    return (
        f"{alias}.country, {alias}.continent, coalesce({alias}.is_eu, false) AS is_eu, "
        f"{reads.no_sla(alias)} AS no_sla, coalesce({alias}.available, false) AS rentable"
    )


@dataclass(frozen=True, slots=True)
class Classes:
    """The offer classes' columns, in the order of their number (`class_id`)."""

    provider: Any  # object arrays of str ('' where NULL, with the has_ flag false)
    has_provider: Bools
    country: Any
    has_country: Bools
    continent: Any
    has_continent: Bools
    is_eu: Bools
    pricing: Any
    has_pricing: Bools
    gpu_count: Floats
    has_count: Bools
    rentable: Bools
    no_sla: Bools

    def providers(self) -> list[str]:
        """Every offer's provider: each class holds one, the classes hold every offer."""
        return [str(provider) for provider in self.provider[self.has_provider].tolist()]


# What a workload's constraints on offers are (the rest of a profile is sizing and run costs).
Constraints = tuple[Any, ...]


def read_classes(
    con: duckdb.DuckDBPyConnection, relation: str = "_advice_classes", order: str = "class_id"
) -> Classes:
    """The offer classes (`_advice_classes`) as columns; or, as classes of one offer each, the
    rows of another `relation` with the same columns (`offer_class_sql`, provider, pricing,
    gpu_count) in the `order` given."""
    found = con.execute(_CLASS_COLUMNS_SQL.format(relation=relation, order=order)).fetchnumpy()
    return Classes(**{name: found[name] for name in Classes.__slots__})


def eligible_classes(classes: Classes, profiles: Sequence[WorkloadProfile]) -> Bools:
    """[workload, class]: whether the workload's constraints allow the offer class."""
    eligible = np.empty((len(profiles), len(classes.provider)), dtype=np.bool_)
    masks: dict[Constraints, Bools] = {}
    for widx, profile in enumerate(profiles):
        constraints = constraints_of(profile)
        if constraints not in masks:
            masks[constraints] = allowed(classes, constraints)
        eligible[widx] = masks[constraints]
    return eligible


def constraints_of(profile: WorkloadProfile) -> Constraints:
    """Every field of a profile that decides which offers it may rank (countries upper-cased,
    as the offers' country codes are)."""
    return (
        tuple(profile.providers),
        tuple(country.upper() for country in profile.countries),
        tuple(profile.continents),
        profile.eu_only,
        profile.max_gpus,
        profile.spot_ok,
        profile.require_available,
        tuple(profile.pricing),
        profile.sla,
        tuple(profile.sla_allow),
    )


def allowed(classes: Classes, constraints: Constraints) -> Bools:
    """The classes one set of constraints allows."""
    providers, countries, continents, eu_only, max_gpus, spot_ok = constraints[:6]
    require_available, pricing, sla, sla_allow = constraints[6:]
    mask = np.ones(len(classes.provider), dtype=np.bool_)
    if providers:
        mask &= classes.has_provider & _among(classes.provider, providers)
    if countries:
        mask &= classes.has_country & _among(classes.country, countries)
    if continents:
        mask &= classes.has_continent & _among(classes.continent, continents)
    if eu_only:
        mask &= classes.is_eu
    if max_gpus is not None:
        mask &= classes.has_count & (classes.gpu_count <= max_gpus)
    if not spot_ok:
        mask &= classes.pricing == "on_demand"
    if require_available:
        mask &= classes.rentable
    if pricing:
        mask &= _among(classes.pricing, pricing)
    if sla:
        mask &= _sla_allowed(classes, sla_allow)
    return mask


def offers_allowed(classes: Classes, profile: WorkloadProfile) -> Bools:
    """The offers (classes of one offer each) the profile allows whatever their kind of
    pricing: where it may run, at most `max_gpus` per offer, only what can be rented now with
    `require_available`, no marketplace host with `sla` unless `sla_allow` lets them in. For a
    comparison that names each kind of pricing itself (`tco`), as spot_ok, pricing and sla's
    spot exclusion decide only which kinds `advise` ranks."""
    every_kind = {"spot_ok": True, "pricing": [], "sla_allow": [*profile.sla_allow, "spot"]}
    return allowed(classes, constraints_of(profile.model_copy(update=every_kind)))


def _sla_allowed(classes: Classes, sla_allow: Sequence[str]) -> Bools:
    """A workload with an SLA: spot offers and marketplace hosts only where it lets them in."""
    mask = np.ones(len(classes.provider), dtype=np.bool_)
    if "spot" not in sla_allow:
        mask &= classes.has_pricing & (classes.pricing != "spot")
    if "marketplace" not in sla_allow:
        mask &= ~classes.no_sla
    return mask


def _among(column: Any, values: Iterable[str]) -> Bools:
    """Whether each value of an object column of str is one of `values`."""
    found = np.zeros(len(column), dtype=np.bool_)
    for value in set(values):
        found |= column == value
    return found
