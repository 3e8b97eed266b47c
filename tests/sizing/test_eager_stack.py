"""Round 17: an eager stack (Hugging Face Trainer/PEFT on the model's PyTorch code) runs every
elementwise op of a decoder layer as its own kernel and pays its HBM traffic; fused and unknown
stacks keep their prediction."""

from __future__ import annotations

import dataclasses

import pytest

from priceadvisor import llm
from priceadvisor.gpu_specs import gpu_catalog
from priceadvisor.sizing import calibration
from priceadvisor.sizing.estimate import (
    ELEMENTWISE_BANDWIDTH_SHARE,
    Workload,
    bandwidth,
    eager_elementwise_seconds,
    estimate,
)
from priceadvisor.workload import STACKS
from tests.conftest import cli

# Qwen-1.8B's shape (the calibration rows XT40-XT42)
QWEN_1_8B = llm.Architecture(
    name="qwen-1.8b",
    layers=24,
    hidden=2048,
    heads=16,
    kv_heads=16,
    ffn=5504,
    vocab=151936,
    params_b=1.84,
)
A100 = "A100-SXM-80GB"


def _lora(stack: str, recompute: str = "full") -> Workload:
    return Workload("lora", QWEN_1_8B, seq_len=2048, stack=stack, recompute=recompute)


def test_the_eager_traffic_is_the_counted_bytes_at_memory_bandwidth() -> None:
    # per layer and token, by hand from the op list in sizing.estimate (d 2048, f 5504):
    # forward: norms 2*2048*36 + rotary (2048+2048)*20 + SwiGLU 5504*10 + residuals 2048*12
    #   + LoRA inputs (q,k,v 3*2048, o 2048, gate/up 2*2048, down 5504)*5
    #   + LoRA outputs (q,k,v 3*2048, o 2048, gate/up 2*5504, down 2048)*10 = 610,432
    # backward: 4096*68 + 4096*16 + 5504*16 + 2048*12 + 17792*11 + 21248*4 = 737,408
    # full recomputation runs the forward twice: 24 layers x (2 x 610,432 + 737,408)
    counted = 24 * (2 * 610_432 + 737_408)
    gpu = gpu_catalog().gpus[A100]
    seconds = eager_elementwise_seconds(_lora("hf-trainer"), gpu)
    assert seconds * bandwidth(gpu) * ELEMENTWISE_BANDWIDTH_SHARE == pytest.approx(counted)
    no_recompute = eager_elementwise_seconds(_lora("hf-trainer", "none"), gpu)
    assert no_recompute * bandwidth(gpu) * ELEMENTWISE_BANDWIDTH_SHARE == pytest.approx(
        24 * (610_432 + 737_408)
    )


def test_only_an_eager_stack_pays_it() -> None:
    gpu = gpu_catalog().gpus[A100]
    for stack in STACKS:
        paid = eager_elementwise_seconds(_lora(stack), gpu) > 0
        assert paid == (stack == "hf-trainer"), stack
    eager = estimate(_lora("hf-trainer"), A100, 1)
    fused = estimate(_lora("torchtitan"), A100, 1)
    assert eager.tokens_per_s < fused.tokens_per_s
    assert any("eager stack" in note for note in eager.notes)
    assert not any("eager stack" in note for note in fused.notes)


def test_a_smaller_model_loses_a_larger_share_to_it() -> None:
    # elementwise bytes grow with the width, GEMM FLOPs with its square
    qwen_7b = dataclasses.replace(QWEN_1_8B, layers=32, hidden=4096, heads=32, kv_heads=32)
    qwen_7b = dataclasses.replace(qwen_7b, ffn=11008, params_b=7.72, name="qwen-7b")

    def share(arch: llm.Architecture) -> float:
        eager = estimate(dataclasses.replace(_lora("hf-trainer"), arch=arch), A100, 1)
        fused = estimate(dataclasses.replace(_lora("unknown"), arch=arch), A100, 1)
        assert eager.tokens_per_s and fused.tokens_per_s
        return 1 - eager.tokens_per_s / fused.tokens_per_s

    assert share(QWEN_1_8B) > share(qwen_7b) > 0


def test_qwen_profile_rows_state_the_stack_their_script_ran() -> None:
    rows = [c for c in calibration.cases() if c.source_key == "qwen-readme"]
    assert len(rows) == 6 and {c.workload.stack for c in rows} == {"hf-trainer"}
    # torchtune's README rows ran with torch.compile on: fused, not eager
    tune = [c for c in calibration.cases() if c.source_key == "torchtune"]
    assert tune and {c.workload.stack for c in tune} == {"torchtune"}


def test_cli_takes_the_eager_stack(capsys: pytest.CaptureFixture[str]) -> None:
    train = ("estimate", "--model", "llama-3.1-8b", "--task", "lora", "--gpu", A100)
    code, out, _ = cli(capsys, *train, "--stack", "hf-trainer", "-f", "json")
    assert code == 0 and "eager stack" in out
