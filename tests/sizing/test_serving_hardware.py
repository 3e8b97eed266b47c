"""Serving terms from the hardware rather than the datasheet: the sustained matmul share of a
part (MAMF) in compute-bound serving and prefill, and the engines the calibration cases state."""

from __future__ import annotations

import pytest

from priceadvisor import llm
from priceadvisor.catalog import gpu_catalog
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
    for case_id in ("XI10", "XI11", "XI12", "XI13", "XI14", "XI15"):  # vLLM on ROCm
        assert engines[case_id] == "vllm"


L8 = llm.lookup("llama-3.1-8b")


def _decode_memory_s(engine: str, precision: str) -> float:
    work = Workload("serve", L8, precision, concurrency=1, engine=engine)  # type: ignore[arg-type]
    return sizing.decode_seconds(work, GPUS["H100-SXM-80GB"], 1, 1)[0]


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
@pytest.mark.parametrize("precision", ["fp8", "int8", "fp4"])
def test_engines_that_quantise_activations_separately_pay_a_kernel_per_gemm(
    engine: str, precision: str
) -> None:
    """vLLM/SGLang run a quantisation kernel before each of a layer's four W8A8 GEMMs; TensorRT-LLM
    fuses it into the kernel before, and an unknown engine keeps the pooled step."""
    extra = _decode_memory_s(engine, precision) - _decode_memory_s("trt-llm", precision)
    assert extra == pytest.approx(L8.layers * 4 * sizing.LAYER_OVERHEAD_S / 10)
    assert _decode_memory_s("unknown", precision) == _decode_memory_s("trt-llm", precision)


@pytest.mark.parametrize("precision", ["bf16", "fp16", "int4"])
def test_unquantised_activations_add_no_kernel(precision: str) -> None:
    """16-bit layers and weight-only INT4 (dequantised inside its GEMM) have no extra kernel."""
    assert _decode_memory_s("vllm", precision) == _decode_memory_s("trt-llm", precision)
