"""Training FLOPs counted by component: the transformer blocks k·N_blocks (+2·N_blocks with
full recomputation), the LM head k·V·d (never recomputed; 4·V·d when frozen under LoRA), the
input embedding nothing (a lookup), attention scores as before."""

from __future__ import annotations

import dataclasses
import tomllib

import pytest

from priceadvisor import llm
from priceadvisor.resources import sizing_data_dir
from priceadvisor.sizing.estimate import (
    Workload,
    attention_training_flops,
    executed_training_flops,
    sixteen_bit_training_flops,
)

L8 = llm.lookup("llama-3.1-8b")
# Qwen-1.8B (huggingface.co/Qwen/Qwen-1_8B config.json): a small model with a large untied
# vocabulary, where the input embedding and LM head are a third of the parameters.
QWEN_1_8B = llm.from_numbers(
    "qwen-1.8b", layers=24, hidden=2048, heads=16, kv_heads=16, ffn=5504, vocab=151936
)


def _layer_params(layers: int, hidden: int, kv_width: int, ffn: int) -> float:
    """Dense Llama-style blocks from the config: q/o d², k/v d·kv_width, gated MLP 3·d·f."""
    return layers * (2 * hidden * hidden + 2 * hidden * kv_width + 3 * hidden * ffn)


def test_llama_8b_blocks_leave_out_both_vocabulary_tables() -> None:
    blocks = _layer_params(32, 4096, 1024, 14336)  # 6.98 B of the 8.03 B
    assert L8.block_params == pytest.approx(blocks)
    assert L8.lm_head_params == 128256 * 4096  # 0.525 B, and as much again in the embedding
    attention = attention_training_flops(L8, 8192)
    work = Workload("pretrain", L8, seq_len=8192)
    assert executed_training_flops(work) == pytest.approx(
        6 * blocks + 6 * 128256 * 4096 + attention
    )
    # 6·N over all 8.03 B charged the embedding lookup 3.15 GFLOP per token it never runs.
    assert 6 * L8.active_params + attention - executed_training_flops(work) == pytest.approx(
        6 * 128256 * 4096
    )


def test_full_recomputation_reruns_the_blocks_not_the_lm_head() -> None:
    work = Workload("lora", QWEN_1_8B, seq_len=2048, recompute="full")
    blocks = _layer_params(24, 2048, 2048, 5504)
    head = 151936 * 2048
    attention = attention_training_flops(QWEN_1_8B, 2048)
    # frozen weights: 4 per block parameter, +2 for the recomputed forward; the frozen head 4·V·d
    expected = 6 * blocks + attention * 4 / 3 + 4 * head
    assert executed_training_flops(work) == pytest.approx(expected)
    # the count of every parameter at 6 was ~29 % more than the GEMMs run
    assert (6 * QWEN_1_8B.active_params + attention * 4 / 3) / expected > 1.25
    plain = dataclasses.replace(work, recompute="none")
    assert executed_training_flops(work) - executed_training_flops(plain) == pytest.approx(
        2 * blocks + attention / 3
    )


def test_a_tied_matrix_runs_the_lm_head_gemm_once() -> None:
    tied = llm.lookup("llama-3.2-1b")
    assert tied.tied
    assert tied.block_params == pytest.approx(tied.active_params - tied.vocab * tied.hidden)
    work = Workload("pretrain", tied, seq_len=4096)
    attention = attention_training_flops(tied, 4096)
    assert executed_training_flops(work) == pytest.approx(6 * tied.active_params + attention)


def test_gpt_oss_active_count_holds_the_unembedding_only() -> None:
    arch = llm.lookup("gpt-oss-120b")
    attention = 2880 * 4096 * 2 + 2 * 2880 * 8 * 64
    experts = 4 * 3 * 2880 * 2880
    router = 2880 * 128
    blocks = 36 * (attention + experts + router)  # 4.55 B of the model card's 5.13 B active
    assert arch.block_params == pytest.approx(blocks, rel=0.02)
    # the model card's active count (5.13 B) is these blocks plus one V·d table
    assert blocks + arch.lm_head_params == pytest.approx(5.13e9, rel=0.005)


def test_sixteen_bit_part_is_the_lm_head_and_attention() -> None:
    work = Workload("pretrain", L8, "fp8", seq_len=8192, recompute="full")
    attention = attention_training_flops(L8, 8192)
    assert sixteen_bit_training_flops(work) == pytest.approx(
        6 * L8.lm_head_params + attention * 4 / 3
    )


def test_calibration_rows_state_how_many_vocabulary_tables_their_params_count() -> None:
    """A dense row's published params_b is its blocks plus one table when tied, two when not;
    a wrong `tied` would put an embedding table into the blocks' FLOPs."""
    text = (sizing_data_dir() / "calibration.toml").read_text(encoding="utf-8")
    for case_id, case in tomllib.loads(text)["cases"].items():
        numbers = dict(case.get("arch", {}))
        published = numbers.pop("params_b", None)
        if not published or "layers" not in numbers or numbers.get("experts"):
            continue
        derived = llm.from_numbers(case_id, **numbers).total_params
        assert derived == pytest.approx(published * 1e9, rel=0.005), case_id
