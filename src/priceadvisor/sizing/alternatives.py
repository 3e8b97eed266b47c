"""What would fit when a workload does not: more activation recomputation than the one given,
more GPUs, a lower precision, LoRA or QLoRA instead of a full finetune, or a GPU with more
memory. Each is found by sizing the changed
workload with the same estimate, never assumed from the numbers of the failed one.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from priceadvisor.gpu_specs import gpu_catalog
from priceadvisor.records import TRAINING_TASKS
from priceadvisor.sizing.estimate import (
    RECOMPUTE_ORDER,
    WEIGHT_BYTES,
    SizingError,
    Workload,
    estimate,
)

# Counts tried for "more GPUs": powers of two, as nodes and tensor-parallel groups come.
MAX_GPUS = 131072
# Training computes at 16 bit or FP8 (FP8 mixed precision: Transformer Engine); the weight-only
# formats (int8/int4) and FP4 are serving formats. QLoRA is the 4-bit way to train.
TRAINING_PRECISIONS = ("fp8",)


@dataclass(frozen=True, slots=True)
class Alternative:
    """One change to the estimate's options that makes the workload fit."""

    option: str  # the `estimate` option that changes: recompute, gpus, precision, task or gpu
    value: str | int
    gpu_model: str
    gpu_count: int

    def as_dict(self) -> dict[str, str | int]:
        return {"option": self.option, "value": self.value}

    def as_option(self) -> str:
        return f"--{self.option} {self.value}"


def what_fits(
    work: Workload, gpu_model: str, gpu_count: int, tensor_parallel: int | None = None
) -> list[Alternative]:
    """Every kind of change that fits, the smallest of each kind: the least recomputation above
    the given one, the fewest GPUs, the widest lower precision, LoRA before QLoRA, the GPU with
    the least memory above this one's."""
    found = [
        _more_recomputation(work, gpu_model, gpu_count, tensor_parallel),
        _more_gpus(work, gpu_model, gpu_count, tensor_parallel),
        _lower_precision(work, gpu_model, gpu_count, tensor_parallel),
        _adapter(work, gpu_model, gpu_count, tensor_parallel),
        _larger_gpu(work, gpu_model, gpu_count, tensor_parallel),
    ]
    return [a for a in found if a is not None]


def fits(work: Workload, gpu_model: str, gpu_count: int, tensor_parallel: int | None) -> bool:
    try:
        return estimate(work, gpu_model, gpu_count, tensor_parallel).fits
    except SizingError:  # a layout this count cannot hold (TP or PP does not divide it)
        return False


def _more_recomputation(
    work: Workload, gpu_model: str, gpu_count: int, tp: int | None
) -> Alternative | None:
    """A training run given a recompute policy: the next one that keeps fewer activations
    (an unset policy is already the least that fits)."""
    if work.task not in TRAINING_TASKS or not work.recompute:
        return None
    for policy in RECOMPUTE_ORDER[RECOMPUTE_ORDER.index(work.recompute) + 1 :]:
        if fits(dataclasses.replace(work, recompute=policy), gpu_model, gpu_count, tp):
            return Alternative("recompute", policy, gpu_model, gpu_count)
    return None


def _more_gpus(
    work: Workload, gpu_model: str, gpu_count: int, tp: int | None
) -> Alternative | None:
    counts = (2**k for k in range(MAX_GPUS.bit_length()) if gpu_count < 2**k <= MAX_GPUS)
    for count in counts:
        if fits(work, gpu_model, count, tp):
            return Alternative("gpus", count, gpu_model, count)
    return None


def _lower_precision(
    work: Workload, gpu_model: str, gpu_count: int, tp: int | None
) -> Alternative | None:
    for precision in lower_precisions(work):
        changed = dataclasses.replace(work, precision=precision)  # type: ignore[arg-type]
        if fits(changed, gpu_model, gpu_count, tp):
            return Alternative("precision", precision, gpu_model, gpu_count)
    return None


def lower_precisions(work: Workload) -> list[str]:
    """Formats with fewer bytes per weight than the workload's, the widest first."""
    allowed = TRAINING_PRECISIONS if work.task in TRAINING_TASKS else tuple(WEIGHT_BYTES)
    now = WEIGHT_BYTES[work.precision]
    lower = [p for p in allowed if WEIGHT_BYTES[p] < now]
    return sorted(lower, key=lambda p: -WEIGHT_BYTES[p])


def _adapter(work: Workload, gpu_model: str, gpu_count: int, tp: int | None) -> Alternative | None:
    """A full finetune as LoRA, or either as QLoRA (4-bit frozen weights)."""
    tasks = {"finetune": ("lora", "qlora"), "lora": ("qlora",)}.get(work.task, ())
    for task in tasks:
        if fits(dataclasses.replace(work, task=task), gpu_model, gpu_count, tp):  # type: ignore[arg-type]
            return Alternative("task", task, gpu_model, gpu_count)
    return None


def _larger_gpu(
    work: Workload, gpu_model: str, gpu_count: int, tp: int | None
) -> Alternative | None:
    catalog = gpu_catalog().gpus
    here = catalog[gpu_model].memory_gb
    larger = sorted(
        (g for g in catalog.values() if g.memory_gb > here), key=lambda g: (g.memory_gb, g.id)
    )
    for gpu in larger:
        if fits(work, gpu.id, gpu_count, tp):
            return Alternative("gpu", gpu.id, gpu.id, gpu_count)
    return None
