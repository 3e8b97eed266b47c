"""Round 16: packed fine-tuning samples attend only within themselves, so the attention
FLOPs follow the samples' length, not the packed sequence's."""

from __future__ import annotations

import dataclasses

import pytest

from priceadvisor import llm
from priceadvisor.sizing import calibration
from priceadvisor.sizing.estimate import (
    Workload,
    attention_training_flops,
    estimate,
    executed_training_flops,
)
from tests.conftest import cli

L7 = llm.lookup("llama-2-7b")


def test_attention_flops_follow_the_packed_samples() -> None:
    packed = Workload("lora", L7, "fp8", seq_len=4096, packed_document_tokens=256)
    unpacked = dataclasses.replace(packed, packed_document_tokens=None)
    saved = attention_training_flops(L7, 4096) - attention_training_flops(L7, 256)
    assert executed_training_flops(unpacked) - executed_training_flops(packed) == pytest.approx(
        saved
    )
    faster = estimate(packed, "H100-SXM-80GB", 8).tokens_per_s
    assert faster > estimate(unpacked, "H100-SXM-80GB", 8).tokens_per_s
    # a sample longer than the sequence is cut to it: no more attention than unpacked
    longer = dataclasses.replace(packed, packed_document_tokens=8192)
    assert executed_training_flops(longer) == executed_training_flops(unpacked)


def test_nemo_finetuning_rows_state_their_packed_squad_samples() -> None:
    packed = {
        c.case_id
        for c in calibration.cases()
        if c.source_key == "nemo-24.12" and c.workload.packed_document_tokens
    }
    assert packed == {"T14", "T15", "T20", "T21"}  # the 'Finetuning' table; T16 is pre-training


def test_cli_takes_packed_samples_for_training_only(capsys: pytest.CaptureFixture[str]) -> None:
    train = ("estimate", "--model", "llama-2-7b", "--task", "lora", "--gpu", "H100-SXM-80GB")
    code, out, _ = cli(capsys, *train, "--packed-document-tokens", "256", "-f", "json")
    assert code == 0 and out
    serve = ("estimate", "--model", "llama-2-7b", "--task", "serve", "--gpu", "H100-SXM-80GB")
    code, out, err = cli(capsys, *serve, "--packed-document-tokens", "256")
    assert code == 2 and "packed_document_tokens applies to training" in err
