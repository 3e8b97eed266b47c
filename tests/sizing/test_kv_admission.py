"""KV capacity admits what the engine admits (issue 28, defect 2): a paged engine holds each
sequence's KV as it grows (input + output/2 on average), TensorRT-LLM's default scheduler
reserves the whole sequence, and sizes its pool from the memory left after the weights."""

from __future__ import annotations

import dataclasses

import pytest

from priceadvisor import llm
from priceadvisor.gpu_specs import gpu_catalog
from priceadvisor.sizing.estimate import (
    Workload,
    estimate,
    kv_tokens,
    serving_memory,
    usable_gib,
)

L70 = llm.lookup("llama-3.3-70b")
H100 = gpu_catalog().gpus["H100-SXM-80GB"]
# H100 x2 TP2 FP8 Llama 3.3 70B, 128 in / 2,048 out, as many requests as fit.
LONG_OUTPUT = Workload(
    "batch", L70, "fp8", input_tokens=128, output_tokens=2048, concurrency=4096, engine="vllm"
)


def test_a_paged_engine_admits_against_the_mean_occupancy() -> None:
    result = estimate(LONG_OUTPUT, "H100-SXM-80GB", 2, tensor_parallel=2)
    capacity = kv_tokens(LONG_OUTPUT, H100, 2)
    assert result.max_concurrency == capacity // (128 + 1024)
    assert result.batch == result.max_concurrency
    assert result.max_concurrency > 1.8 * (capacity // (128 + 2048))


def test_trt_llm_reserves_the_whole_sequence_from_the_memory_after_the_weights() -> None:
    work = dataclasses.replace(LONG_OUTPUT, engine="trt-llm")
    result = estimate(work, "H100-SXM-80GB", 2, tensor_parallel=2)
    capacity = kv_tokens(work, H100, 2)
    assert result.max_concurrency == capacity // (128 + 2048)
    parts, free = serving_memory(work, H100, 2)
    assert free == pytest.approx(0.9 * (usable_gib(H100, 1.0) - sum(parts.values())))
    assert free > serving_memory(LONG_OUTPUT, H100, 2)[1]  # more than vLLM's 0.9 of the GPU


def test_a_request_whose_whole_sequence_does_not_fit_is_not_admitted() -> None:
    work = Workload("serve", L70, "fp8", input_tokens=200_000, output_tokens=300_000)
    result = estimate(work, "H100-SXM-80GB", 2, tensor_parallel=2)
    assert 350_000 < kv_tokens(work, H100, 2) < 500_000  # the mean (350k) would fit
    assert not result.fits and result.max_concurrency == 0
