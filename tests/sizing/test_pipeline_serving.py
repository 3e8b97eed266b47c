"""Pipeline-parallel serving: replicas of TP x PP GPUs whose stages each hold 1/PP of the layers
and keep PP micro-batches in flight; the CLI input that states it and the calibration rows
whose configurations give it."""

from __future__ import annotations

import dataclasses
import json

import pytest

from priceadvisor import llm
from priceadvisor.gpu_specs import gpu_catalog
from priceadvisor.sizing import calibration
from priceadvisor.sizing import estimate as sizing
from priceadvisor.sizing.estimate import SizingError, Workload, estimate
from tests.conftest import cli

H100 = gpu_catalog().gpus["H100-SXM-80GB"]
L70 = llm.lookup("llama-3.1-70b")
SERVE = Workload("serve", L70, precision="fp8", input_tokens=222, output_tokens=292)
PP2 = dataclasses.replace(SERVE, pipeline_parallel=2)


def test_a_pipeline_of_one_stage_is_the_tensor_parallel_replica() -> None:
    for tp, tokens in ((1, 1), (2, 64), (4, 1024)):
        assert sizing.pipeline_send_seconds(SERVE, H100, tp, tokens) == 0.0
    assert sizing.kv_per_token(SERVE, 2) == L70.kv_bytes_per_token_per_gpu(1.0, 2)
    result = estimate(SERVE, "H100-SXM-80GB", 8, 2)
    assert (result.pipeline_parallel, result.replicas) == (1, 4)
    assert result.as_dict()["pipeline_parallel"] == 1


def test_weights_and_kv_split_over_tp_times_pp() -> None:
    memory_pp, _ = sizing.serving_memory(PP2, H100, 1)
    memory_tp, _ = sizing.serving_memory(SERVE, H100, 2)
    assert memory_pp["weights"] == pytest.approx(memory_tp["weights"])
    assert sizing.kv_per_token(PP2, 1) == pytest.approx(sizing.kv_per_token(SERVE, 2))
    # the same KV bytes per token, a little less free memory (one stage's activations whole)
    assert 0.7 < sizing.kv_tokens(PP2, H100, 1) / sizing.kv_tokens(SERVE, H100, 2) < 1
    result = estimate(PP2, "H100-SXM-80GB", 8, 1)
    assert result.fits and (result.tensor_parallel, result.pipeline_parallel) == (1, 2)
    assert result.replicas == 4


def test_at_a_compute_bound_batch_pp2_is_close_to_tp2_without_its_allreduces() -> None:
    memory_pp, compute_pp = sizing.decode_seconds(PP2, H100, 1, 1024)
    memory_tp, compute_tp = sizing.decode_seconds(SERVE, H100, 2, 1024)
    assert compute_pp == pytest.approx(compute_tp)  # 2·N·B over the same two GPUs
    assert compute_pp > memory_pp and compute_tp > memory_tp
    assert sizing.tp_allreduce_seconds(PP2, H100, 1, 512) == 0.0
    work = dataclasses.replace(SERVE, concurrency=1024)
    piped = estimate(dataclasses.replace(work, pipeline_parallel=2), "H100-SXM-80GB", 2, 1)
    tensor = estimate(work, "H100-SXM-80GB", 2, 2)
    assert 0.85 < piped.tokens_per_s / tensor.tokens_per_s < 1.15


def test_at_batch_one_a_stage_reads_all_its_weights_per_token_so_pp_is_slower() -> None:
    piped = sum(sizing.decode_seconds(PP2, H100, 1, 1))
    tensor = sum(sizing.decode_seconds(SERVE, H100, 2, 1))
    alone = sizing.decode_seconds(SERVE, H100, 1, 1)
    assert piped > 1.4 * tensor
    # one request crosses both stages: one GPU's worth of weights and KV, plus the send
    send = sizing.pipeline_send_seconds(PP2, H100, 1, 2)
    assert sizing.decode_seconds(PP2, H100, 1, 1)[0] == pytest.approx(alone[0] + send)


