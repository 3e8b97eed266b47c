"""Training inputs of issue 16: activation recomputation and the MoE all-to-all overlap as
stated inputs, and the calibration rows that state them."""

from __future__ import annotations

import dataclasses
import json

import pytest

from priceadvisor import llm
from priceadvisor.gpu_specs import gpu_catalog
from priceadvisor.sizing import calibration
from priceadvisor.sizing.estimate import (
    MOE_EXPOSED_COMMUNICATION,
    Workload,
    attention_training_flops,
    estimate,
    executed_training_flops,
    exposed_alltoall_seconds,
    moe_alltoall_seconds,
    peak_flops,
    prior_compute_seconds,
    recompute_mode,
    sixteen_bit_training_flops,
    tensor_parallel_training_seconds,
)
from tests.conftest import cli

L70 = llm.lookup("llama-3.1-70b")
L8 = llm.lookup("llama-3.1-8b")


def test_full_recomputation_adds_one_forward_pass() -> None:
    work = Workload("pretrain", L70, train_tokens=1e9, seq_len=8192)
    recomputed = dataclasses.replace(work, recompute="full")
    plain = estimate(work, "H100-SXM-80GB", 64)
    full = estimate(recomputed, "H100-SXM-80GB", 64)
    # 6 of 8 FLOPs per block parameter; the LM head runs once either way, so a bit above 0.75.
    share = executed_training_flops(work) / executed_training_flops(recomputed)
    assert 0.75 < share < 0.76
    assert full.tokens_per_s == pytest.approx(share * plain.tokens_per_s)
    assert full.hours and plain.hours and full.hours == pytest.approx(plain.hours / share)


def test_lora_recomputation_costs_a_larger_share_than_full_training() -> None:
    work = Workload("lora", L8, seq_len=2048)
    attention = attention_training_flops(L8, 2048)
    useful = 4 * L8.block_params + attention + 4 * L8.lm_head_params  # frozen LM head: 4·V·d
    full = dataclasses.replace(work, recompute="full")
    assert executed_training_flops(work) == pytest.approx(useful)
    assert executed_training_flops(full) == pytest.approx(
        useful + 2 * L8.block_params + attention / 3
    )
    ratio = estimate(full, "H100-SXM-80GB", 1).tokens_per_s
    ratio /= estimate(work, "H100-SXM-80GB", 1).tokens_per_s
    assert 0.64 < ratio < 0.7  # ~4ND of ~6ND, not full training's 0.75


def test_selective_recomputation_adds_no_gemm_flops_and_overrides_the_stack() -> None:
    work = Workload("pretrain", L70, stack="megatron-2021")
    assert recompute_mode(work) == "full"  # the 2021 layout recomputes in full by default
    assert recompute_mode(Workload("pretrain", L70)) == "none"
    selective = dataclasses.replace(work, recompute="selective")
    assert executed_training_flops(selective) == executed_training_flops(Workload("pretrain", L70))
    a100 = estimate(selective, "A100-SXM-80GB", 512)
    part = gpu_catalog().gpus["A100-SXM-80GB"]
    full_compute = 512 / estimate(work, "A100-SXM-80GB", 512).tokens_per_s
    full_compute -= tensor_parallel_training_seconds(work, part, 512)
    share = executed_training_flops(selective) / executed_training_flops(work)
    assert a100.tokens_per_s == pytest.approx(
        512 / (share * full_compute + tensor_parallel_training_seconds(selective, part, 512))
    )
    assert a100.regime == "train-3d"


