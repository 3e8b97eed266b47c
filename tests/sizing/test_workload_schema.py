"""One workload schema: `estimate`'s options and the config's `[[workloads]]` fields are the
same fields with the same types and choices, both validate into priceadvisor.workload, a
config workload reaches sizing with every knob `estimate` takes, and a bad value is the same
one-line error in both."""

from __future__ import annotations

import dataclasses
import json
import re
import types
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import pytest
import typer

from priceadvisor.cli.sizing import commands
from priceadvisor.config import ConfigError, WorkloadProfile, load_settings
from priceadvisor.notify import alerts, digest
from priceadvisor.records import RawQuote, utcnow
from priceadvisor.sizing.advisor import rank, store_advice
from priceadvisor.sizing.estimate import Workload
from priceadvisor.sizing.workloads import SIZED_FIELDS, to_workload
from priceadvisor.store import connections as store
from priceadvisor.workload import ArchitectureNumbers, WorkloadSpec, field_choices
from tests.conftest import cli, ingest_quotes

# Options of `estimate` that are not workload fields: where it runs and how it prints.
CLI_ONLY = {"gpu", "gpus", "fmt"}
# The config nests the architecture numbers under `architecture`; the CLI takes them flat.
NESTED = "architecture"
# Workload fields the sizing input takes under other names or as an argument of `estimate`.
NOT_SIZED = {"task", "model", "model_config_json", "architecture", "concurrency", "tensor_parallel"}
# The (click) type name each Python type of a field is read with: no "integer range" or
# choice of the CLI's own, the schema checks the values.
CLICK_TYPES = {int: "int", float: "float", bool: "boolean", str: "str", Path: "path"}


def _estimate_params() -> dict[str, Any]:
    group: Any = typer.main.get_command(commands)
    return {p.name: p for p in group.commands["estimate"].params if p.name}


def _schema_fields() -> dict[str, Any]:
    """Every workload field as the CLI spells it: the architecture numbers flattened."""
    fields: dict[str, Any] = dict(WorkloadSpec.model_fields)
    del fields[NESTED]
    return fields | dict(ArchitectureNumbers.model_fields)


def _base_type(annotation: Any) -> Any:
    """int for `int | None`, float for `Annotated[float, …]`, str for a Literal of strings."""
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        [annotation] = [a for a in get_args(annotation) if a is not type(None)]
        return _base_type(annotation)
    if origin is Annotated:
        return _base_type(get_args(annotation)[0])
    if origin is Literal:
        return type(get_args(annotation)[0])
    return annotation


def test_estimate_options_are_the_workload_fields() -> None:
    params, fields = _estimate_params(), _schema_fields()
    assert set(params) - CLI_ONLY == set(fields)
    for name, field in fields.items():
        param = params[name]
        assert f"--{name.replace('_', '-')}" in param.opts, name
        assert param.type.name == CLICK_TYPES[_base_type(field.annotation)], name
        if not field.is_required():
            assert param.default in (None, field.default), name


def test_choice_options_take_exactly_the_schemas_choices(
    capsys: pytest.CaptureFixture[str],
) -> None:
    params, fields = _estimate_params(), _schema_fields()
    choice_fields = {n: field_choices(f) for n, f in fields.items() if field_choices(f)}
    assert {
        "task",
        "precision",
        "kv_precision",
        "engine",
        "stack",
        "recompute",
        "moe_overlap",
    } <= set(choice_fields)
    for name, choices in choice_fields.items():
        assert params[name].type.name == "str", name  # no list of the CLI's own
        help_text = getattr(params[name], "help", "") or ""
        assert all(choice in help_text for choice in choices), name
        option = f"--{name.replace('_', '-')}"
        code, out, err = cli(
            capsys, "estimate", "--gpu", "H100", "--model", "llama-3.1-8b", option, "bogus"
        )
        assert code == 2 and not out and f"unknown {name} 'bogus'" in err and option in err


def test_the_config_takes_every_workload_field_and_sizing_every_one() -> None:
    config_fields = set(WorkloadProfile.model_fields)
    assert set(WorkloadSpec.model_fields) <= config_fields
    sized = {f.name for f in dataclasses.fields(Workload)}
    assert set(WorkloadSpec.model_fields) - NOT_SIZED <= sized  # nothing dropped on the way
    assert set(SIZED_FIELDS) <= config_fields  # the config can state every sizing input


