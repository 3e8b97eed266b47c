"""What users can express: Hugging Face configs of the common families, explicit numbers,
aliases, and the estimate/calibrate commands' inputs and exit codes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from priceadvisor import llm
from priceadvisor.sizing import calibration
from tests.conftest import cli

DEEPSEEK_V3 = {
    "model_type": "deepseek_v3",
    "hidden_size": 7168,
    "num_hidden_layers": 61,
    "num_attention_heads": 128,
    "num_key_value_heads": 128,
    "intermediate_size": 18432,
    "moe_intermediate_size": 2048,
    "n_routed_experts": 256,
    "n_shared_experts": 1,
    "num_experts_per_tok": 8,
    "first_k_dense_replace": 3,
    "q_lora_rank": 1536,
    "kv_lora_rank": 512,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "vocab_size": 129280,
}
MIXTRAL = {
    "model_type": "mixtral",
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "intermediate_size": 14336,
    "num_local_experts": 8,
    "num_experts_per_tok": 2,
    "vocab_size": 32000,
}
# Native configs of GELU families (published values of MPT-7B, BLOOM-7B1, Falcon-7B, Pythia-12B).
MPT_7B = {
    "model_type": "mpt",
    "d_model": 4096,
    "n_layers": 32,
    "n_heads": 32,
    "expansion_ratio": 4,
    "vocab_size": 50432,
}
BLOOM_7B = {
    "model_type": "bloom",
    "hidden_size": 4096,
    "n_layer": 30,
    "n_head": 32,
    "vocab_size": 250880,
}
FALCON_7B = {
    "model_type": "falcon",
    "hidden_size": 4544,
    "num_hidden_layers": 32,
    "num_attention_heads": 71,
    "multi_query": True,
    "vocab_size": 65024,
}
PYTHIA_12B = {
    "model_type": "gpt_neox",
    "hidden_size": 5120,
    "num_hidden_layers": 36,
    "num_attention_heads": 40,
    "intermediate_size": 20480,
    "vocab_size": 50688,
}


def _config(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_deepseek_v3_config_is_mla_and_moe(tmp_path: Path) -> None:
    arch = llm.from_hf_config(_config(tmp_path, DEEPSEEK_V3))
    assert arch.total_params / 1e9 == pytest.approx(671, rel=0.01)
    assert arch.active_params / 1e9 == pytest.approx(37, rel=0.03)
    assert arch.kv_bytes_per_token(2) == (512 + 64) * 61 * 2  # one latent per layer


def test_mixtral_config_counts_experts(tmp_path: Path) -> None:
    arch = llm.from_hf_config(_config(tmp_path, MIXTRAL))
    assert arch.total_params / 1e9 == pytest.approx(46.7, rel=0.01)
    assert arch.active_params / 1e9 == pytest.approx(12.9, rel=0.02)


@pytest.mark.parametrize(
    ("config", "billions", "kv_heads"),
    [(MPT_7B, 6.65, 32), (BLOOM_7B, 7.07, 32), (FALCON_7B, 6.92, 1), (PYTHIA_12B, 11.85, 40)],
)
def test_gelu_families_read_natively_and_counted_non_gated(
    tmp_path: Path, config: dict[str, Any], billions: float, kv_heads: int
) -> None:
    arch = llm.from_hf_config(_config(tmp_path, config))
    assert not arch.gated and arch.kv_heads == kv_heads
    assert arch.total_params / 1e9 == pytest.approx(billions, rel=0.03)


def test_unknown_architectures_are_refused_not_guessed(tmp_path: Path) -> None:
    with pytest.raises(llm.ModelError, match="not read"):
        llm.from_hf_config(_config(tmp_path, {"model_type": "mamba", "hidden_size": 1}))
    with pytest.raises(llm.ModelError, match="missing or bad field"):
        llm.from_hf_config(_config(tmp_path, {"model_type": "llama", "hidden_size": 4096}))


def test_common_aliases_and_hub_ids_resolve() -> None:
    assert llm.lookup("llama-7b").name == "Llama 2 7B"
    assert llm.lookup("meta-llama/Llama-2-70b-chat-hf").name == "Llama 2 70B"
    assert llm.lookup("Llama-3.3-70B-Instruct") == llm.lookup("llama-3.1-70b")


def test_explicit_moe_numbers() -> None:
    arch = llm.from_numbers("x", params_b=47, active_params_b=13, experts=8, experts_per_token=2)
    assert arch.is_moe and arch.active_params == 13e9
    with pytest.raises(llm.ModelError):
        llm.from_numbers("x", params_b=47, experts=8, experts_per_token=2)


def _estimate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any], str]:
    code, out, err = cli(capsys, "estimate", "--format", "json", *args)
    return code, (json.loads(out) if code == 0 else {}), err


def test_unknown_precision_and_nonsense_tp_are_usage_errors(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = _estimate(
        capsys, "--gpu", "H100-SXM-80GB", "--model", "llama-3.1-8b", "--precision", "fp5"
    )
    assert code == 2 and "precision" in err and len(err.strip().splitlines()) == 1
    code, _, err = _estimate(
        capsys,
        "--gpu",
        "H100-SXM-80GB",
        "--model",
        "llama-3.1-8b",
        "--gpus",
        "1024",
        "--tp",
        "1024",
    )
    assert code == 2 and "tensor parallel" in err


def test_estimate_cli_expresses_replicas_fp4_and_big_clusters(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, result, _ = _estimate(
        capsys,
        "--gpu",
        "B200-180GB",
        "--model",
        "llama-2-70b",
        "--precision",
        "fp4",
        "--gpus",
        "8",
        "--tp",
        "2",
    )
    assert code == 0 and result["replicas"] == 4 and result["tensor_parallel"] == 2
    code, result, _ = _estimate(
        capsys,
        "--gpu",
        "H100-SXM-80GB",
        "--model",
        "llama-3.1-405b",
        "--task",
        "pretrain",
        "--gpus",
        "16384",
        "--train-tokens",
        "15e12",
    )
    assert code == 0 and result["gpu_count"] == 16384 and result["hours"] > 0


def test_params_b_alone_fits_and_no_gated_counts_fewer_params(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, result, _ = _estimate(capsys, "--gpu", "H100-SXM-80GB", "--params-b", "8")
    assert code == 0 and result["fits"]
    numbers = [
        "--layers",
        "32",
        "--hidden",
        "4096",
        "--heads",
        "32",
        "--ffn",
        "16384",
        "--vocab",
        "50432",
    ]
    _, gated, _ = _estimate(capsys, "--gpu", "H100-SXM-80GB", *numbers)
    _, gelu, _ = _estimate(capsys, "--gpu", "H100-SXM-80GB", "--no-gated", *numbers)
    assert gelu["params_b"] < gated["params_b"]
    assert gated["params_b"] - gelu["params_b"] == pytest.approx(32 * 4096 * 16384 / 1e9, abs=0.01)


def test_batch_concurrency_is_honoured_from_the_cli(capsys: pytest.CaptureFixture[str]) -> None:
    code, result, _ = _estimate(
        capsys,
        "--gpu",
        "H100-SXM-80GB",
        "--model",
        "llama-3.1-8b",
        "--task",
        "batch",
        "--precision",
        "fp8",
        "--input-tokens",
        "128",
        "--output-tokens",
        "128",
        "--concurrency",
        "600",
    )
    assert code == 0 and result["batch"] == 600


def test_estimate_help_documents_every_input(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "estimate", "--help")
    assert code == 0
    for option in (
        "--tp",
        "--gated",
        "--head-dim",
        "--experts",
        "--active-params-b",
        "--stack",
        "--kv-precision",
        "--concurrency",
    ):
        assert option in out


def test_calibrate_prints_the_error_per_regime(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "calibrate", "--format", "json")
    rows = {row["regime"]: row for row in json.loads(out)}
    assert code == 0 and {"train-moe", "decode", "prefill", "serve-throughput", "all"} <= set(rows)
    check_only = sum(1 for case in calibration.cases() if case.check_only)
    assert rows["all-stated"]["cases"] == rows["all"]["cases"] - check_only > 0
    for name, row in rows.items():  # the range estimate states covers the held-out p90
        if not name.startswith(("all", "slice:")):  # in whole percent: half a point below at most
            assert row["stated_range_pct"] >= row["p90_abs_error_pct"] - 0.5


def test_calibrate_reports_amd_multi_gpu_serving_and_multi_node_training_on_their_own(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, out, _ = cli(capsys, "calibrate", "--format", "json")
    rows = {row["regime"]: row for row in json.loads(out)}
    amd = rows["slice: serving on 2+ AMD GPUs"]
    nodes = rows["slice: training beyond one node"]
    every = calibration.cases()
    assert amd["cases"] == sum(
        1
        for c in every
        if c.gpu.startswith("MI")
        and c.gpus > 1
        and c.regime in ("decode", "prefill", "serve-throughput", "kv")
    )
    assert amd["sources"] >= 2  # AMD's own page and at least one publication independent of it
    assert nodes["cases"] == sum(
        1 for c in every if c.gpus > 8 and c.metric in ("tokens_per_s_per_gpu", "gpu_hours_total")
    )
    assert amd["stated_range_pct"] is None  # a slice states no range of its own
