"""Training memory follows the recompute policy (issue 28, defect 1): the activations each
policy keeps per Korthikanti et al. 2022, and an unset policy settled to the least
recomputation that fits, stated in the output."""

from __future__ import annotations

import dataclasses
import json

import pytest

from priceadvisor import llm
from priceadvisor.llm import GIB
from priceadvisor.sizing.estimate import Workload, estimate, training_memory
from tests.conftest import cli

L8 = llm.lookup("llama-3.1-8b")
LORA_4090 = [
    "estimate",
    *("--model", "llama-3.1-8b", "--task", "lora", "--gpu", "RTX4090-24GB"),
    *("--train-tokens", "1e8", "--seq-len", "4096", "-f", "json"),
]


def test_activations_follow_the_recompute_policy() -> None:
    """sbh·34 bytes per layer kept without recomputation (FlashAttention stores no scores),
    the same with selective recomputation, sbh·2 with full (b = 1)."""
    work = Workload("lora", L8, seq_len=4096)
    kept = {
        policy: training_memory(dataclasses.replace(work, recompute=policy), 1)["activations"]
        for policy in ("none", "selective", "full")
    }
    per_layer_token = 4096 * L8.hidden * L8.layers / GIB
    assert kept["none"] == pytest.approx(34 * per_layer_token)  # ~17 GiB for Llama 3.1 8B
    assert kept["selective"] == pytest.approx(34 * per_layer_token)
    assert kept["full"] == pytest.approx(2 * per_layer_token)


def test_without_flash_attention_no_recomputation_keeps_the_attention_scores() -> None:
    """The 2021 Megatron-LM layout predates FlashAttention: the 5·a·s/h term is stored."""
    work = Workload("pretrain", L8, seq_len=2048, stack="megatron-2021")
    none = training_memory(dataclasses.replace(work, recompute="none"), 8)["activations"]
    selective = training_memory(dataclasses.replace(work, recompute="selective"), 8)
    scores = 5 * L8.heads * 2048 / L8.hidden
    assert none / selective["activations"] == pytest.approx((34 + scores) / 34)


def test_lora_without_recomputation_does_not_fit_a_4090(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, *LORA_4090, "--recompute", "none")
    record = json.loads(out)
    assert code == 0 and record["recompute"] == "none"
    assert not record["fits"] and record["binding"] == "memory"
    assert record["memory_gib"]["activations"] > 15


def test_unset_recompute_takes_the_least_that_fits_and_says_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = cli(capsys, *LORA_4090)
    record = json.loads(out)
    assert code == 0 and record["fits"] and record["recompute"] == "full"
    assert any("recompute full (assumed" in note for note in record["notes"])
    roomy = estimate(Workload("lora", L8, seq_len=4096, train_tokens=1e8), "H100-SXM-80GB", 1)
    assert roomy.fits and roomy.recompute == "none"  # no recomputation needed: none costs least


def test_a_given_policy_is_never_replaced() -> None:
    work = Workload("lora", L8, seq_len=4096, train_tokens=1e8, recompute="selective")
    result = estimate(work, "H100-SXM-80GB", 1)
    assert result.recompute == "selective"
    assert not any("assumed" in note for note in result.notes)


def test_a_run_that_does_not_fit_without_recomputation_is_told_which_does(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = cli(capsys, *LORA_4090, "--recompute", "none")
    record = json.loads(out)
    assert code == 0 and {"option": "recompute", "value": "full"} in record["would_fit"]
