"""The set-based advisor ranks exactly as the row-by-row definition (tests/sizing/per_row.py)
on random offers with many equal prices, so ties and the top-k boundary are exercised."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from priceadvisor.config import WorkloadProfile
from priceadvisor.gpu_specs import region_catalog
from priceadvisor.records import RawQuote
from priceadvisor.sizing.advisor import rank
from priceadvisor.store import connections
from tests.conftest import ingest_quotes
from tests.sizing.per_row import ranking

PROVIDERS = ("aws", "azure", "runpod", "scaleway")
GPUS = ("H100 SXM", "A100 80GB", "L40S", "A10", "RTX 4090")
COUNTS = (1 / 7, 0.5, 1.0, 2.0, 3.0, 4.0, 8.0)
PRICES = (0.5, 1.0, 2.0, 2.5, 4.0)  # few values: many offers cost exactly the same
MODELS = ("llama-3.2-1b", "llama-3.1-8b", "mistral-7b", "qwen2.5-7b")


def _quotes(rng: random.Random, provider: str) -> list[RawQuote]:
    regions = sorted(r for p, r in region_catalog() if p == provider)[:4]
    return [
        RawQuote(
            region=rng.choice(regions),
            zone=rng.choice(("", "a", "b")),
            instance_type=f"i{i}",
            pricing=(pricing := rng.choice(("on_demand", "spot"))),
            price=rng.choice(PRICES),
            price_basis="gpu",
            gpu_name_raw=rng.choice(GPUS),
            gpu_count=rng.choice(COUNTS),
            interruption_rate=rng.choice((None, 0.1)) if pricing == "spot" else None,
        )
        for i in range(rng.randint(40, 80))
    ]


def _profile(rng: random.Random, i: int) -> WorkloadProfile:
    task = rng.choice(("serve", "batch", "lora"))
    serving = task != "lora"
    countries = sorted({r.country for r in region_catalog().values() if r.country})
    return WorkloadProfile(
        name=f"w{i}",
        task=task,
        model=rng.choice(MODELS),
        precision=rng.choice(("bf16", "fp8")),
        train_tokens=None if serving else 1e8,
        monthly_output_tokens=rng.choice((None, 1e9, 1e11)),
        spot_ok=rng.random() < 0.5,
        providers=rng.sample(PROVIDERS, rng.randint(0, 2)),
        countries=rng.sample(countries, 3) if rng.random() < 0.2 else [],
        continents=rng.choice(([], [], ["EU"], ["NA", "EU"])),  # type: ignore[arg-type]
        eu_only=rng.random() < 0.2,
        max_gpus=rng.choice((None, None, 2, 4)),
        pricing=rng.choice(([], [], ["spot"], ["on_demand"])),  # type: ignore[arg-type]
        tensor_parallel=rng.choice((None, None, 1, 2)) if serving else None,
        replicas=rng.choice((None, 3)) if serving else None,
        # run costs: runpod prices disk and egress, scaleway bills per minute, azure is unknown
        storage_gb=rng.choice((None, 50.0, 400.0)),
        egress_gb_per_month=rng.choice((None, 100.0)),
        checkpoint_minutes=rng.choice((5.0, 30.0)),
        sla=rng.random() < 0.2,
    )


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_set_based_ranking_equals_the_per_row_definition(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    db = tmp_path / "r.duckdb"
    for provider in PROVIDERS:
        ingest_quotes(db, provider, _quotes(rng, provider))
    profiles = [_profile(rng, i) for i in range(12)]
    with connections.writer(db) as con:
        for keep in (3, 100):
            names, rows = rank(con, profiles, keep=keep)
            expected = ranking(con, profiles, keep)
            assert _compared(names, rows) == expected
    assert any(r[1] == 3 for r in expected)  # the set exercised a full top 3 at least once


def _compared(names: list[str], rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    records = [dict(zip(names, row, strict=True)) for row in rows]
    keys = ("workload", "rank", "provider", "region", "zone", "instance_type", "pricing")
    return [
        (*(r[k] for k in keys), r["cost_usd"] if r["cost_usd"] is not None else r["usd_per_mtok"])
        for r in records
    ]
