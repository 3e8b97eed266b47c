"""Issue 28: a batch whose requests all start together grows in lockstep past the KV pool;
vLLM then preempts and recomputes (RECOMPUTE mode), which the throughput pays."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from priceadvisor import llm
from priceadvisor.gpu_specs import gpu_catalog
from priceadvisor.sizing.estimate import (
    Workload,
    kv_tokens,
    saturated_step_seconds,
    wave_recompute_tokens,
)
from tests.conftest import cli

L405 = llm.lookup("llama-3.1-405b")
MI300X = gpu_catalog().gpus["MI300X-192GB"]


def _wave(engine: str = "vllm", output: int = 4096, one_wave: bool = True) -> Workload:
    return Workload("batch", L405, "fp8", 128, output, 1500, engine=engine, one_wave=one_wave)


def test_a_wave_past_the_pool_re_prefills_c_ln_l2_over_l1_tokens() -> None:
    """1,500 requests of 128 + 4,096 tokens on 8 MI300X at TP8 (AMD's 405B row): the pool of
    C tokens fills at L1 = C/1500; those preempted between L1 and L2 = 4,224 re-prefill
    C·ln(L2/L1) tokens."""
    work = _wave()
    capacity = kv_tokens(work, MI300X, 8)
    assert capacity < 1500 * 4224  # the wave outgrows the pool
    expected = capacity * math.log(4224 / (capacity / 1500))
    assert wave_recompute_tokens(work, MI300X, 8, 1500) == pytest.approx(expected)


def test_the_recompute_slows_the_saturated_step() -> None:
    staggered = saturated_step_seconds(_wave(one_wave=False), MI300X, 8, 1500)
    assert saturated_step_seconds(_wave(), MI300X, 8, 1500) > staggered


def test_no_recompute_when_the_wave_fits_or_the_engine_reserves() -> None:
    """The 2,048-output sibling fits at full length; TensorRT-LLM reserves every request's full
    length before starting it and never preempts; a staggered batch pays nothing."""
    assert wave_recompute_tokens(_wave(output=2048), MI300X, 8, 1500) == 0.0
    assert wave_recompute_tokens(_wave(engine="trt-llm"), MI300X, 8, 1500) == 0.0
    assert wave_recompute_tokens(_wave(one_wave=False), MI300X, 8, 1500) == 0.0


def test_a_short_prompt_wave_fills_no_earlier_than_its_prompts() -> None:
    """A pool smaller than the prompts themselves: the wave is preempted from its prompt length."""
    tiny = dataclasses.replace(_wave(), concurrency=1500)
    capacity = kv_tokens(tiny, MI300X, 8)
    batch = capacity // 64  # far more requests than the pool holds even at 128 tokens
    expected = capacity * math.log(4224 / 128)
    assert wave_recompute_tokens(tiny, MI300X, 8, batch) == pytest.approx(expected)


def _estimate(capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, str]:
    base = ("estimate", "--format", "json", "--gpu", "MI300X-192GB", "--gpus", "8")
    work = ("--model", "llama-3.1-405b", "--precision", "fp8", "--engine", "vllm")
    lengths = ("--input-tokens", "128", "--output-tokens", "4096", "--concurrency", "1500")
    return cli(capsys, *base, *work, *lengths, *extra)


def test_estimate_states_a_wave_and_sizes_its_recompute(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = _estimate(capsys, "--task", "batch")
    assert code == 0, err
    staggered = json.loads(out)["tokens_per_s"]
    code, out, err = _estimate(capsys, "--task", "batch", "--one-wave")
    assert code == 0, err
    wave = json.loads(out)
    assert wave["tokens_per_s"] < staggered
    assert any("re-prefills" in note and "fits at full length" in note for note in wave["notes"])


def test_a_wave_is_a_batch_only_input(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _estimate(capsys, "--task", "serve", "--one-wave")
    assert code != 0 and not out
    assert "one_wave applies to batch tasks" in err and "Traceback" not in err
