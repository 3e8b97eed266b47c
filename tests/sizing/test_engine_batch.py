"""An unstated offline batch is what the engine would run (issue 28, defect 6): as many
sequences as the KV cache admits, up to the engine's default cap, stated in the output; a
given batch is honoured."""

from __future__ import annotations

import json

import pytest

from priceadvisor import llm
from priceadvisor.sizing.estimate import Workload, estimate
from tests.conftest import cli

L8 = llm.lookup("llama-3.1-8b")
BATCH = ["estimate", "--model", "llama-3.1-8b", "--task", "batch", "--precision", "fp8"]
SHORT = ["--input-tokens", "128", "--output-tokens", "128", "-f", "json"]


def _record(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    code, out, _ = cli(capsys, *BATCH, *SHORT, *args)
    assert code == 0
    record: dict[str, object] = json.loads(out)
    return record


def test_unset_batch_runs_to_vllm_v1s_cap_on_an_h100(capsys: pytest.CaptureFixture[str]) -> None:
    record = _record(capsys, "--gpu", "H100-SXM-80GB")
    assert record["batch"] == 1024  # max_num_seqs on GPUs of 70 GiB or more; KV admits more
    assert isinstance(record["max_concurrency"], int) and record["max_concurrency"] > 1024
    assert "default cap" in str(record["batch_assumed"])


def test_unset_batch_on_an_a100_and_with_vllm_v0_caps_at_256(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert _record(capsys, "--gpu", "A100-SXM-80GB")["batch"] == 256
    assert _record(capsys, "--gpu", "H100-SXM-80GB", "--engine", "vllm-v0")["batch"] == 256


def test_unset_batch_is_the_kv_capacity_where_that_binds_first() -> None:
    work = Workload("batch", L8, "fp8", input_tokens=8000, output_tokens=2000, concurrency=None)
    result = estimate(work, "H100-SXM-80GB", 1)
    assert result.max_concurrency and result.batch == result.max_concurrency < 1024
    assert result.batch_assumed and "KV cache admits" in result.batch_assumed
    trt = estimate(
        Workload("batch", L8, "fp8", concurrency=None, engine="trt-llm"), "H100-SXM-80GB", 1
    )
    assert trt.batch == trt.max_concurrency  # trtllm-bench tunes to memory: no cap of its own


def test_a_given_batch_is_honoured_and_not_restated(capsys: pytest.CaptureFixture[str]) -> None:
    record = _record(capsys, "--gpu", "H100-SXM-80GB", "--concurrency", "256")
    assert record["batch"] == 256 and record["batch_assumed"] is None
