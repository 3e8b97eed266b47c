"""Advice finds a serving workload's figures for all its shapes at once
(`layoutbounds.fastest_figures_of`), the layouts' speed bounds computed as arrays over the GPU
models (`layoutbounds.speed_bounds`): each bound must be `estimate.replica_speed_bound`'s to
the last bit (so the search sizes the same layouts), and each shape's figures what
`fastest_figures` gives it alone, refusals included."""

from __future__ import annotations

import dataclasses
import itertools
import math
from typing import Any

import pytest

from priceadvisor import llm
from priceadvisor.config import WorkloadProfile
from priceadvisor.gpu_specs import gpu_catalog
from priceadvisor.sizing import advisor, layoutbounds
from priceadvisor.sizing import estimate as sizing
from priceadvisor.sizing.estimate import Scales, SizingError, Workload
from priceadvisor.sizing.memo import sizing_pass
from priceadvisor.sizing.workloads import to_workload
from tests.sizing.reference import sizable_gpus

MODELS = ("llama-3.2-1b", "llama-3.1-8b", "mixtral-8x7b", "llama-3.1-70b", "llama-3.1-405b")
SCALES = Scales(
    factors={"decode": 0.9, "serve-throughput": 1.1, "engine-amd": 0.8, "engine:vllm": 1.05},
    uncertainty={"decode": 0.25},
)
# Engines (caps, KV pools, kernels), batches left to the engine, targets, stages, KV precision.
VARIANTS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("serve", "bf16", {}),
    ("serve", "fp8", {"tpot_ms_max": 40.0, "engine": "vllm-v0"}),
    ("batch", "fp8", {"concurrency": None, "engine": "vllm", "scales": SCALES}),
    ("batch", "bf16", {"concurrency": None, "engine": "trt-llm"}),
    ("batch", "bf16", {"concurrency": None, "engine": "sglang", "one_wave": True}),
    ("serve", "int4", {"concurrency": 64, "input_tokens": 8000, "pipeline_parallel": 2}),
    ("serve", "fp4", {"kv_precision": "fp8", "ttft_ms_max": 300.0}),
)
COUNTS = (1, 2, 3, 4, 6, 8, 16)


def _works() -> list[Workload]:
    return [
        dataclasses.replace(Workload(task, llm.lookup(model), precision), **changes)  # type: ignore[arg-type]
        for model, (task, precision, changes) in itertools.product(MODELS, VARIANTS)
    ]


def test_the_array_bounds_are_the_scalar_bounds_to_the_last_bit() -> None:
    gpus = sizable_gpus()
    checked = {"fits": 0, "does not fit": 0}
    for work in _works():
        layouts = sorted({layout for n in (8, 16) for layout in sizing.serving_layouts(work, n)})
        with sizing_pass():
            table = layoutbounds.speed_bounds(work, gpus, layouts)
        for gpu, (tp, pp) in itertools.product(gpus, layouts):
            got = table.rows[gpu.id][table.column[(tp, pp)]]
            staged = dataclasses.replace(work, pipeline_parallel=pp)
            want = sizing.replica_speed_bound(staged, gpu, tp, pp)  # no pass: from scratch
            if want is None:
                assert math.isnan(got), (work, gpu.id, tp, pp)
                checked["does not fit"] += 1
            else:
                assert repr(got) == repr(want), (work, gpu.id, tp, pp)
                checked["fits"] += 1
    assert min(checked.values()) > 500, checked


def _alone(work: Workload, model: str, count: int) -> str:
    try:
        return repr(sizing.fastest_figures(work, model, count))
    except SizingError:
        return "refused"


def test_the_figures_of_all_shapes_are_each_shapes_alone() -> None:
    models = sorted(gpu_catalog().gpus)  # Trainium included: refused
    shapes = [(model, count) for model in models for count in COUNTS]
    kinds = {"figures": 0, "none fits": 0, "refused": 0}
    for work in _works():
        expected = [_alone(work, *shape) for shape in shapes]
        found = layoutbounds.fastest_figures_of(work, shapes)
        got = [repr(found[shape]) if shape in found else "refused" for shape in shapes]
        assert got == expected, work
        for kept in expected:
            kind = {"refused": "refused", "None": "none fits"}.get(kept, "figures")
            kinds[kind] += 1
    assert min(kinds.values()) > 50, kinds


PROFILES = [
    {"task": "serve", "model": "llama-3.1-8b", "precision": "fp8", "tpot_ms_max": 30},
    {"task": "batch", "model": "mixtral-8x7b", "concurrency": None, "engine": "trt-llm"},
    {"task": "serve", "model": "llama-3.1-70b", "pipeline_parallel": 2},
    {"task": "serve", "model": "llama-3.1-70b", "tensor_parallel": 4},
    {"task": "lora", "model": "llama-3.1-8b", "train_tokens": 1e9},
]


@pytest.mark.parametrize("spec", PROFILES, ids=[f"{s['task']}-{s['model']}" for s in PROFILES])
def test_advice_sizes_a_workloads_shapes_together_as_one_by_one(spec: dict[str, Any]) -> None:
    profile = WorkloadProfile(name="w", monthly_output_tokens=1e9, **spec)
    work = to_workload(profile)
    shapes = [
        (model, count)
        for model in sorted(gpu_catalog().gpus)
        for count in (0.5, 1.0, 2.0, 3.0, 4.0, 8.0)
    ]
    one_by_one = [repr(advisor._size(profile, work, *shape)) for shape in shapes]
    with sizing_pass():  # as the advisor sizes a workload
        together = [repr(kept) for kept in advisor._size_all(profile, work, shapes)]
    assert together == one_by_one
    assert 0 < sum(kept != "None" for kept in one_by_one) < len(shapes)


def _unfit_by_definition(work: Workload, model: str, count: int) -> bool:
    """`unfit_for_certain` as first written: the fallback layout is one the search tried."""
    gpu = gpu_catalog().gpus[model]
    with sizing_pass():
        tp = sizing.default_tensor_parallel(work, gpu, count)
        return (tp, work.pipeline_parallel) in sizing.layouts_in_pass(work, count)


def test_a_shape_no_layout_fits_is_unfit_for_certain_as_by_its_definition() -> None:
    few_heads = dataclasses.replace(llm.lookup("llama-3.1-70b"), heads=4)  # TP 8+ never tried
    works = [*_works(), Workload("serve", few_heads, "bf16"), Workload("batch", few_heads, "fp8")]
    models = ("L4-24GB", "A10G-24GB", "A100-SXM-40GB", "H100-SXM-80GB", "MI300X-192GB")
    answers = {True: 0, False: 0}
    for work in works:
        for model, count in itertools.product(models, (*COUNTS, 32)):
            if _alone(work, model, count) != "None":
                continue  # a layout fits, or the shape is refused: never asked
            unfit = sizing.unfit_for_certain(work, model, count)
            assert unfit == _unfit_by_definition(work, model, count), (work, model, count)
            answers[unfit] += 1
    assert min(answers.values()) > 0, answers
