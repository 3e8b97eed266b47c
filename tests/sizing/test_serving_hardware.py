"""Serving terms from the hardware rather than the datasheet: the sustained matmul share of a
part (MAMF) in compute-bound serving and prefill, and the engines the calibration cases state."""

from __future__ import annotations

import dataclasses

import pytest

from priceadvisor import llm
from priceadvisor.gpu_specs import gpu_catalog
from priceadvisor.records import Precision
from priceadvisor.sizing import calibration
from priceadvisor.sizing import estimate as sizing
from priceadvisor.sizing.estimate import Workload, achievable_matmul_share, estimate

GPUS = gpu_catalog().gpus
L70 = llm.lookup("llama-2-70b")


def test_matmul_share_counts_relative_to_the_vendors_reference_part() -> None:
    assert achievable_matmul_share(GPUS["H100-SXM-80GB"]) == 1.0
    assert achievable_matmul_share(GPUS["MI300X-192GB"]) == 1.0
    # Same CDNA 3 die and datasheet peak; the 1000 W part sustains 785 of 668 TFLOP/s.
    assert achievable_matmul_share(GPUS["MI325X-256GB"]) == pytest.approx(0.60 / 0.51)
    assert achievable_matmul_share(GPUS["A100-SXM-80GB"]) == pytest.approx(0.87 / 0.80)
    # A part without a measurement keeps its vendor's reference share.
    assert achievable_matmul_share(GPUS["L4-24GB"]) == 1.0
    assert achievable_matmul_share(GPUS["MI250X-128GB"]) == 1.0
    # Other vendors count relative to the H100 the priors were measured on.
    assert achievable_matmul_share(GPUS["GAUDI3-128GB"]) == pytest.approx(0.68 / 0.80)


def test_compute_bound_serving_follows_the_sustained_share_not_the_datasheet() -> None:
    """MI300X and MI325X have the same datasheet peak; saturated short-prompt serving (compute
    bound) runs faster on the MI325X by more than its 13 % extra bandwidth alone gives."""
    work = Workload("batch", L70, "fp8", input_tokens=300, output_tokens=300, concurrency=512)
    mi300x = estimate(work, "MI300X-192GB", 1, 1)
    mi325x = estimate(work, "MI325X-256GB", 1, 1)
    assert mi300x.batch == mi325x.batch == 512
    assert mi325x.tokens_per_s > 1.12 * mi300x.tokens_per_s


def test_prefill_uses_the_parts_sustained_share(monkeypatch: pytest.MonkeyPatch) -> None:
    work = Workload("serve", L70, "fp16", input_tokens=8000, output_tokens=1, concurrency=1)
    measured = estimate(work, "A100-SXM-80GB", 4, 4).ttft_ms
    monkeypatch.setitem(sizing.ACHIEVABLE_MATMUL_SHARE, "A100", 0.80)  # as the H100
    datasheet_like = estimate(work, "A100-SXM-80GB", 4, 4).ttft_ms
    assert measured and datasheet_like
    # The prompt's GEMMs dominate an 8k-token TTFT: it shrinks by nearly 0.80 / 0.87.
    assert 0.92 < measured / datasheet_like < 0.96


def test_cases_state_the_engine_their_publication_names() -> None:
    engines = {c.case_id: c.workload.engine for c in calibration.cases()}
    for case_id in ("I08", "I17", "I17T"):  # TensorRT-LLM (NIM 1.8 runs it)
        assert engines[case_id] == "trt-llm"
    # vLLM releases before 0.8 ran its V0 engine: MLPerf v4.1/v5.0 (0.6.5), LLM-Inference-Bench;
    # so did AMD's MLPerf v5.1 (vLLM 0.9): its configs set num_scheduler_steps, V0-only.
    for case_id in ("XI10", "XI01", "XI02", "XI25", "XI33", "XI36", "XI11", "XI14", "XI15"):
        assert engines[case_id] == "vllm-v0"


L8 = llm.lookup("llama-3.1-8b")


def _decode_memory_s(engine: str, precision: Precision) -> float:
    """Memory term of a batch-1 decode step with a 16-bit KV cache (read once by every engine)."""
    work = Workload("serve", L8, precision, concurrency=1, engine=engine, kv_precision="bf16")
    return sizing.decode_seconds(work, GPUS["H100-SXM-80GB"], 1, 1)[0]


@pytest.mark.parametrize("engine", ["vllm", "vllm-v0", "sglang"])
@pytest.mark.parametrize("precision", ["fp8", "int8", "fp4"])
def test_engines_that_quantise_activations_separately_pay_a_kernel_per_gemm(
    engine: str, precision: Precision
) -> None:
    """vLLM/SGLang run a quantisation kernel before each of a layer's four W8A8 GEMMs; TensorRT-LLM
    fuses it into the kernel before, and an unknown engine keeps the pooled step."""
    extra = _decode_memory_s(engine, precision) - _decode_memory_s("trt-llm", precision)
    assert extra == pytest.approx(L8.layers * 4 * sizing.LAYER_OVERHEAD_S / 10)
    assert _decode_memory_s("unknown", precision) == _decode_memory_s("trt-llm", precision)


