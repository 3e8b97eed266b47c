"""Issue 28 #3: AMD's collectives on the xGMI full mesh — the links a group really uses, and the
measured one-shot all-reduce of the ROCm engines."""

from __future__ import annotations

import dataclasses

import pytest

from priceadvisor import llm
from priceadvisor.gpu_specs import gpu_catalog
from priceadvisor.sizing.estimate import (
    ALLREDUCE_LATENCY_S,
    AMD_ONE_SHOT_ALLREDUCE_S,
    PREFILL_CHUNK_TOKENS,
    Workload,
    allreduce_latency,
    collective_bandwidth,
    decode_rates,
    decode_seconds,
    mesh_allreduce_share,
    pipeline_send_seconds,
    saturated_step_seconds,
    tp_allreduce_seconds,
)

L70 = llm.lookup("llama-3.1-70b")
GPUS = gpu_catalog().gpus
MI300X, H100 = GPUS["MI300X-192GB"], GPUS["H100-SXM-80GB"]


def test_an_amd_group_uses_only_the_links_to_its_peers() -> None:
    """A link is ~48 GB/s usable per direction (AMD's RCCL/xGMI blog); a group of t GPUs of the
    mesh has t-1 of them, where an NVSwitch port gives every group the whole fabric."""
    assert collective_bandwidth(MI300X, 2) == pytest.approx(48e9)
    assert collective_bandwidth(MI300X, 8) == pytest.approx(7 * 48e9)
    assert collective_bandwidth(H100, 2) == collective_bandwidth(H100, 8)
    mi250x = GPUS["MI250X-128GB"]  # GCDs joined otherwise: the fabric rate, as before
    assert collective_bandwidth(mi250x, 2) == collective_bandwidth(mi250x, 8) == 400e9


def test_a_16_mb_allreduce_at_tp2_on_mi300x_takes_what_was_measured() -> None:
    """ROCm/aiter#801: vLLM's all-reduce of 16 MB over 2 MI300 takes 356 µs (one xGMI link)."""
    hidden = 8192  # one layer's two all-reduces of 1024 tokens x 8192 x 2 B = 16 MiB each
    work = Workload("serve", dataclasses.replace(L70, layers=1, hidden=hidden))
    per_allreduce = tp_allreduce_seconds(work, MI300X, 2, 1024) / 2
    assert per_allreduce == pytest.approx(356e-6, rel=0.05)


def test_amd_tp4_allreduce_of_a_large_batch_runs_over_its_three_links() -> None:
    """Llama 3.1 70B at TP4, a decode step of 3200 sequences: 160 all-reduces of 52 MB, each
    moving 2·3/4 of it over the 3 x 48 GB/s into the group (not the 448 GB/s of the fabric)."""
    work = Workload("batch", L70, "fp8", engine="vllm")
    size = 3200 * L70.hidden * 2
    expected = 2 * L70.layers * 2 * 3 / 4 * size / (3 * 48e9)
    assert tp_allreduce_seconds(work, MI300X, 4, 3200) == pytest.approx(expected)