def test_the_2021_layout_waits_for_its_tensor_parallel_allreduces() -> None:
    a100 = gpu_catalog().gpus["A100-SXM-80GB"]
    gpt = llm.from_numbers("gpt-39b", params_b=39.1, layers=48, hidden=8192, heads=64, vocab=51200)
    work = Workload("pretrain", gpt, stack="megatron-2021")  # full recomputation: 6 per layer
    # TP8 inside the node: 8 GPUs each move 2·7/8 of the 16-bit activations over 300 GB/s.
    per_allreduce = 2 * 7 / 8 * 8192 * 2 / 300e9
    assert tensor_parallel_training_seconds(work, a100, 512) == pytest.approx(
        8 * 48 * 6 * per_allreduce
    )
    selective = dataclasses.replace(work, recompute="selective")
    assert tensor_parallel_training_seconds(selective, a100, 512) == pytest.approx(
        8 * 48 * 4 * per_allreduce
    )
    # A wider model spends a smaller share of its time on them (activations ∝ h, GEMMs ∝ h²).
    wide = llm.from_numbers(
        "gpt-1t", params_b=1008, layers=128, hidden=25600, heads=160, vocab=51200
    )
    share = {
        arch.name: tensor_parallel_training_seconds(
            dataclasses.replace(work, arch=arch), a100, 3072
        )
        / prior_compute_seconds(dataclasses.replace(work, arch=arch), a100)
        for arch in (gpt, wide)
    }
    assert 0.08 < share["gpt-39b"] < 0.14 and share["gpt-1t"] < 0.05
    assert tensor_parallel_training_seconds(work, a100, 1) == 0  # one GPU: no group
    modern = dataclasses.replace(work, stack="megatron-core")  # overlaps them with the GEMMs
    assert tensor_parallel_training_seconds(modern, a100, 512) == 0


def test_low_precision_training_speeds_up_the_linear_layers_only() -> None:
    h100 = gpu_catalog().gpus["H100-SXM-80GB"]
    work = Workload("pretrain", L8, "fp8", seq_len=8192)
    head = L8.vocab * L8.hidden  # the LM head; the input embedding is a lookup, no GEMM
    sixteen = 6 * head + attention_training_flops(L8, 8192)
    assert sixteen_bit_training_flops(work) == pytest.approx(sixteen)
    linear = executed_training_flops(work) - sixteen
    assert prior_compute_seconds(work, h100) == pytest.approx(
        linear / (0.35 * peak_flops(h100, "fp8")) + sixteen / (0.42 * peak_flops(h100, "bf16"))
    )
    bf16 = dataclasses.replace(work, precision="bf16")  # one rate for all of it at 16 bit
    assert prior_compute_seconds(bf16, h100) == pytest.approx(
        executed_training_flops(bf16) / (0.42 * peak_flops(h100, "bf16"))
    )
    # A larger model has a smaller 16-bit share, so FP8 gains more on it.
    gain_8b = prior_compute_seconds(bf16, h100) / prior_compute_seconds(work, h100)
    big = Workload("pretrain", L70, "fp8", seq_len=8192)
    big_bf16 = dataclasses.replace(big, precision="bf16")
    assert gain_8b < prior_compute_seconds(big_bf16, h100) / prior_compute_seconds(big, h100)


def test_calibration_rows_carry_the_recomputation_their_source_states() -> None:
    stated = {c.case_id: c.workload.recompute for c in calibration.cases()}
    assert stated["T07"] == "full"  # llm-foundry MPT-70B: activation checkpointing on
    assert stated["T08"] == "none"
    assert stated["XT15"] == "selective"  # Korthikanti et al.: 54.2 % MFU is selective
    assert stated["XT21"] == "full"
    assert all(stated[f"XT1{i}"] == "full" for i in range(5))  # Megatron-LM SC21 Table 1


