"""Whole-run GPU-hours (issue 28, item 5): the sharded data-parallel traffic a small per-GPU
batch cannot hide, the goodput a user states, and the published whole-run rows."""

from __future__ import annotations

import dataclasses
import json

import pytest

from priceadvisor import llm
from priceadvisor.gpu_specs import gpu_catalog
from priceadvisor.sizing import calibration
from priceadvisor.sizing.estimate import (
    Workload,
    data_parallel_replicas,
    data_parallel_seconds,
    estimate,
    prior_compute_seconds,
    run_goodput,
)
from tests.conftest import cli

L8 = llm.lookup("llama-3.1-8b")
L405 = llm.lookup("llama-3.1-405b")
H100 = gpu_catalog().gpus["H100-SXM-80GB"]


def _pretrain(arch: llm.Architecture, batch: float, seq_len: int = 8192) -> Workload:
    return Workload(
        task="pretrain", arch=arch, seq_len=seq_len, train_tokens=15e12, global_batch_tokens=batch
    )


def test_a_smaller_global_batch_exposes_more_weight_traffic_on_many_gpus() -> None:
    # 2k sequences: 2,048 data-parallel ranks either way, 2k or 32k tokens each per step
    small, large = _pretrain(L8, 4 * 2**20, 2048), _pretrain(L8, 64 * 2**20, 2048)
    compute = prior_compute_seconds(small, H100)
    assert data_parallel_seconds(large, H100, 2048, compute) == 0.0
    assert data_parallel_seconds(small, H100, 2048, compute) > compute
    slow = estimate(small, H100.id, 2048).gpu_hours or 0.0
    fast = estimate(large, H100.id, 2048).gpu_hours or 0.0
    assert slow > 1.5 * fast


def test_data_parallel_ranks_take_whole_sequences() -> None:
    # 16M tokens of 8k sequences: 2,048 ranks, the rest of 16,384 GPUs is model parallel
    assert data_parallel_replicas(_pretrain(L405, 16 * 2**20), 16384) == 2048
    assert data_parallel_replicas(_pretrain(L8, 16 * 2**20), 512) == 512


def test_lora_and_a_single_gpu_pay_no_data_parallel_traffic() -> None:
    lora = dataclasses.replace(_pretrain(L8, 2**20), task="lora")
    assert data_parallel_seconds(lora, H100, 2048, 1e-6) == 0.0
    assert data_parallel_seconds(_pretrain(L8, 2**20), H100, 1, 1e-6) == 0.0


def test_a_stated_goodput_replaces_the_interruption_model() -> None:
    work = _pretrain(L8, 16 * 2**20)
    modelled = estimate(work, H100.id, 2048)
    stated = estimate(dataclasses.replace(work, goodput=0.5), H100.id, 2048)
    assert modelled.hours and stated.hours
    assert stated.tokens_per_s == pytest.approx(modelled.tokens_per_s)
    expected = modelled.hours * run_goodput(2048, work.scales) / 0.5
    assert stated.hours == pytest.approx(expected)


def test_cli_takes_the_global_batch_and_goodput_for_training_only(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["estimate", "--model", "llama-3.1-8b", "--task", "pretrain", "--gpu"]
    args += ["H100-SXM-80GB", "--gpus", "2048", "--seq-len", "8192", "--train-tokens", "15e12"]
    code, out, _ = cli(capsys, *args, "--goodput", "0.5", "-f", "json")
    half = json.loads(out)["gpu_hours"]
    code, out, _ = cli(capsys, *args, "--goodput", "1", "-f", "json")
    assert code == 0 and half == pytest.approx(2 * json.loads(out)["gpu_hours"], rel=1e-3)
    code, out, _ = cli(
        capsys, *args, "--goodput", "1", "--global-batch-tokens", "64e6", "-f", "json"
    )
    assert code == 0 and json.loads(out)["gpu_hours"] < half / 2
    assert cli(capsys, *args, "--goodput", "1.5")[0] != 0
    serve = ["estimate", "--model", "llama-3.1-8b", "--task", "serve", "--gpu", "H100-SXM-80GB"]
    code, _, err = cli(capsys, *serve, "--goodput", "0.9")
    assert code != 0 and "goodput" in err


def test_whole_run_rows_cover_every_llama_3_1_size_from_the_card() -> None:
    rows = [c for c in calibration.cases() if c.metric == "gpu_hours_total"]
    card = {c.workload.arch.name for c in rows if c.source_key == "llama-3.1-card"}
    assert card == {"Llama 3.1 8B", "Llama 3.1 70B", "Llama 3.1 405B"}
    assert {c.source_key for c in rows} >= {"llama-2-card", "deepseek-v3-report"}


def test_amd_tensor_parallel_serving_rows_state_their_layout_and_engine() -> None:
    rows = [c for c in calibration.cases() if c.source_key == "amd-perf-results"]
    assert len(rows) == 6
    assert {c.tensor_parallel for c in rows} == {8} and {c.gpus for c in rows} == {8}
    assert {c.workload.engine for c in rows} == {"vllm"}
    assert {c.regime for c in rows} == {"serve-throughput", "decode"}


def test_lora_has_enough_fitted_rows_for_a_factor_of_its_own() -> None:
    fitted = [c for c in calibration.cases() if c.regime == "train-lora" and not c.check_only]
    assert {c.case_id for c in fitted} >= {"T14", "T20", "T21"}
    assert "train-lora" in calibration.fit(list(calibration.cases())).factors


def test_deepseek_v3_row_counts_its_pre_training_stage_only() -> None:
    # arXiv 2412.19437, Table 1: pre-training 2,664K of the 2,788K GPU-hours (context extension
    # 119K and post-training 5K are not part of the 14.8T pre-training tokens)
    row = next(c for c in calibration.cases() if c.case_id == "XT09")
    assert row.measured == 2_664_000
    assert row.workload.train_tokens == pytest.approx(14.8e12)


def test_a_row_whose_batch_contradicts_itself_is_never_fitted() -> None:
    # AutoModel's LoRA 70B row: LBS 4 x GA 4 at data parallel 1 is 16 sequences, its GBS 32
    row = next(c for c in calibration.cases() if c.case_id == "XT28")
    assert row.check_only
    fitted_lora = ("nemo-24.12", "qwen-readme")  # the publications whose LoRA rows are fitted
    lora = calibration.fit([c for c in calibration.cases() if c.source_key not in fitted_lora])
    assert "train-lora" not in lora.factors  # XT28 alone (and torchtune's check-only rows) fit none
