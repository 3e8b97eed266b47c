"""Advice sizes serving with the layout left to sizing from the fastest layout's figures alone
(`estimate.fastest_figures`), without building the estimate: what it keeps of each offer shape
must be what the whole estimate gives, bit for bit, on every GPU model and count, fitting or
not, alone or in a workload's sizing pass."""

from __future__ import annotations

from typing import Any

import pytest

from priceadvisor.config import WorkloadProfile
from priceadvisor.gpu_specs import gpu_catalog
from priceadvisor.sizing import advisor
from priceadvisor.sizing.memo import sizing_pass
from priceadvisor.sizing.workloads import to_workload
from tests.sizing.reference import kept_from_whole_estimate

SERVING = [
    {"task": "serve", "model": "llama-3.1-8b", "precision": "fp8", "tpot_ms_max": 30},
    {"task": "serve", "model": "llama-3.1-70b", "concurrency": 2, "ttft_ms_max": 400},
    {"task": "batch", "model": "qwen2.5-7b", "concurrency": None, "engine": "trt-llm"},
    {"task": "batch", "model": "mixtral-8x7b", "concurrency": 512, "engine": "vllm"},
    {"task": "serve", "model": "llama-3.1-70b", "pipeline_parallel": 2, "kv_precision": "fp8"},
    {"task": "serve", "model": "gemma-2-27b", "engine": "vllm-v0", "precision": "fp8"},
    {"task": "batch", "model": "llama-3.1-8b", "one_wave": True, "concurrency": 1024},
    {"task": "serve", "model": "llama-3.1-405b", "precision": "fp4", "tpot_ms_max": 60},
]
COUNTS = (1.0, 2.0, 4.0, 8.0, 16.0)


@pytest.mark.parametrize("spec", SERVING, ids=[f"{s['task']}-{s['model']}" for s in SERVING])
def test_advice_keeps_what_the_whole_estimate_gives(spec: dict[str, Any]) -> None:
    profile = WorkloadProfile(name="w", monthly_output_tokens=1e9, **spec)
    work = to_workload(profile)
    shapes = [(model, count) for model in sorted(gpu_catalog().gpus) for count in COUNTS]
    expected = [kept_from_whole_estimate(profile, work, *shape) for shape in shapes]
    alone = [repr(advisor._size(profile, work, *shape)) for shape in shapes]
    with sizing_pass():  # as the advisor sizes a workload
        in_a_pass = [repr(advisor._size(profile, work, *shape)) for shape in shapes]
    assert alone == expected
    assert in_a_pass == expected
    fitting = sum(kept != "None" for kept in expected)
    assert 0 < fitting < len(expected)  # shapes that fit and shapes that do not were checked