def test_cli_takes_recompute_and_refuses_unknown_modes(capsys: pytest.CaptureFixture[str]) -> None:
    base = ("estimate", "--gpu", "A100-SXM-80GB", "--task", "pretrain", "--model", "llama-3.1-8b")
    base = (*base, "--gpus", "8", "--format", "json")
    code, plain, _ = cli(capsys, *base)
    assert code == 0
    code, full, _ = cli(capsys, *base, "--recompute", "full")
    assert code == 0
    ratio = json.loads(full)["tokens_per_s"] / json.loads(plain)["tokens_per_s"]
    assert ratio == pytest.approx(0.76, rel=0.01)  # 6 of 8 per block FLOP, the LM head once
    code, out, err = cli(capsys, *base, "--recompute", "sometimes")
    assert code == 2 and not out and "unknown recompute 'sometimes'" in err
    serving = (
        "estimate",
        "--gpu",
        "A100-SXM-80GB",
        "--model",
        "llama-3.1-8b",
        "--recompute",
        "full",
    )
    code, out, err = cli(capsys, *serving)
    assert code == 2 and not out and "applies to training tasks" in err
    code, out, _ = cli(capsys, "estimate", "--help")
    assert code == 0 and "--recompute" in out


def test_moe_overlap_decides_how_much_of_the_transfer_is_exposed() -> None:
    work = Workload("pretrain", llm.lookup("gpt-oss-120b"), expert_parallel=64)
    b200 = gpu_catalog().gpus["B200-180GB"]
    transfer = moe_alltoall_seconds(work, b200, 64)
    assert transfer > 0

    def exposed(mode: str | None, compute: float) -> float:
        return exposed_alltoall_seconds(
            dataclasses.replace(work, moe_overlap=mode), b200, 64, compute
        )

    assert exposed(None, 1.0) == exposed("partial", 1.0) == MOE_EXPOSED_COMMUNICATION * transfer
    assert exposed("none", 1.0) == transfer
    assert exposed("full", 10 * transfer) == 0.0  # enough compute hides all of it
    assert exposed("full", transfer / 4) == pytest.approx(0.75 * transfer)  # not more
    speeds = [
        estimate(dataclasses.replace(work, moe_overlap=mode), "B200-180GB", 64).tokens_per_s
        for mode in ("none", "partial", "full")
    ]
    assert speeds[0] < speeds[1] < speeds[2]


def test_without_expert_parallelism_no_token_leaves_its_gpu() -> None:
    # EP 1: every GPU runs all the experts of its layers, so there is no dispatch or combine
    work = Workload("pretrain", llm.lookup("gpt-oss-120b"), expert_parallel=1)
    h100 = gpu_catalog().gpus["H100-SXM-80GB"]
    assert moe_alltoall_seconds(work, h100, 64) == 0.0
    assert moe_alltoall_seconds(dataclasses.replace(work, expert_parallel=8), h100, 64) > 0
    alone = estimate(dataclasses.replace(work, moe_overlap="none"), h100.id, 64).tokens_per_s
    assert alone == pytest.approx(estimate(work, h100.id, 64).tokens_per_s)  # nothing to hide


def test_calibration_rows_carry_the_moe_overlap_their_source_states() -> None:
    stated = {c.case_id: c.workload.moe_overlap for c in calibration.cases()}
    assert stated["XT09"] == "full"  # DeepSeek-V3 report: DualPipe, near-full overlap
    assert stated["XT05"] == "partial"  # Megatron-Bridge preset: moe_a2a_overlap=True
    assert stated["XT07"] == stated["XT08"] == "none"  # presets without it
    # Round 16: both H100 presets of Qwen3-30B-A3B set moe_a2a_overlap=False (another layout)
    assert stated["XT04"] == "none"


def test_cli_takes_moe_overlap_for_training_only(capsys: pytest.CaptureFixture[str]) -> None:
    base = ("estimate", "--gpu", "B200-180GB", "--gpus", "64", "--task", "pretrain")
    base = (*base, "--model", "gpt-oss-120b", "--expert-parallel", "64", "--format", "json")
    code, partial, _ = cli(capsys, *base)
    assert code == 0
    code, none, _ = cli(capsys, *base, "--moe-overlap", "none")
    assert code == 0
    assert json.loads(none)["tokens_per_s"] < json.loads(partial)["tokens_per_s"]
    code, out, err = cli(capsys, *base, "--moe-overlap", "some")
    assert code == 2 and not out and "unknown moe_overlap 'some'" in err and "--moe-overlap" in err
    serving = ("estimate", "--gpu", "B200-180GB", "--model", "gpt-oss-120b")
    code, out, err = cli(capsys, *serving, "--moe-overlap", "full")
    assert code == 2 and not out and "applies to training tasks" in err
    code, out, _ = cli(capsys, "estimate", "--help")
    assert code == 0 and "--moe-overlap" in out


