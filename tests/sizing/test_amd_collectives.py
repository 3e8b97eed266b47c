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
    Workload,
    allreduce_latency,
    collective_bandwidth,
    pipeline_send_seconds,
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


def test_amd_tp8_allreduce_of_a_large_batch_runs_over_seven_links() -> None:
    """Llama 3.1 70B at TP8, a decode step of 3200 sequences: 160 all-reduces of 52 MB, each
    moving 2·7/8 of it over the 7 x 48 GB/s into the group (not the 448 GB/s of the fabric)."""
    work = Workload("batch", L70, "fp8", engine="vllm")
    size = 3200 * L70.hidden * 2
    expected = 2 * L70.layers * 2 * 7 / 8 * size / (7 * 48e9)
    assert tp_allreduce_seconds(work, MI300X, 8, 3200) == pytest.approx(expected)


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
    expected = 2 * L70.layers * 2 * 7 / 8 * size / (7 * 48e9)
    assert tp_allreduce_seconds(work, MI300X, 8, 2048) == pytest.approx(expected)
