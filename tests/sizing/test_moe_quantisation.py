"""Round 16: low-precision MoE training pays the quantisation of its expert GEMMs' operands, a
memory-bound cost whose share of the GEMM time grows as the experts narrow (torchao's MXFP8
grouped-GEMM breakdown)."""

from __future__ import annotations

import dataclasses

import pytest

from priceadvisor import llm
from priceadvisor.gpu_specs import gpu_catalog
from priceadvisor.sizing.estimate import (
    QUANTISATION_BANDWIDTH_SHARE,
    Workload,
    bandwidth,
    expert_quantisation_seconds,
    prior_compute_seconds,
)

H100 = gpu_catalog().gpus["H100-SXM-80GB"]
FINE = llm.lookup("qwen3-30b-a3b")  # 128 experts of width 768, hidden 2048, top-8
COARSE = llm.lookup("deepseek-v3")  # 256 experts of width 2048, hidden 7168, top-8


def fp8_gain(arch: llm.Architecture) -> float:
    bf16 = Workload("pretrain", arch, "bf16", seq_len=4096)
    fp8 = dataclasses.replace(bf16, precision="fp8")
    return prior_compute_seconds(bf16, H100) / prior_compute_seconds(fp8, H100)


def test_quantisation_traffic_per_token_follows_the_expert_shapes() -> None:
    # Per top-k copy and MoE layer: the up projection's input (d) and gated output gradient
    # (2e), the down projection's input (e) and output gradient (d), 4 bytes each.
    elements = 2 * FINE.hidden + 3 * FINE.expert_ffn
    traffic = FINE.moe_layers * FINE.experts_per_token * elements * 4
    seconds = traffic / (bandwidth(H100) * QUANTISATION_BANDWIDTH_SHARE)
    assert expert_quantisation_seconds(FINE, H100) == pytest.approx(seconds)


def test_narrow_experts_gain_less_from_fp8() -> None:
    # Per expert FLOP, a width-768 expert casts ~3x the bytes of a width-2048 one, so the
    # fine-grained MoE keeps less of the FP8 GEMM speed-up (both stay faster than BF16).
    assert 1 < fp8_gain(FINE) < fp8_gain(COARSE) < 1.31


def test_sixteen_bit_moe_training_pays_no_quantisation() -> None:
    bf16 = Workload("pretrain", FINE, "bf16", seq_len=4096)
    without = dataclasses.replace(bf16, arch=dataclasses.replace(FINE, expert_ffn=1 << 20))
    # BF16 time follows the FLOPs alone: a huge expert width changes nothing but the FLOPs,
    # which are the published active parameters here, so the time is the same.
    assert prior_compute_seconds(bf16, H100) == prior_compute_seconds(without, H100)
