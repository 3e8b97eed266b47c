from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from priceadvisor import llm
from priceadvisor.gpu_specs import gpu_catalog
from priceadvisor.sizing import calibration
from priceadvisor.sizing.estimate import (
    Workload,
    estimate,
    kv_tokens,
    peak_flops,
    training_memory,
)

L70 = llm.lookup("llama-3.1-70b")
L8 = llm.lookup("llama-3.1-8b")
GPUS = gpu_catalog().gpus


def test_llama_3_70b_parameter_count_from_architecture() -> None:
    assert L70.dense_params() / 1e9 == pytest.approx(70.55, abs=0.01)


def test_kv_cache_per_token_with_gqa() -> None:
    assert L70.kv_bytes_per_token(2) == 320 * 1024  # 320 KiB at 16 bit
    assert L8.kv_bytes_per_token(2) == 128 * 1024
    mha = llm.lookup("llama-2-7b")
    assert mha.kv_bytes_per_token(2) == 512 * 1024  # no GQA: every head has its KV
    # trap 3: as if every head had its own KV, 70B would need 8x more
    assert L70.kv_bytes_per_token(2) * L70.heads / L70.kv_heads == 8 * 320 * 1024


def test_fp8_kv_halves_and_tensor_parallel_splits_kv_heads() -> None:
    assert L70.kv_bytes_per_token(1) == 160 * 1024
    assert L70.kv_bytes_per_token_per_gpu(2, 4) == 80 * 1024
    assert L70.kv_bytes_per_token_per_gpu(2, 16) == 40 * 1024  # at most one KV head per GPU


def test_mla_caches_a_latent() -> None:
    v3 = llm.lookup("deepseek-v3")
    assert 65_000 < v3.kv_bytes_per_token(2) < 75_000  # ≈ 70 KB/token
    assert v3.total_params / 1e9 == 671 and v3.active_params / 1e9 == 37


def test_dense_peaks_not_sparsity_headline() -> None:  # trap 1
    assert peak_flops(GPUS["H100-SXM-80GB"], "bf16") == 989e12
    assert peak_flops(GPUS["H100-SXM-80GB"], "fp8") == 1979e12


def test_geforce_half_rate_tensor_math() -> None:  # trap 2
    assert peak_flops(GPUS["RTX4090-24GB"], "bf16") == pytest.approx(165.2e12)


def test_no_fp8_units_compute_at_16_bit() -> None:
    assert peak_flops(GPUS["A100-SXM-80GB"], "fp8") == 312e12


def test_lora_is_about_4nd_and_full_finetune_6nd() -> None:  # trap 5
    """LoRA drops the weight gradients of the frozen weights (2·N of 6·N) but keeps the
    forward and the activation gradients, and the attention scores in full: faster than full
    fine-tuning by less than 1.5x, more so at short sequences."""
    speedups = []
    for seq in (512, 8192):
        full = estimate(Workload("finetune", L8, train_tokens=1e9, seq_len=seq), "H100-SXM-80GB", 8)
        lora = estimate(Workload("lora", L8, train_tokens=1e9, seq_len=seq), "H100-SXM-80GB", 8)
        speedups.append(lora.tokens_per_s / full.tokens_per_s)
        assert lora.memory_gib["weights"] < full.memory_gib["model_state"] / 4
    assert 1.4 < speedups[0] < 1.5
    assert 1.25 < speedups[1] < speedups[0]


def test_full_training_state_is_16_bytes_per_param() -> None:  # trap 4
    memory = training_memory(Workload("pretrain", L70, train_tokens=1e9), 1)
    assert memory["model_state"] == pytest.approx(16 * L70.total_params / 2**30)
    assert not estimate(Workload("finetune", L70, train_tokens=1e9), "H100-SXM-80GB", 8).fits
    assert estimate(Workload("finetune", L70, train_tokens=1e9), "H100-SXM-80GB", 16).fits


def test_qlora_fits_a_65b_model_on_one_48gb_gpu() -> None:  # Dettmers et al. 2023
    arch = llm.from_numbers(
        "65b", params_b=65.2, layers=80, hidden=8192, heads=64, kv_heads=64, ffn=22016, vocab=32000
    )
    work = Workload("qlora", arch, train_tokens=1e8, seq_len=512)
    assert estimate(work, "L40S-48GB", 1).fits
    assert not estimate(Workload("lora", arch, train_tokens=1e8), "L40S-48GB", 1).fits


