"""The serving engine and training stack as inputs: a per-engine/stack factor fitted only on
other publications of that software, shrunk towards the pooled value, and the pooled value
with the wider range when the software is unknown."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence

import pytest

from priceadvisor import llm
from priceadvisor.sizing import calibration
from priceadvisor.sizing.calibration import Case
from priceadvisor.sizing.estimate import Scales, Workload, estimate, software_key
from tests.conftest import cli

L70 = llm.lookup("llama-3.1-70b")


def _with_engine(cases: Sequence[Case], sources: set[str], engine: str) -> list[Case]:
    return [
        dataclasses.replace(c, workload=dataclasses.replace(c.workload, engine=engine))
        if c.source_key in sources
        else c
        for c in cases
    ]


def _serving(sources: Sequence[str]) -> list[Case]:
    return [c for c in calibration.cases() if c.source_key in sources]


def test_engine_factor_is_fitted_only_from_other_publications_of_that_engine() -> None:
    """Doubling every measurement of one TensorRT-LLM publication moves none of its own
    held-out predictions, but moves the TensorRT-LLM factor of the folds that hold out another
    TensorRT-LLM publication (so it is fitted from the other publications of the engine)."""
    every = calibration.cases()
    source = "trtllm-perf-2025"
    assert software_key(next(c for c in every if c.source_key == source).workload) == (
        "engine:trt-llm"
    )
    doubled = [
        dataclasses.replace(c, measured=c.measured * 2) if c.source_key == source else c
        for c in every
    ]
    before = {r.case.case_id: r for r in calibration.leave_one_source_out(every)}
    after = {r.case.case_id: r for r in calibration.leave_one_source_out(doubled)}
    own = [c.case_id for c in every if c.source_key == source]
    assert all(after[i].specific and after[i].loo == before[i].loo for i in own)
    fold_before = _fold_factor(every, "trtllm-v0.5")
    fold_after = _fold_factor(doubled, "trtllm-v0.5")
    assert fold_after != pytest.approx(fold_before, rel=1e-3)
    moved = [c.case_id for c in every if c.source_key == "trtllm-v0.5"]
    assert any(after[i].loo != pytest.approx(before[i].loo, rel=1e-3) for i in moved)


def _fold_factor(cases: Sequence[Case], held_out: str) -> float:
    fold = [c for c in cases if c.source_key != held_out]
    return calibration.fit(fold).factors["engine:trt-llm"]


def test_a_factor_needs_two_publications_and_is_shrunk_by_their_count() -> None:
    cases = _serving(["trtllm-v0.5", "trtllm-perf-2025", "mlperf-v5.0", "llm-inference-bench"])
    one = _with_engine(cases, {"trtllm-v0.5"}, "sglang")
    assert "engine:sglang" not in calibration.fit(one).factors  # one publication: pooled
    two = _with_engine(cases, {"trtllm-v0.5", "trtllm-perf-2025"}, "sglang")
    base = calibration.fit(two).factors["engine:sglang"]
    faster = [
        dataclasses.replace(c, measured=c.measured * 4)
        if c.workload.engine == "sglang" and c.metric == "tokens_per_s_total"
        else dataclasses.replace(c, measured=c.measured / 4)
        if c.workload.engine == "sglang"
        else c
        for c in two
    ]
    refit = calibration.fit(faster).factors
    # Four times faster in both publications: with two publications the factor moves halfway
    # (in log space) towards the data: x2, not x4 (the pooled regime factors move a little too).
    assert 1.6 < refit["engine:sglang"] / base < 2.4


def test_unknown_engine_uses_the_pooled_value_with_the_wider_range() -> None:
    scales = Scales(
        {"serve-throughput": 1.2, "decode": 1.1, "engine:trt-llm": 0.8},
        {"serve-throughput": 0.31, "serve-throughput:unknown": 0.5},
    )
    work = Workload("batch", L70, "fp8", concurrency=256, scales=scales)
    unknown = estimate(work, "H100-SXM-80GB", 8, 2)
    trt = estimate(dataclasses.replace(work, engine="trt-llm"), "H100-SXM-80GB", 8, 2)
    pooled = estimate(
        dataclasses.replace(work, scales=Scales(dict(list(scales.factors.items())[:2]))),
        "H100-SXM-80GB",
        8,
        2,
    )
    assert unknown.tokens_per_s == pytest.approx(pooled.tokens_per_s)
    assert trt.tokens_per_s < 0.9 * unknown.tokens_per_s
    assert (unknown.uncertainty, trt.uncertainty) == (0.5, 0.31)
    # A named engine without a fitted factor is sized and ranged as unknown, and says so (LMDeploy:
    # no separate activation-quantisation kernels, so its FP8 step is the pooled one).
    lmdeploy = estimate(dataclasses.replace(work, engine="lmdeploy"), "H100-SXM-80GB", 8, 2)
    assert lmdeploy.tokens_per_s == pytest.approx(unknown.tokens_per_s)
    assert lmdeploy.uncertainty == 0.5 and any("engine lmdeploy" in n for n in lmdeploy.notes)


def test_fitted_ranges_for_unknown_software_are_never_narrower() -> None:
    stated = calibration.fitted_scales().uncertainty
    regimes = [k for k in stated if ":" not in k]
    assert regimes and all(stated[f"{r}:unknown"] >= stated[r] for r in regimes)


def _estimate(capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, str]:
    base = ("estimate", "--format", "json", "--gpu", "H100-SXM-80GB", "--model", "llama-3.1-8b")
    return cli(capsys, *base, *extra)


def test_cli_accepts_engines_and_stacks(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _estimate(capsys, "--engine", "vllm")
    assert code == 0 and json.loads(out)["software"] == "engine:vllm"
    code, out, _ = _estimate(capsys, "--task", "pretrain", "--stack", "megatron-core")
    assert code == 0 and json.loads(out)["software"] == "stack:megatron-core"
    code, out, _ = _estimate(capsys, "--task", "pretrain", "--stack", "modern")
    assert code == 0 and json.loads(out)["software"] == "unknown"  # the earlier name


def test_cli_sizes_vllm_v0_on_its_fp8_kv_path(capsys: pytest.CaptureFixture[str]) -> None:
    """`--engine vllm-v0` (vLLM's V0 engine) with an FP8 KV cache is slower than V1 and says
    why; the V1 engine has no fitted factor of its own yet and says that."""
    fp8 = ("--precision", "fp8", "--task", "batch", "--concurrency", "64")
    code, out, _ = _estimate(capsys, "--engine", "vllm-v0", *fp8)
    v0 = json.loads(out)
    assert code == 0 and v0["software"] == "engine:vllm-v0"
    assert any("PagedAttention" in note for note in v0["notes"])
    code, out, _ = _estimate(capsys, "--engine", "vllm", *fp8)
    v1 = json.loads(out)
    assert code == 0 and v1["tpot_ms"] < v0["tpot_ms"]
    assert any("no fitted factor for engine vllm" in note for note in v1["notes"])


@pytest.mark.parametrize(("option", "value"), [("--engine", "tgi"), ("--stack", "deepspeed")])
def test_cli_refuses_unknown_engines_and_stacks(
    capsys: pytest.CaptureFixture[str], option: str, value: str
) -> None:
    code, out, err = _estimate(capsys, option, value)
    assert code == 2 and not out
    assert f"unknown {option[2:]} '{value}'" in err and "Traceback" not in err


def test_estimate_help_documents_engine_and_stack(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "estimate", "--help")
    assert code == 0 and "--engine" in out and "trt-llm" in out and "megatron-core" in out