def test_the_stages_never_shorten_the_ttft() -> None:
    small = Workload("serve", llm.lookup("llama-3.1-8b"), input_tokens=2000, output_tokens=200)
    alone = estimate(small, "H100-SXM-80GB", 1, 1)
    piped = estimate(dataclasses.replace(small, pipeline_parallel=2), "H100-SXM-80GB", 2, 1)
    tensor = estimate(small, "H100-SXM-80GB", 2, 2)
    assert alone.ttft_ms and piped.ttft_ms and tensor.ttft_ms
    assert piped.ttft_ms >= alone.ttft_ms > tensor.ttft_ms


def test_saturated_prefill_spreads_over_every_gpu_of_the_replica() -> None:
    no_decode = dataclasses.replace(PP2, output_tokens=1)
    flat = dataclasses.replace(SERVE, output_tokens=1)
    piped = sizing.saturated_step_seconds(no_decode, H100, 1, 64)
    piped -= sizing._step(no_decode, H100, 1, 64)
    tensor = sizing.saturated_step_seconds(flat, H100, 2, 64) - sizing._step(flat, H100, 2, 64)
    send = sizing.pipeline_send_seconds(no_decode, H100, 1, 64 * 222)
    allreduce = sizing.tp_allreduce_seconds(flat, H100, 2, 64 * 222)
    assert piped - send == pytest.approx(tensor - allreduce)


@pytest.mark.parametrize(
    ("layout", "gpus", "tp", "message"),
    [
        (PP2, 3, 1, "cannot be split into 2 pipeline stages"),
        (PP2, 4, 4, r"replicas of TP4 x PP2 \(TP·PP must divide\)"),
        (dataclasses.replace(SERVE, pipeline_parallel=128), 128, 1, "exceed the model's 80"),
        (dataclasses.replace(PP2, micro_batches=4), 8, 1, "apply to training"),
        (dataclasses.replace(PP2, virtual_stages=2), 8, 1, "apply to training"),
    ],
)
def test_impossible_serving_pipelines_are_refused(
    layout: Workload, gpus: int, tp: int, message: str
) -> None:
    with pytest.raises(SizingError, match=message):
        estimate(layout, "H100-SXM-80GB", gpus, tp)


def test_a_share_of_one_gpu_takes_no_pipeline() -> None:
    with pytest.raises(SizingError, match="pipeline stages"):
        estimate(PP2, "A100-SXM-80GB", 0.5)


def test_cli_sizes_a_serving_pipeline_and_refuses_bad_layouts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = ("estimate", "--gpu", "H100-SXM-80GB", "--model", "llama-3.1-70b")
    base = (*base, "--precision", "fp8", "--format", "json")
    code, out, _ = cli(capsys, *base, "--gpus", "8", "--tp", "2", "--pp", "2")
    assert code == 0
    result = json.loads(out)
    assert (result["tensor_parallel"], result["pipeline_parallel"], result["replicas"]) == (2, 2, 2)
    code, out, _ = cli(capsys, *base, "--task", "batch", "--gpus", "8", "--pp", "2")
    assert code == 0 and json.loads(out)["pipeline_parallel"] == 2
    for bad in (("--gpus", "8", "--pp", "3"), ("--gpus", "8", "--tp", "8", "--pp", "2")):
        code, out, err = cli(capsys, *base, *bad)
        assert code == 2 and not out and "cannot be split into" in err
    code, out, err = cli(capsys, *base, "--gpus", "8", "--pp", "2", "--micro-batches", "2")
    assert code == 2 and not out and "apply to training tasks" in err


def test_calibration_rows_state_the_serving_pipelines_their_configs_give() -> None:
    cases = {c.case_id: c for c in calibration.cases()}
    for case_id in ("XI03", "XI06", "XI08"):  # MLPerf v5.0 Llama 2 70B Offline: TP1 PP2 x 4
        case = cases[case_id]
        assert (case.tensor_parallel, case.workload.pipeline_parallel, case.gpus) == (1, 2, 8)
        result = estimate(case.workload, case.gpu, case.gpus, case.tensor_parallel)
        assert result.fits and result.replicas == 4
    unstated = [c for c in cases.values() if c.workload.task in ("serve", "batch")]
    assert sum(c.workload.pipeline_parallel > 1 for c in unstated) == 3
