"""The offer classes a workload's constraints allow (sizing.eligibility, numpy) are those the
SQL definition below allows — the statement advice ran before, NULLs and all — on random
classes and random workloads."""

from __future__ import annotations

import json
import random
from typing import Any

import duckdb
import numpy as np
import pytest

from priceadvisor.config import WorkloadProfile
from priceadvisor.sizing import eligibility

DEFINITION = """
WITH w AS (
    SELECT widx, eu_only, max_gpus, spot_ok, require_available, sla,
        from_json(sla_allow, '["VARCHAR"]') AS sla_allow,
        from_json(providers, '["VARCHAR"]') AS providers,
        from_json(countries, '["VARCHAR"]') AS countries,
        from_json(continents, '["VARCHAR"]') AS continents,
        from_json(pricing, '["VARCHAR"]') AS pricing
    FROM _workload_rows
)
SELECT w.widx, c.class_id
FROM w, _advice_classes AS c
WHERE (len(w.providers) = 0 OR list_contains(w.providers, c.provider))
  AND (len(w.countries) = 0 OR list_contains(w.countries, c.country))
  AND (len(w.continents) = 0 OR list_contains(w.continents, c.continent))
  AND (NOT w.eu_only OR c.is_eu)
  AND (w.max_gpus IS NULL OR c.gpu_count <= w.max_gpus)
  AND (c.pricing = 'on_demand' OR w.spot_ok)
  AND (NOT w.require_available OR c.rentable)
  AND (len(w.pricing) = 0 OR list_contains(w.pricing, c.pricing))
  AND (NOT w.sla OR ((c.pricing <> 'spot' OR list_contains(w.sla_allow, 'spot'))
      AND (NOT c.no_sla OR list_contains(w.sla_allow, 'marketplace'))))
"""
PROVIDERS = ["aws", "gcp", "runpod", "vast", "lambda"]
COUNTRIES = ["US", "DE", "FR", "JP", "CA"]
CONTINENTS = ["NA", "EU", "AS", "OC"]


def random_classes(rng: random.Random, n: int) -> list[tuple[Any, ...]]:
    """Classes as `advisor.GROUPS_SQL` makes them, with NULLs where a column may hold one
    (and in a few where advice's offers table never has them: the definition still holds)."""

    def maybe(value: Any, null_share: float = 0.15) -> Any:
        return None if rng.random() < null_share else value

    return [
        (
            maybe(rng.choice(PROVIDERS), 0.02),
            maybe(rng.choice(COUNTRIES)),
            maybe(rng.choice(CONTINENTS)),
            maybe(rng.random() < 0.4, 0.05),
            maybe(rng.choice(["on_demand", "spot"]), 0.03),
            maybe(rng.choice([0.5, 1.0, 2.0, 4.0, 8.0]), 0.03),
            maybe(rng.random() < 0.5, 0.05),
            maybe(rng.random() < 0.3, 0.1),
            class_id,
        )
        for class_id in range(n)
    ]


def random_profile(rng: random.Random, i: int) -> WorkloadProfile:
    def some(values: list[str]) -> list[str]:
        return rng.sample(values, min(len(values), rng.choice([0, 0, 1, 2, 3])))

    return WorkloadProfile(
        name=f"w{i}",
        task="serve",
        model="llama-3.1-8b",
        providers=some(PROVIDERS),
        countries=[c.lower() if rng.random() < 0.3 else c for c in some(COUNTRIES)],
        continents=some(CONTINENTS),
        eu_only=rng.random() < 0.2,
        max_gpus=rng.choice([None, None, 1, 2, 4]),
        spot_ok=rng.random() < 0.5,
        require_available=rng.random() < 0.3,
        pricing=some(["on_demand", "spot"]),
        sla=rng.random() < 0.4,
        sla_allow=some(["spot", "marketplace"]),
    )


def by_definition(
    con: duckdb.DuckDBPyConnection, profiles: list[WorkloadProfile], n_classes: int
) -> np.ndarray:
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _workload_rows (widx INTEGER, providers VARCHAR, "
        "countries VARCHAR, continents VARCHAR, eu_only BOOLEAN, max_gpus INTEGER, "
        "spot_ok BOOLEAN, require_available BOOLEAN, pricing VARCHAR, sla BOOLEAN, "
        "sla_allow VARCHAR)"
    )
    con.executemany(
        "INSERT INTO _workload_rows VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                widx,
                json.dumps(p.providers),
                json.dumps([c.upper() for c in p.countries]),
                json.dumps(list(p.continents)),
                p.eu_only,
                p.max_gpus,
                p.spot_ok,
                p.require_available,
                json.dumps(list(p.pricing)),
                p.sla,
                json.dumps(list(p.sla_allow)),
            )
            for widx, p in enumerate(profiles)
        ],
    )
    allowed = np.zeros((len(profiles), n_classes), dtype=np.bool_)
    for widx, class_id in con.execute(DEFINITION).fetchall():
        allowed[widx, class_id] = True
    return allowed


@pytest.mark.parametrize("seed", range(6))
def test_the_classes_allowed_are_those_of_the_sql_definition(seed: int) -> None:
    rng = random.Random(seed)
    classes = random_classes(rng, rng.choice([1, 40, 300]))
    profiles = [random_profile(rng, i) for i in range(60)]
    profiles += [profiles[0].model_copy(update={"name": "same-constraints"}), profiles[1]]
    with duckdb.connect() as con:
        con.execute(
            "CREATE TEMP TABLE _advice_classes (provider VARCHAR, country VARCHAR, "
            "continent VARCHAR, is_eu BOOLEAN, pricing VARCHAR, gpu_count DOUBLE, "
            "rentable BOOLEAN, no_sla BOOLEAN, class_id BIGINT)"
        )
        shuffled = rng.sample(classes, len(classes))  # read back in class_id order
        con.executemany("INSERT INTO _advice_classes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", shuffled)
        expected = by_definition(con, profiles, len(classes))
        got = eligibility.eligible_classes(eligibility.read_classes(con), profiles)
    assert got.dtype == np.bool_ and got.shape == expected.shape
    assert (got == expected).all()
    assert 0 < expected.sum() < expected.size  # some classes allowed, some not


def test_no_class_means_an_empty_mask() -> None:
    profile = WorkloadProfile(name="w", task="serve", model="llama-3.1-8b")
    with duckdb.connect() as con:
        con.execute(
            "CREATE TEMP TABLE _advice_classes (provider VARCHAR, country VARCHAR, "
            "continent VARCHAR, is_eu BOOLEAN, pricing VARCHAR, gpu_count DOUBLE, "
            "rentable BOOLEAN, no_sla BOOLEAN, class_id BIGINT)"
        )
        classes = eligibility.read_classes(con)
        assert eligibility.eligible_classes(classes, [profile]).shape == (1, 0)
        assert classes.providers() == []