# A workload with every knob `estimate` has beside the model, away from its default.
KNOBS = {
    "serve": (
        'precision = "fp8"\nkv_precision = "fp8"\nengine = "vllm"\ninput_tokens = 512\n'
        "output_tokens = 128\nconcurrency = 32\npipeline_parallel = 2\ntpot_ms_max = 200\n",
        [
            "--precision", "fp8", "--kv-precision", "fp8", "--engine", "vllm",
            "--input-tokens", "512", "--output-tokens", "128", "--concurrency", "32",
            "--pp", "2", "--tpot-ms-max", "200",
        ],
    ),
    "pretrain": (
        'stack = "megatron-core"\nrecompute = "selective"\npipeline_parallel = 2\n'
        "virtual_stages = 2\nmicro_batches = 8\nseq_len = 2048\ntrain_tokens = 1e9\n",
        [
            "--stack", "megatron-core", "--recompute", "selective", "--pp", "2", "--vp", "2",
            "--micro-batches", "8", "--seq-len", "2048", "--train-tokens", "1e9",
        ],
    ),
}  # fmt: skip


def _offers(db: Path, counts: tuple[int, ...]) -> None:
    quotes = [
        RawQuote(
            region="eastus",
            instance_type=f"h100-{count}x",
            pricing="on_demand",
            price=4.0 * count,
            gpu_name_raw="H100 SXM",
            gpu_count=count,
        )
        for count in counts
    ]
    ingest_quotes(db, "azure", quotes)


def _advised(tmp_path: Path, task: str, knobs: str) -> dict[float, dict[str, Any]]:
    path = tmp_path / f"{task}.toml"
    path.write_text(f'[[workloads]]\nname = "w"\ntask = "{task}"\nmodel = "llama-3.1-8b"\n{knobs}')
    [profile] = load_settings(path).workloads
    db = tmp_path / f"{task}.duckdb"
    if not db.exists():
        _offers(db, (2, 4, 8))
    with store.writer(db) as con:
        names, rows = rank(con, [profile], keep=10)
    return {r["gpu_count"]: r for r in (dict(zip(names, row, strict=True)) for row in rows)}


@pytest.mark.parametrize("task", ["serve", "pretrain"])
def test_advise_sizes_a_config_workload_as_estimate_sizes_its_options(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, task: str
) -> None:
    knobs, options = KNOBS[task]
    advised = _advised(tmp_path, task, knobs)
    assert set(advised) == {2.0, 4.0, 8.0}
    base = ["estimate", "--format", "json", "--gpu", "H100-SXM-80GB", "--model", "llama-3.1-8b"]
    for count, row in advised.items():
        code, out, err = cli(capsys, *base, "--task", task, "--gpus", f"{count:g}", *options)
        assert code == 0, err
        estimated = json.loads(out)
        assert row["tokens_per_s"] == pytest.approx(estimated["tokens_per_s"], abs=0.01)
        assert row["binding"] == estimated["binding"]
        if task == "pretrain":
            assert row["hours"] == pytest.approx(estimated["hours"], abs=0.001)
    # The knobs count: without them the same offers size differently.
    plain = _advised(tmp_path, task, "train_tokens = 1e9\n" if task == "pretrain" else "")
    assert any(plain[c]["tokens_per_s"] != pytest.approx(advised[c]["tokens_per_s"]) for c in plain)


def test_a_config_workload_carries_every_knob_into_sizing() -> None:
    profile = WorkloadProfile(
        name="w",
        task="pretrain",
        model="gpt-oss-120b",
        stack="torchtitan",
        recompute="full",
        moe_overlap="full",
        expert_parallel=8,
        pipeline_parallel=4,
        virtual_stages=3,
        micro_batches=16,
        train_tokens=1e9,
        precision="fp8",
        kv_precision="bf16",
    )
    work = to_workload(profile)
    assert (work.stack, work.recompute, work.moe_overlap, work.expert_parallel) == (
        "torchtitan",
        "full",
        "full",
        8,
    )
    assert (work.pipeline_parallel, work.virtual_stages, work.micro_batches) == (4, 3, 16)
    assert (work.precision, work.kv_precision, work.train_tokens) == ("fp8", "bf16", 1e9)


def test_concurrency_defaults_by_task_in_both() -> None:
    serve = WorkloadProfile(name="s", task="serve", model="llama-3.1-8b")
    batch = WorkloadProfile(name="b", task="batch", model="llama-3.1-8b")
    # A batch job left unset is the engine's to decide (sizing.estimate.engine_batch).
    assert (to_workload(serve).concurrency, to_workload(batch).concurrency) == (16, None)


