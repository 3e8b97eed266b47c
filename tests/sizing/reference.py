"""What the fast paths of advice's sizing are checked against: the whole estimate, and the GPU
models sizing accepts."""

from __future__ import annotations

from typing import Any

from priceadvisor.config import WorkloadProfile
from priceadvisor.gpu_specs import GpuSpec, gpu_catalog
from priceadvisor.sizing import advisor
from priceadvisor.sizing import estimate as sizing
from priceadvisor.sizing.estimate import SizingError


def kept_from_whole_estimate(profile: WorkloadProfile, work: Any, model: str, count: float) -> str:
    """What advice kept before its fast paths: the whole estimate, then its figures (repr)."""
    result = advisor.size_offer(work, profile.tensor_parallel, model, count)
    if result is None:
        return repr(None)
    kept = advisor.Sized(
        advisor.cost_factor(profile, result),
        advisor._fields(profile, result),
        result.tokens_per_s,
        result.replicas,
    )
    return repr(kept)


def sizable_gpus() -> list[GpuSpec]:
    """Every GPU model of the catalog that sizing accepts."""
    found = []
    for gpu in gpu_catalog().gpus.values():
        try:
            sizing.check_sizable(gpu)
        except SizingError:
            continue
        found.append(gpu)
    return found