def test_gb_versus_gib() -> None:  # trap 7
    weights = L8.total_params * 2 / 2**30
    assert weights == pytest.approx(14.96, abs=0.01)  # vLLM reports 14.96 GiB, not 16.06 GB
    work = Workload("serve", L8, precision="bf16")
    assert kv_tokens(work, GPUS["A100-SXM-40GB"], 1) == pytest.approx(91056, rel=0.05)


def test_pcie_multi_gpu_training_is_flagged() -> None:
    result = estimate(Workload("pretrain", L8, train_tokens=1e9), "L40S-48GB", 4)
    assert any("PCIe" in note for note in result.notes)


def test_latency_target_binds_and_too_tight_is_infeasible() -> None:
    loose = estimate(Workload("serve", L70, "fp8", concurrency=128), "H100-SXM-80GB", 2)
    tight = estimate(
        Workload("serve", L70, "fp8", concurrency=128, tpot_ms_max=25), "H100-SXM-80GB", 2
    )
    impossible = estimate(Workload("serve", L70, "fp8", tpot_ms_max=1), "H100-SXM-80GB", 2)
    assert tight.binding == "latency target" and tight.tpot_ms is not None
    assert tight.tpot_ms <= 25 < (loose.tpot_ms or 0)
    assert not impossible.fits and impossible.binding == "latency target"


def test_model_that_does_not_fit_binds_on_memory() -> None:
    result = estimate(Workload("serve", llm.lookup("llama-3.1-405b")), "L4-24GB", 1)
    assert not result.fits and result.binding == "memory"


def test_calibration_cases_are_all_evaluated_leave_one_source_out() -> None:
    rows = calibration.report()
    assert len(rows) == len(calibration.cases()) >= 70
    assert len({r.case.source_key for r in rows}) >= 20


def test_a_held_out_prediction_never_sees_its_own_publication() -> None:
    row = next(r for r in calibration.report() if r.case.case_id == "T10")
    others = [c for c in calibration.cases() if c.source_key != row.case.source_key]
    assert row.loo == pytest.approx(calibration.predict(row.case, calibration.fit(others)))
    with_itself = calibration.predict(row.case, calibration.fit(calibration.cases()))
    assert with_itself != pytest.approx(row.loo)


def test_no_factor_is_fitted_on_a_single_row() -> None:
    dense = [c for c in calibration.cases() if c.regime == "train-dense" and not c.check_only]
    assert calibration.fit(dense[:1]).factors == calibration.fit(dense[:2]).factors == {}
    assert "train-dense" in calibration.fit(dense[:3]).factors


def test_kv_capacity_is_accounting_and_never_scaled() -> None:
    rows = {r.case.case_id: r for r in calibration.report()}
    assert rows["I23"].loo == rows["I23"].prior
    assert abs(rows["I23"].error) < 0.05


def test_stated_uncertainty_per_regime_comes_from_held_out_errors() -> None:
    stated = calibration.fitted_scales().uncertainty
    for regime, rows in calibration.by_regime().items():
        p90 = calibration.p90(abs(r.error) for r in rows)
        assert stated[regime] == max(calibration.MIN_UNCERTAINTY, round(p90, 2))


# --- properties ------------------------------------------------------------------------------

MODELS = sorted(llm.catalog())
SERVE_GPUS = ["H100-SXM-80GB", "A100-SXM-80GB", "L40S-48GB", "MI300X-192GB", "H200-141GB"]


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(MODELS),
    st.sampled_from(SERVE_GPUS),
    st.sampled_from([1, 2, 4]),
    st.sampled_from(["serve", "batch", "pretrain", "lora"]),
)
def test_more_gpus_never_predicts_slower(model: str, gpu: str, gpus: int, task: str) -> None:
    work = Workload(task, llm.lookup(model), "bf16", train_tokens=1e9)  # type: ignore[arg-type]
    few, more = estimate(work, gpu, gpus), estimate(work, gpu, gpus * 2)
    if few.fits:
        assert more.fits and more.tokens_per_s >= few.tokens_per_s * 0.999


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(MODELS), st.sampled_from(MODELS))
def test_bigger_model_never_needs_less_memory(a: str, b: str) -> None:
    """Compared at full recomputation: the activations kept without it follow the model's
    shape (hidden x layers), not its parameter count (Qwen2.5-32B keeps more than Mixtral)."""
    small, big = sorted((llm.lookup(a), llm.lookup(b)), key=lambda m: m.total_params)
    for task in ("pretrain", "lora"):
        need = [
            sum(training_memory(Workload(task, m, recompute="full"), 1).values())  # type: ignore[arg-type]
            for m in (small, big)
        ]
        if small.total_params < big.total_params:
            assert need[1] >= need[0]