def test_an_allreduce_over_the_whole_mi300x_mesh_takes_what_rccl_measures() -> None:
    """rccl-tests all_reduce_perf on 8 MI300X (AMD ROCm blog "Understanding RCCL Bandwidth and
    xGMI Performance on AMD Instinct MI300X", March 2025, out-of-place): 16 MiB in 148.8 µs,
    64 MiB in 429.1 µs, 1 GiB in 5970.6 µs — far from the mesh's 7 x 48 GB/s below ~1 GiB."""
    one_layer = Workload("serve", dataclasses.replace(L70, layers=1, hidden=8192))
    for size, measured in ((2**24, 148.8e-6), (2**26, 429.1e-6), (2**30, 5970.6e-6)):
        tokens = size // (8192 * 2)
        per_allreduce = tp_allreduce_seconds(one_layer, MI300X, 8, tokens) / 2
        assert per_allreduce == pytest.approx(measured, rel=0.02)
    between = tp_allreduce_seconds(one_layer, MI300X, 8, 3 * 2**24 // (8192 * 2)) / 2
    assert 244.1e-6 < between < 429.1e-6  # 48 MiB: between the 32 and 64 MiB measurements


def test_only_the_measured_group_and_links_take_rccls_share() -> None:
    """The table measures all eight GPUs of MI300X's mesh (MI325X has the same links): a group
    of 2 or 4, MI355X's faster links and NVIDIA parts keep their rates."""
    assert mesh_allreduce_share(MI300X, 8, 2**24) == pytest.approx(197.26 / 336)
    assert mesh_allreduce_share(GPUS["MI325X-256GB"], 8, 2**24) == pytest.approx(197.26 / 336)
    assert mesh_allreduce_share(MI300X, 4, 2**24) == 1.0
    assert mesh_allreduce_share(GPUS["MI355X-288GB"], 8, 2**24) == 1.0
    assert mesh_allreduce_share(H100, 8, 2**24) == 1.0
    assert mesh_allreduce_share(MI300X, 8, 2**36) == pytest.approx(318.98 / 336)


def test_a_saturated_mi300x_step_all_reduces_its_prompts_in_prefill_chunks() -> None:
    """A saturated step spreads the prompts' prefill over the output tokens, but the engine
    all-reduces them chunk by chunk as it prefills them: the share is the chunk's (8192
    tokens, 128 MiB at Llama 3.1 70B's width), not that of the per-step slice (200 tokens)."""
    work = Workload("batch", L70, "fp8", input_tokens=128, output_tokens=2048, engine="vllm")
    batch, tp = 3200, 8
    rates = decode_rates(work, MI300X)
    slice_tokens = batch * 128 // 2048
    prefill = 2 * L70.active_params * batch * 128 / 2048 / (tp * rates.peak_flops * rates.mfu)
    chunked = tp_allreduce_seconds(work, MI300X, tp, slice_tokens, PREFILL_CHUNK_TOKENS)
    decode = sum(decode_seconds(work, MI300X, tp, batch))
    step = saturated_step_seconds(work, MI300X, tp, batch)
    assert step == pytest.approx(decode + prefill + chunked)
    assert chunked < tp_allreduce_seconds(work, MI300X, tp, slice_tokens)


def test_amd_pipeline_stages_send_over_one_link() -> None:
    work = Workload("serve", L70, "fp8", pipeline_parallel=2)
    one_link = 1000 * L70.hidden * 2 / 48e9
    assert pipeline_send_seconds(work, MI300X, 4, 1000) == pytest.approx(one_link)


def test_rocm_engines_all_reduce_small_messages_in_the_measured_time() -> None:
    """vLLM's custom all-reduce on MI300: ~7.5 µs at TP2-TP8 (aiter#801, vllm#19744); vLLM's V0
    engine goes through RCCL; NVIDIA keeps its own figure."""
    for engine in ("vllm", "sglang", "unknown"):
        work = Workload("serve", L70, "fp8", concurrency=1, engine=engine)
        assert allreduce_latency(work, MI300X, 8) == AMD_ONE_SHOT_ALLREDUCE_S
        assert allreduce_latency(work, MI300X, 2) == AMD_ONE_SHOT_ALLREDUCE_S
        assert allreduce_latency(work, H100, 8) == ALLREDUCE_LATENCY_S
    v0 = Workload("serve", L70, "fp8", concurrency=1, engine="vllm-v0")
    assert allreduce_latency(v0, MI300X, 8) == pytest.approx(3 * ALLREDUCE_LATENCY_S)


def test_nvlink_prefill_allreduce_runs_at_nccls_share_of_the_line_rate() -> None:
    """NVIDIA/nccl-tests#212: H100's NVLink line rate is 450 GB/s per direction, NCCL's ring
    moves ~370 GB/s of it (protocol overhead). A TP8 prefill of 2048 tokens of a 14,848-wide
    model (Falcon 180B) all-reduces 160 times 61 MB, each 2·7/8 of it at 370 GB/s."""
    falcon = dataclasses.replace(L70, layers=80, hidden=14848)
    work = Workload("serve", falcon, "fp8", engine="trt-llm")
    size = 2048 * 14848 * 2
    expected = 2 * 80 * 2 * 7 / 8 * size / 370e9
    assert tp_allreduce_seconds(work, H100, 8, 2048) == pytest.approx(expected)


def test_amd_mesh_keeps_its_own_usable_share() -> None:
    """The NVLink protocol share is NVLink's: the xGMI mesh already counts its 75 % usable."""
    work = Workload("serve", L70, "fp8", engine="vllm")
    size = 2048 * L70.hidden * 2
    expected = 2 * L70.layers * 2 * 3 / 4 * size / (3 * 48e9)
    assert tp_allreduce_seconds(work, MI300X, 4, 2048) == pytest.approx(expected)