@pytest.mark.parametrize("precision", ["bf16", "fp16", "int4"])
def test_unquantised_activations_add_no_kernel(precision: Precision) -> None:
    """16-bit layers and weight-only INT4 (dequantised inside its GEMM) have no extra kernel."""
    assert _decode_memory_s("vllm", precision) == _decode_memory_s("trt-llm", precision)


def _fp8(engine: str, arch: llm.Architecture = L8) -> Workload:
    return Workload("batch", arch, "fp8", concurrency=64, engine=engine)


def test_vllm_v0_reads_an_fp8_kv_cache_once_per_query_head_on_nvidia() -> None:
    """vLLM's V0 engine decodes an 8-bit KV cache in its PagedAttention kernel (one thread block
    per query head) on NVIDIA parts: Llama 3 8B's 32 query heads over 8 KV heads read it four
    times. Its V1 engine reads FP8 KV in FlashAttention 3 / FlashInfer, once."""
    h100, mi300x = GPUS["H100-SXM-80GB"], GPUS["MI300X-192GB"]
    assert sizing.kv_reads(_fp8("vllm-v0"), h100) == 4.0
    # GQA-aware kernels: vLLM V1, TensorRT-LLM, an unknown engine, AMD parts, 16-bit KV.
    assert sizing.kv_reads(_fp8("vllm"), h100) == 1.0
    assert sizing.kv_reads(_fp8("trt-llm"), h100) == 1.0
    assert sizing.kv_reads(_fp8("unknown"), h100) == 1.0
    assert sizing.kv_reads(_fp8("vllm-v0"), mi300x) == 1.0
    bf16_kv = dataclasses.replace(_fp8("vllm-v0"), kv_precision="bf16")
    assert sizing.kv_reads(bf16_kv, h100) == 1.0
    # Multi-head attention (no GQA group): one read per head either way.
    mha = llm.from_numbers("mha", params_b=6.7, layers=32, hidden=4096, heads=32, kv_heads=32)
    assert sizing.kv_reads(_fp8("vllm-v0", mha), h100) == 1.0


def test_the_extra_kv_reads_cost_time_not_capacity() -> None:
    h100 = GPUS["H100-SXM-80GB"]
    vllm, trt = _fp8("vllm-v0"), _fp8("trt-llm")
    # The same accounting (vLLM's) whatever the kernel: TensorRT-LLM sizes its pool its own way.
    assert sizing.kv_tokens(vllm, h100, 1) == sizing.kv_tokens(_fp8("vllm"), h100, 1)
    context = vllm.input_tokens + vllm.output_tokens / 2
    kv_seconds = 64 * context * sizing.kv_per_token(vllm, 1) / (sizing.bandwidth(h100) * 0.75)
    quant_kernels = L8.layers * 4 * sizing.LAYER_OVERHEAD_S / 10
    extra = sizing.decode_seconds(vllm, h100, 1, 64)[0] - sizing.decode_seconds(trt, h100, 1, 64)[0]
    assert extra == pytest.approx(3 * kv_seconds + quant_kernels)


def test_estimate_says_when_vllm_v0_rereads_the_kv_cache() -> None:
    vllm = estimate(_fp8("vllm-v0"), "H100-SXM-80GB", 1, 1)
    trt = estimate(_fp8("trt-llm"), "H100-SXM-80GB", 1, 1)
    assert any("reading it 4x" in n for n in vllm.notes)
    assert not any("PagedAttention" in n for n in trt.notes)
    assert vllm.tpot_ms is not None and trt.tpot_ms is not None and vllm.tpot_ms > trt.tpot_ms


def test_kv_rereads_count_the_heads_on_one_gpu() -> None:
    """Under TP each GPU holds heads/tp query heads over max(1, kv_heads/tp) KV heads: Llama 3
    70B (64 over 8) rereads 8x up to TP8; Falcon-like 232 over 8 at TP16 holds one replicated
    KV head for 14.5 query heads."""
    h100 = GPUS["H100-SXM-80GB"]
    l70 = llm.lookup("llama-3.1-70b")
    assert [sizing.kv_reads(_fp8("vllm-v0", l70), h100, tp) for tp in (1, 4, 8)] == [8, 8, 8]
    wide = llm.from_numbers("wide", params_b=180, layers=80, hidden=14848, heads=232, kv_heads=8)
    assert sizing.kv_reads(_fp8("vllm-v0", wide), h100, 16) == pytest.approx(232 / 16)


@pytest.mark.parametrize(("precision", "gb"), [("bf16", 16.06), ("fp8", 9.08), ("fp4", 6.02)])
def test_embedding_and_lm_head_stay_16_bit_under_weight_quantisation(
    precision: Precision, gb: float
) -> None:
    """Llama 3.1 8B (2 x 128,256 x 4,096 embedding and head parameters): ~9 GB in FP8 and ~6 GB
    in NVFP4 as the published checkpoints, stored and read per decode step alike."""
    work = Workload("serve", L8, precision, concurrency=1)
    weights_gib = sizing.serving_memory(work, GPUS["H100-SXM-80GB"], 1)[0]["weights"]
    assert weights_gib * sizing.GIB / 1e9 == pytest.approx(gb, abs=0.02)
    assert sizing.weights_read(work, 1) / 1e9 == pytest.approx(gb, abs=0.02)
