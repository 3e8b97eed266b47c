"""Advice sizes training on whole GPUs from the run's figures alone
(`estimate.training_advice`), without building the estimate and its notes: what it keeps of
each offer shape must be what the whole estimate gives, bit for bit, on every GPU model and
count, fitting or not, refused or not, one by one or a workload's shapes together."""

from __future__ import annotations

from typing import Any

import pytest

from priceadvisor.config import WorkloadProfile
from priceadvisor.gpu_specs import gpu_catalog
from priceadvisor.sizing import advisor
from priceadvisor.sizing import estimate as sizing
from priceadvisor.sizing.memo import sizing_pass
from priceadvisor.sizing.workloads import to_workload
from tests.sizing.reference import kept_from_whole_estimate

# Tasks, stacks (eager, the 2021 Megatron layout), stated layouts, recompute, MoE, a whole run.
TRAINING: list[dict[str, Any]] = [
    {"task": "lora", "model": "llama-3.1-8b", "train_tokens": 1e9},
    {"task": "qlora", "model": "llama-3.1-70b", "train_tokens": 2e8, "stack": "hf-trainer"},
    {
        "task": "finetune",
        "model": "llama-3.1-8b",
        "precision": "fp8",
        "tensor_parallel": 2,
        "train_tokens": 1e9,
    },
    {"task": "finetune", "model": "mixtral-8x7b", "train_tokens": 1e9, "recompute": "full"},
    {"task": "pretrain", "model": "llama-3.1-8b", "train_tokens": 1e10, "goodput": 0.9},
    {
        "task": "pretrain",
        "model": "gemma-2-27b",
        "train_tokens": 1e10,
        "stack": "megatron-2021",
        "tensor_parallel": 2,
        "pipeline_parallel": 2,
        "micro_batches": 4,
    },
    {"task": "finetune", "model": "qwen2.5-7b", "train_tokens": 5e8, "seq_len": 32768},
]
COUNTS = (0.5, 1.0, 2.0, 3.0, 4.0, 8.0, 16.0)


@pytest.mark.parametrize("spec", TRAINING, ids=[f"{s['task']}-{s['model']}" for s in TRAINING])
def test_advice_keeps_what_the_whole_training_estimate_gives(spec: dict[str, Any]) -> None:
    profile = WorkloadProfile(name="w", **spec)
    work = to_workload(profile)
    shapes = [(model, count) for model in sorted(gpu_catalog().gpus) for count in COUNTS]
    expected = [kept_from_whole_estimate(profile, work, *shape) for shape in shapes]
    alone = [repr(advisor._size(profile, work, *shape)) for shape in shapes]
    with sizing_pass():  # as the advisor sizes a workload
        together = [repr(kept) for kept in advisor._size_all(profile, work, shapes)]
    assert alone == expected
    assert together == expected
    fitting = sum(kept != "None" for kept in expected)
    assert 0 < fitting < len(expected)  # shapes that fit and shapes that do not were checked


def test_a_training_estimate_is_built_from_its_figures_with_its_notes() -> None:
    """`_train` is `training_figures` and the notes: the figures an estimate states are the
    ones advice reads, and the notes still say why (recompute, PCIe, eager stack, bubble)."""
    profile = WorkloadProfile(
        name="w",
        task="finetune",
        model="llama-3.1-8b",
        stack="hf-trainer",
        pipeline_parallel=2,
        micro_batches=2,
        train_tokens=1e9,
    )
    work = to_workload(profile)
    gpu = gpu_catalog().gpus["L40S-48GB"]
    figures = sizing.training_figures(work, gpu, 4, None)
    built = sizing.estimate(work, gpu.id, 4)
    assert (built.tokens_per_s, built.hours, built.binding, built.uncertainty) == (
        figures.tokens_per_s,
        figures.hours,
        figures.binding,
        figures.uncertainty,
    )
    notes = " ".join(built.notes)
    for said in ("recompute", "PCIe-only", "eager stack", "pipeline bubble"):
        assert said in notes, notes
