"""Pipeline-parallel training layouts: the bubble a pipeline adds to each step, the CLI inputs
that state it, and the calibration rows whose sources give it."""

from __future__ import annotations

import dataclasses
import json

import pytest

from priceadvisor import llm
from priceadvisor.sizing import calibration
from priceadvisor.sizing.estimate import SizingError, Workload, estimate, pipeline_bubble
from tests.conftest import cli

L70 = llm.lookup("llama-3.1-70b")
WORK = Workload("pretrain", L70, precision="fp8", seq_len=8192, train_tokens=1e10)


def _layout(pp: int, vp: int = 1, micro_batches: int | None = None) -> Workload:
    return dataclasses.replace(
        WORK, pipeline_parallel=pp, virtual_stages=vp, micro_batches=micro_batches
    )


def test_the_bubble_is_p_minus_one_over_v_times_m() -> None:
    assert pipeline_bubble(WORK) == 0.0  # no pipeline
    assert pipeline_bubble(_layout(8, 1, 64)) == pytest.approx(7 / 64)  # 1F1B
    assert pipeline_bubble(_layout(8, 5, 64)) == pytest.approx(7 / 320)  # interleaved


def test_a_pipeline_slows_the_step_by_its_bubble_and_says_so() -> None:
    flat = estimate(WORK, "H100-SXM-80GB", 64)
    for layout, bubble in ((_layout(8, 1, 64), 7 / 64), (_layout(8, 5, 64), 7 / 320)):
        piped = estimate(layout, "H100-SXM-80GB", 64)
        assert piped.tokens_per_s == pytest.approx(flat.tokens_per_s / (1 + bubble))
        assert piped.hours and flat.hours
        assert piped.hours == pytest.approx(flat.hours * (1 + bubble))
    assert any(
        "pipeline bubble: 11%" in n for n in estimate(_layout(8, 1, 64), "H100-SXM-80GB", 64).notes
    )
    assert not any("bubble" in n for n in estimate(_layout(8, 5, 64), "H100-SXM-80GB", 64).notes)


@pytest.mark.parametrize(
    ("layout", "message"),
    [
        (_layout(8), "need the micro-batches per step"),
        (_layout(3, 1, 12), "cannot be split into 3 pipeline stages"),
        (_layout(1, 2), "give more than one pipeline stage"),
        (_layout(1, 1, 16), "give more than one pipeline stage"),
        (_layout(8, 20, 64), "exceed the model's 80 layers"),
        (_layout(8, 1, 0), "must be ≥ 1"),
    ],
)
def test_impossible_or_incomplete_layouts_are_refused(layout: Workload, message: str) -> None:
    with pytest.raises(SizingError, match=message):
        estimate(layout, "H100-SXM-80GB", 64)


def test_cli_states_the_training_layout_and_keeps_vp_for_training(
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = ("estimate", "--gpu", "H100-SXM-80GB", "--gpus", "64", "--task", "pretrain")
    base = (*base, "--model", "llama-3.1-70b", "--precision", "fp8", "--format", "json")
    code, flat, _ = cli(capsys, *base)
    assert code == 0
    code, piped, _ = cli(capsys, *base, "--pp", "8", "--vp", "5", "--micro-batches", "64")
    assert code == 0
    ratio = json.loads(flat)["tokens_per_s"] / json.loads(piped)["tokens_per_s"]
    assert ratio == pytest.approx(1 + 7 / 320, rel=1e-3)
    code, out, err = cli(capsys, *base, "--pp", "8")
    assert code == 2 and not out and "--micro-batches" in err
    code, out, err = cli(capsys, *base, "--pp", "0", "--micro-batches", "4")
    assert code == 2 and not out
    serving = ("estimate", "--gpu", "H100-SXM-80GB", "--model", "llama-3.1-8b")
    code, out, err = cli(capsys, *serving, "--pp", "2", "--vp", "2")
    assert code == 2 and not out and "apply to training tasks" in err
    code, out, _ = cli(capsys, "estimate", "--help")
    assert code == 0 and all(flag in out for flag in ("--pp", "--vp", "--micro-batches"))


def test_calibration_rows_state_the_pipelines_their_sources_give() -> None:
    cases = {c.case_id: c for c in calibration.cases()}
    t02 = cases["T02"].workload  # TP4 PP8 VP5, GBS 128, MBS 1 on 64 GPUs: DP 2
    assert (t02.pipeline_parallel, t02.virtual_stages, t02.micro_batches) == (8, 5, 64)
    xt06 = cases["XT06"].workload  # PP16 without VP, GBS 4096 on 256 GPUs: DP 16
    assert (xt06.pipeline_parallel, xt06.virtual_stages, xt06.micro_batches) == (16, 1, 256)
    t15 = cases["T15"].workload  # TP4 PP4 (no VP), GBS 32, MBS 1 on 16 GPUs: DP 1
    assert (t15.pipeline_parallel, t15.virtual_stages, t15.micro_batches) == (4, 1, 32)
    xt10 = cases["XT10"].workload  # SC21 script, 39B: PP2, no VP, GBS 1536, MBS 4 on 512: DP 32
    assert (xt10.pipeline_parallel, xt10.virtual_stages, xt10.micro_batches) == (2, 1, 12)
    for sc21_530b in ("XT13", "XT15"):  # PP35, 1 of 105 layers per virtual stage, 280 per pipeline
        work = cases[sc21_530b].workload
        assert (work.pipeline_parallel, work.virtual_stages, work.micro_batches) == (35, 3, 280)
    # a source that names a pipeline but not its micro-batches states none (no bubble guessed)
    assert cases["XT21"].workload.pipeline_parallel == 1
    for case in cases.values():  # every stated layout fits its GPUs and model
        work = case.workload
        if work.pipeline_parallel > 1 and work.task not in ("serve", "batch"):
            assert case.gpus % work.pipeline_parallel == 0 and work.micro_batches
