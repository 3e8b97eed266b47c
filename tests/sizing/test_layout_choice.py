"""With no layout given, serving takes the layout the model predicts fastest among the valid
ones, and says why (issue 28, defect 8)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from priceadvisor import llm
from priceadvisor.sizing.estimate import Workload, estimate, serving_layouts
from tests.conftest import cli

L405 = llm.lookup("llama-3.1-405b")
WORK = Workload("serve", L405, "bf16")


def _at(tp: int, pp: int) -> float:
    work = dataclasses.replace(WORK, pipeline_parallel=pp)
    return estimate(work, "H100-SXM-80GB", 16, tensor_parallel=tp).tokens_per_s


def test_16_h100_take_tp8_x_pp2_over_tp16_across_nodes() -> None:
    chosen = estimate(WORK, "H100-SXM-80GB", 16)
    assert (chosen.tensor_parallel, chosen.pipeline_parallel) == (8, 2)
    assert chosen.tokens_per_s == pytest.approx(_at(8, 2)) and _at(8, 2) > _at(16, 1)
    assert chosen.layout_chosen and "fastest" in chosen.layout_chosen
    assert "TP16" in chosen.layout_chosen  # the runner-up, for the trade-off


def test_the_choice_is_the_fastest_of_the_valid_layouts_that_fit() -> None:
    chosen = estimate(WORK, "H100-SXM-80GB", 16)
    speeds = []
    for tp, pp in serving_layouts(WORK, 16):
        work = dataclasses.replace(WORK, pipeline_parallel=pp)
        result = estimate(work, "H100-SXM-80GB", 16, tensor_parallel=tp)
        if result.fits:
            speeds.append(result.tokens_per_s)
    assert chosen.tokens_per_s == pytest.approx(max(speeds))


def test_a_given_layout_is_kept_and_a_given_pp_bounds_the_search(
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = ["estimate", "--model", "llama-3.1-405b", "--gpu", "H100-SXM-80GB", "--gpus", "16"]
    code, out, _ = cli(capsys, *base, "--tp", "16", "-f", "json")
    record = json.loads(out)
    assert code == 0 and record["tensor_parallel"] == 16 and record["layout_chosen"] is None
    code, out, _ = cli(capsys, *base, "--pp", "4", "-f", "json")
    record = json.loads(out)
    assert code == 0 and record["pipeline_parallel"] == 4 and record["layout_chosen"]
    assert all(
        pp == 4 for _, pp in serving_layouts(dataclasses.replace(WORK, pipeline_parallel=4), 16)
    )
