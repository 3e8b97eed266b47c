"""Synthetic provider snapshots for benchmarks: regions x zones x GPU models x GPU counts x
instance flavours x pricing kinds, with a chosen share of prices changing between snapshots.

Usage as a module: `snapshots(n_offers, change_share, seed)` yields lists of RawQuote, each the
next snapshot of the same provider.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
from collections.abc import Iterator

from priceadvisor.gpu_specs import gpu_catalog, region_catalog
from priceadvisor.records import RawQuote

# Raw spellings as providers write them, so name resolution is part of what is measured.
RAW_NAMES = [
    "NVIDIA H100 80GB HBM3",
    "H100 PCIe",
    "H100 NVL",
    "H200",
    "B200",
    "A100-SXM4-80GB",
    "A100-SXM4-40GB",
    "A100 80GB PCIe",
    "L40S",
    "L4",
    "A10G",
    "A10",
    "T4",
    "V100-SXM2-32GB",
    "RTX 4090",
    "RTX 3090",
    "RTX A6000",
    "RTX 6000 Ada",
    "L40",
    "A40",
    "MI300X",
    "GH200",
    "RTX 5090",
    "RTX A5000",
    "Mystery Accelerator X1",  # the last one stays unmapped
]
COUNTS = [1, 2, 4, 8]
ZONES = ["a", "b"]
PRICINGS = ["on_demand", "spot"]


def base_quotes(n_offers: int, seed: int) -> list[RawQuote]:
    rng = random.Random(seed)
    regions = sorted(r for (p, r) in region_catalog() if p == "aws")
    per_region = len(ZONES) * len(RAW_NAMES) * len(COUNTS) * len(PRICINGS)
    flavours = range(max(1, -(-n_offers // (per_region * len(regions)))))
    memory = {name: _memory(name) for name in RAW_NAMES}
    keys = itertools.product(regions, ZONES, RAW_NAMES, COUNTS, flavours, PRICINGS)
    quotes = []
    for region, zone, name, count, flavour, pricing in itertools.islice(keys, n_offers):
        per_gpu = rng.uniform(0.2, 12.0) * (0.4 if pricing == "spot" else 1)
        slug = name.lower().replace(" ", "-")
        quotes.append(
            RawQuote(
                region=region,
                zone=f"{region}{zone}",
                instance_type=f"{slug}.{count}x.f{flavour}",
                pricing=pricing,
                price=round(per_gpu, 4),
                price_basis="gpu",
                gpu_name_raw=name,
                gpu_count=float(count),
                gpu_memory_gb=memory[name],
                vcpus=8.0 * count,
                ram_gb=64.0 * count,
            )
        )
    return quotes


def _memory(name: str) -> float | None:
    model = gpu_catalog().resolve(name)
    return gpu_catalog().gpus[model].memory_gb if model else None


def next_snapshot(
    previous: list[RawQuote], change_share: float, rng: random.Random
) -> tuple[list[RawQuote], int]:
    """A copy with `change_share` of the prices moved by ±1-20 %; returns (quotes, changed)."""
    changed = 0
    out = []
    for quote in previous:
        if rng.random() < change_share:
            factor = 1 + rng.choice((-1, 1)) * rng.uniform(0.01, 0.2)
            quote = dataclasses.replace(  # noqa: PLW2901 - a changed copy replaces it
                quote, price=round((quote.price or 1) * factor, 4) or 0.0001
            )
            changed += 1
        out.append(quote)
    return out, changed


def snapshots(
    n_offers: int, change_share: float, seed: int = 1
) -> Iterator[tuple[list[RawQuote], int]]:
    rng = random.Random(seed)
    current = base_quotes(n_offers, seed)
    yield current, len(current)
    while True:
        current, changed = next_snapshot(current, change_share, rng)
        yield current, changed