def _unknown_stack(case: calibration.Case, case_id: str | None = None) -> calibration.Case:
    work = dataclasses.replace(case.workload, stack="unknown")
    return dataclasses.replace(case, case_id=case_id or case.case_id, workload=work)


def test_lora_takes_the_dense_factor_until_it_has_cases_of_its_own() -> None:
    dense = [
        _unknown_stack(c)
        for c in calibration.cases()
        if c.regime == "train-dense" and not c.check_only
    ]
    scales = calibration.fit(dense)
    assert "train-lora" not in scales.factors
    assert scales.factor("train-lora") == scales.factor("train-dense") != 1
    lora = Workload("lora", L8, seq_len=2048)
    prior = estimate(lora, "H100-SXM-80GB", 8).tokens_per_s
    fitted = estimate(dataclasses.replace(lora, scales=scales), "H100-SXM-80GB", 8).tokens_per_s
    assert fitted == pytest.approx(prior * scales.factor("train-dense"))
    # With three LoRA cases of its own, its factor replaces the inherited one (not on top).
    t14 = next(c for c in calibration.cases() if c.case_id == "T14")
    own = [_unknown_stack(t14, f"T14-{i}") for i in range(3)]
    refit = calibration.fit(dense + own)
    assert calibration.predict(own[0], refit) == pytest.approx(t14.measured)


def test_automodel_moe_table_is_restated_in_full() -> None:
    # every DGX-H100 BF16 pre-training row the catalog can size (Kimi K2 has no catalog entry)
    rows = {
        c.case_id: c
        for c in calibration.cases()
        if c.source_key == "nemo-automodel" and c.regime == "train-moe"
    }
    assert set(rows) == {"XT02", "XT03", "XT34", "XT35", "XT36"}
    xt34 = rows["XT34"].workload  # PP4 VP8, LBS 8 at MBS 1 per flush, EP64 on 1,024 GPUs
    assert (xt34.pipeline_parallel, xt34.virtual_stages, xt34.micro_batches) == (4, 8, 8)
    assert xt34.expert_parallel == 64
    assert rows["XT36"].check_only  # EP '-' across 64 GPUs: the expert layout is unknown


def test_lora_rests_on_two_independent_publications() -> None:
    # Round 16: Qwen's README profile (HF Trainer + PEFT on one A100) beside NeMo 24.12's.
    fitted = [c for c in calibration.cases() if c.regime == "train-lora" and not c.check_only]
    assert {c.source_key for c in fitted} == {"nemo-24.12", "qwen-readme"}
    qwen = {c.case_id: c for c in fitted if c.source_key == "qwen-readme"}
    # one optimizer step = 8 sequences (batch 1, accumulation 8) padded to the column's length
    seconds_per_step = {"XT37": 5.2, "XT38": 10.1, "XT39": 21.3}  # Qwen-7B
    seconds_per_step |= {"XT40": 1.7, "XT41": 3.3, "XT42": 6.8}  # Qwen-1.8B
    assert set(qwen) == set(seconds_per_step)  # every LoRA row of a model whose config was read
    for case_id, seconds in seconds_per_step.items():
        work = qwen[case_id].workload
        assert qwen[case_id].measured == round(8 * work.seq_len / seconds)
        assert (work.recompute, work.precision, qwen[case_id].gpus) == ("full", "bf16", 1)