# (config lines, estimate options, the field at fault, the message both give)
BAD = [
    ('engine = "tgi"', ["--engine", "tgi"], "engine", "unknown engine 'tgi' (use unknown, trt-llm"),
    ('stack = "deepspeed"', ["--stack", "deepspeed"], "stack", "unknown stack 'deepspeed'"),
    ('precision = "fp5"', ["--precision", "fp5"], "precision", "unknown precision 'fp5'"),
    ('recompute = "full"', ["--recompute", "full"], "recompute", "applies to training tasks"),
    ("micro_batches = 4", ["--micro-batches", "4"], "micro_batches", "apply to training tasks"),
    ("tensor_parallel = 64", ["--tp", "64"], "tensor_parallel", "exceeds the model's 32 attention"),
    ("pipeline_parallel = 0", ["--pp", "0"], "pipeline_parallel", "greater than or equal to 1"),
    ("pipeline_parallel = 40", ["--pp", "40"], "pipeline_parallel", "exceed the model's 32 layers"),
    ("concurrency = 0", ["--concurrency", "0"], "concurrency", "greater than 0"),
    ("ttft_ms_max = nan", ["--ttft-ms-max", "nan"], "ttft_ms_max", "finite number"),
]  # fmt: skip


@pytest.mark.parametrize(("line", "options", "key", "message"), BAD, ids=[b[2] for b in BAD])
def test_a_bad_value_is_the_same_one_line_error_in_config_and_cli(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    line: str,
    options: list[str],
    key: str,
    message: str,
) -> None:
    path = tmp_path / "c.toml"
    path.write_text(f'[[workloads]]\nname = "w"\ntask = "serve"\nmodel = "mistral-7b"\n{line}\n')
    with pytest.raises(ConfigError) as refused:
        load_settings(path)
    assert f"workloads.0.{key}: " in str(refused.value) and message in str(refused.value)
    base = ["estimate", "--gpu", "H100-SXM-80GB", "--model", "mistral-7b"]
    code, out, err = cli(capsys, *base, *options)
    assert code == 2 and not out and message in err and options[0] in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def _workloads_section() -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index("## Workloads")
    return text[start : text.index("\n## ", start)]


def test_the_configuration_doc_describes_every_workload_field(tmp_path: Path) -> None:
    rows = re.findall(r"^\| ([a-z_, ]+) \|", _workloads_section(), flags=re.M)
    documented = {name.strip() for row in rows for name in row.split(",")}
    fields = set(WorkloadProfile.model_fields) | set(ArchitectureNumbers.model_fields)
    assert fields - documented == set()
    assert documented - fields - {"key"} == set()  # no row for a field that is not there
    [example] = re.findall(r"```toml\n(.*?)```", _workloads_section(), flags=re.S)
    path = tmp_path / "example.toml"
    path.write_text(example)
    chat, pretrain = load_settings(path).workloads
    assert (chat.engine, pretrain.stack, pretrain.pipeline_parallel) == ("vllm", "megatron-core", 8)


def test_the_digest_and_cheaper_alerts_rank_a_workload_by_its_knobs(tmp_path: Path) -> None:
    """What the daemon does after a fetch: advice for `settings.workloads`, then the digest and
    the alert rules read it. The pipeline knobs reach both: PP 2 on 8 GPUs costs a bubble."""
    knobs, _ = KNOBS["pretrain"]
    path = tmp_path / "c.toml"
    path.write_text(
        f'[[workloads]]\nname = "piped"\ntask = "pretrain"\nmodel = "llama-3.1-8b"\n{knobs}'
        '[[workloads]]\nname = "flat"\ntask = "pretrain"\nmodel = "llama-3.1-8b"\n'
        'stack = "megatron-core"\nrecompute = "selective"\nseq_len = 2048\ntrain_tokens = 1e9\n'
        '[[alerts.rules]]\nkind = "cheaper"\nworkload = "piped"\n'
    )
    settings = load_settings(path)
    db = tmp_path / "d.duckdb"
    _offers(db, (8,))
    with store.writer(db) as con:
        store_advice(con, settings.workloads)
        best = {r["workload"]: r for r in digest.build(con, settings, utcnow()).workloads}
        alerts._prepare_offers(con, settings.alerts, utcnow(), None)  # as evaluate() does
        [observed] = alerts.observe(con, settings.alerts.rules[0], [])
    assert best["piped"]["cost"] > best["flat"]["cost"]  # the bubble of PP 2, 8 micro-batches
    assert best["piped"]["hours"] == pytest.approx(best["flat"]["hours"] * (1 + 1 / 16), rel=1e-3)
    assert observed.labels == {"workload": "piped"} and observed.value == best["piped"]["cost"]
