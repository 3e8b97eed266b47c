"""CLI commands of the sizing core and advisor: estimate, advise, tco, calibrate."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from priceadvisor import llm
from priceadvisor.catalog import gpu_catalog
from priceadvisor.cli.common import FormatOpt, UsageError, UserError, err, out, state
from priceadvisor.cli.output import Format, render, to_json
from priceadvisor.models import TRAINING_TASKS, Precision, Task
from priceadvisor.sizing import calibration
from priceadvisor.sizing.estimate import (
    ENGINES,
    MOE_OVERLAP,
    RECOMPUTE,
    STACK_ALIASES,
    STACKS,
    SizingError,
    Workload,
    estimate,
    pooled_key,
    software_key,
)
from priceadvisor.sizing.tco import rent_vs_buy
from priceadvisor.store import db as store
from priceadvisor.store import reads

commands = typer.Typer()


def _arch(
    model: str | None, config_json: Path | None, numbers: dict[str, Any], gated: bool
) -> llm.Architecture:
    given = [x for x in (model, config_json) if x] + ([numbers] if any(numbers.values()) else [])
    if len(given) != 1:
        raise UsageError(
            "give one of --model, --config-json or architecture numbers (--params-b …)"
        )
    try:
        if model:
            return llm.lookup(model)
        if config_json:
            return llm.from_hf_config(config_json)
        given_numbers = {k: v for k, v in numbers.items() if v}
        return llm.from_numbers("custom", gated=gated, **given_numbers)
    except llm.ModelError as exc:
        raise UsageError(str(exc)) from None


def _gpu(gpu: str) -> str:
    catalog = gpu_catalog()
    resolved = gpu if gpu in catalog else catalog.resolve(gpu)
    if resolved is None:
        raise UsageError(
            f'unknown GPU {gpu!r} (canonical ids: `priceadvisor sql "select gpu_model from gpus"`)'
        )
    return resolved


PRECISIONS = ", ".join(Precision.__args__)  # type: ignore[attr-defined]
TASKS = ", ".join(Task.__args__)  # type: ignore[attr-defined]
# Serving GPUs up to the largest training clusters (Llama 3: 16,384 H100; xAI-class 100k).
MAX_GPUS = 131072


@commands.command("estimate")
def estimate_command(
    gpu: Annotated[str, typer.Option(help="Canonical GPU id or alias, e.g. H100-SXM-80GB.")],
    task: Annotated[str, typer.Option(help=f"One of {TASKS}.")] = "serve",
    model: Annotated[
        str | None,
        typer.Option(
            help=f"Bundled model id or alias (e.g. llama-7b): {', '.join(sorted(llm.catalog()))}."
        ),
    ] = None,
    config_json: Annotated[
        Path | None, typer.Option(help="A local Hugging Face config.json (architecture keys).")
    ] = None,
    params_b: Annotated[float | None, typer.Option(help="Total parameters, billions.")] = None,
    active_params_b: Annotated[
        float | None, typer.Option(help="MoE: parameters active per token, billions.")
    ] = None,
    layers: Annotated[int | None, typer.Option(help="Transformer layers.")] = None,
    hidden: Annotated[int | None, typer.Option(help="Hidden size d_model.")] = None,
    heads: Annotated[int | None, typer.Option(help="Attention (query) heads.")] = None,
    kv_heads: Annotated[
        int | None, typer.Option(help="Key/value heads (GQA); default heads.")
    ] = None,
    head_dim: Annotated[
        int | None, typer.Option(help="Head dimension; default hidden/heads.")
    ] = None,
    ffn: Annotated[
        int | None, typer.Option(help="MLP intermediate size (per expert if MoE).")
    ] = None,
    vocab: Annotated[int | None, typer.Option(help="Vocabulary size.")] = None,
    gated: Annotated[
        bool,
        typer.Option(
            "--gated/--no-gated",
            help="Explicit numbers: gated MLP (SwiGLU, 3 matrices) or GELU (2).",
        ),
    ] = True,
    experts: Annotated[int | None, typer.Option(help="MoE: experts per layer.")] = None,
    experts_per_token: Annotated[
        int | None, typer.Option(help="MoE: experts routed per token.")
    ] = None,
    gpus: Annotated[int, typer.Option(min=1, max=MAX_GPUS, help="Number of GPUs.")] = 1,
    tensor_parallel: Annotated[
        int | None,
        typer.Option(
            "--tp",
            min=1,
            help="Serving: GPUs per pipeline stage; --gpus/(--tp x --pp) replicas. Default: "
            "the smallest power of two that holds the requested concurrency.",
        ),
    ] = None,
    precision: Annotated[
        str,
        typer.Option(
            help=f"One of {PRECISIONS}. fp8/fp4 store and compute at that format (fp4 = "
            "NVFP4/MXFP4 on B200/B300/GB200/GB300/MI355X); int8/int4 are weight-only "
            "(AWQ/GPTQ: compute and KV stay 16-bit)."
        ),
    ] = "bf16",
    kv_precision: Annotated[
        str | None, typer.Option(help="KV-cache format (default fp8 with fp8/fp4, else 16-bit).")
    ] = None,
    input_tokens: Annotated[int, typer.Option(min=1, help="Prompt tokens per request.")] = 1000,
    output_tokens: Annotated[int, typer.Option(min=1, help="Output tokens per request.")] = 250,
    concurrency: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Requests in flight per replica (serve, default 16) or the static batch "
            "(batch, default 256); never capped silently.",
        ),
    ] = None,
    train_tokens: Annotated[float | None, typer.Option(min=1, help="Training tokens.")] = None,
    seq_len: Annotated[int, typer.Option(min=1, help="Training sequence length.")] = 4096,
    stack: Annotated[
        str,
        typer.Option(
            help="Training software: unknown (default: pooled efficiency, wider range), "
            "megatron-core (NeMo/Megatron-Bridge), nemo-automodel, torchtitan, torchtune, "
            "llm-foundry, or megatron-2021 (A100 TP+PP with full recomputation). A stack "
            "gets its own fitted factor only where two or more publications measure it."
        ),
    ] = "unknown",
    engine: Annotated[
        str,
        typer.Option(
            help="Serving engine: unknown (default: pooled efficiency, wider range), trt-llm, "
            "vllm (its V1 engine, 0.8 and later), vllm-v0 (its V0 engine, earlier releases), "
            "sglang, lmdeploy or fastertransformer. An engine gets its own fitted factor only "
            "where two or more publications measure it (docs/accuracy.md). Kernel paths follow "
            "the engine: vllm/sglang quantise FP8/INT8/FP4 activations in a kernel of their "
            "own, and vllm-v0 reads an 8-bit KV cache once per query head on NVIDIA parts."
        ),
    ] = "unknown",
    expert_parallel: Annotated[
        int | None, typer.Option(min=1, help="MoE training: expert-parallel degree.")
    ] = None,
    recompute: Annotated[
        str | None,
        typer.Option(
            help="Training: activation recomputation — none, selective (attention core only: "
            "no extra GEMMs) or full (one more forward pass: 6ND → 8ND, LoRA 4ND → 6ND). "
            "Default: full for megatron-2021, else none."
        ),
    ] = None,
    moe_overlap: Annotated[
        str | None,
        typer.Option(
            help="MoE training: how the schedule hides the expert all-to-all — none (on the "
            "critical path), partial (35 % exposed; default) or full (DualPipe-style: hidden "
            "behind the compute, all but what exceeds it)."
        ),
    ] = None,
    pp: Annotated[
        int,
        typer.Option(
            min=1,
            help="Pipeline-parallel stages. Training: must divide --gpus, needs "
            "--micro-batches; the step pays the pipeline bubble, (PP-1)/(VP·micro-batches) "
            "of its work. Serving: replicas of --tp x --pp GPUs (must divide --gpus), the "
            "batch in PP micro-batches in flight; no TTFT speed-up.",
        ),
    ] = 1,
    vp: Annotated[
        int,
        typer.Option(
            min=1, help="Training: model chunks per GPU with --pp (interleaved 1F1B; default 1)."
        ),
    ] = 1,
    micro_batches: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Training with --pp: micro-batches per pipeline per optimizer step "
            "(global batch ÷ data-parallel degree ÷ micro-batch size).",
        ),
    ] = None,
    ttft_ms_max: Annotated[float | None, typer.Option(help="Serving: TTFT target, ms.")] = None,
    tpot_ms_max: Annotated[float | None, typer.Option(help="Serving: TPOT target, ms.")] = None,
    fmt: FormatOpt = Format.TABLE,
) -> None:
    """Memory, fit, throughput, time and binding constraint — no prices needed.

    The model is one of --model, --config-json or explicit numbers (--params-b alone, or
    --layers/--hidden/--heads/--ffn/--vocab, with --experts/--experts-per-token/
    --active-params-b for MoE). `uncertainty` is the calibrated relative range of the regime
    (docs/accuracy.md)."""
    _check_choice("task", task, Task.__args__)  # type: ignore[attr-defined]
    _check_choice("precision", precision, Precision.__args__)  # type: ignore[attr-defined]
    if kv_precision is not None:
        _check_choice("kv-precision", kv_precision, Precision.__args__)  # type: ignore[attr-defined]
    _check_choice("stack", stack, STACKS + tuple(STACK_ALIASES))
    _check_choice("engine", engine, ENGINES)
    _check_training_choice("recompute", recompute, RECOMPUTE, task)
    _check_training_choice("moe-overlap", moe_overlap, MOE_OVERLAP, task)
    numbers = {
        "params_b": params_b,
        "active_params_b": active_params_b,
        "layers": layers,
        "hidden": hidden,
        "heads": heads,
        "kv_heads": kv_heads,
        "head_dim": head_dim,
        "ffn": ffn,
        "vocab": vocab,
        "experts": experts,
        "experts_per_token": experts_per_token,
    }
    arch = _arch(model, config_json, numbers, gated)
    work = calibration.calibrated(
        Workload(
            task=task,  # type: ignore[arg-type]
            arch=arch,
            precision=precision,  # type: ignore[arg-type]
            kv_precision=kv_precision,  # type: ignore[arg-type]
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            concurrency=concurrency or (256 if task == "batch" else 16),
            train_tokens=train_tokens,
            seq_len=seq_len,
            stack=STACK_ALIASES.get(stack, stack),
            engine=engine,
            expert_parallel=expert_parallel,
            recompute=recompute,
            moe_overlap=moe_overlap,
            pipeline_parallel=pp,
            virtual_stages=vp,
            micro_batches=micro_batches,
            ttft_ms_max=ttft_ms_max,
            tpot_ms_max=tpot_ms_max,
        )
    )
    try:
        result = estimate(work, _gpu(gpu), gpus, tensor_parallel).as_dict()
    except SizingError as exc:
        raise typer.BadParameter(str(exc)) from None
    result = {
        "model": arch.name,
        "task": task,
        "precision": precision,
        "software": software_key(work) or "unknown",
        "params_b": round(arch.total_params / 1e9, 2),
        "active_params_b": round(arch.active_params / 1e9, 2),
    } | result
    _render_record(result, fmt, "Estimate")


def _check_training_choice(
    name: str, value: str | None, choices: tuple[str, ...], task: str
) -> None:
    """A training-only option: a known choice, and given for a training task."""
    if value is None:
        return
    _check_choice(name, value, choices)
    if task not in TRAINING_TASKS:
        raise typer.BadParameter(f"--{name} applies to training tasks, not {task!r}")


def _check_choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    """Bad choices are usage errors (exit 2), like typer's own option checks."""
    if value not in choices:
        raise typer.BadParameter(f"unknown {name} {value!r} (use {', '.join(choices)})")


def _render_record(record: dict[str, Any], fmt: Format, title: str) -> None:
    if fmt is Format.JSON:
        [obj] = json.loads(to_json(reads.Table(list(record), [tuple(record.values())])))
        out.out(json.dumps(obj, indent=2), highlight=False)
        return
    rows = [
        (
            k,
            ", ".join(f"{a}={b}" for a, b in v.items())
            if isinstance(v, dict)
            else "; ".join(v)
            if isinstance(v, list)
            else v,
        )
        for k, v in record.items()
    ]
    render(reads.Table(["field", "value"], rows), fmt, out, title=title)


ADVICE_COLUMNS = (
    "workload, rank, provider, region, country, instance_type, gpu_model, gpu_count, pricing, "
    "price_hour_usd, cost_usd, usd_per_mtok, monthly_usd, tokens_per_s, hours, binding, low, "
    "high"
)


@commands.command()
def advise(
    ctx: typer.Context,
    workload: Annotated[str | None, typer.Option(help="Only this workload.")] = None,
    top: Annotated[int, typer.Option(min=1, max=100, help="Offers per workload.")] = 5,
    include_flagged: Annotated[
        bool,
        typer.Option(
            "--include-flagged",
            help="Also rank offers the offer guard flagged, with the reason (not stored: "
            "alerts, the digest and the dashboard never see them; docs/offers-guard.md).",
        ),
    ] = False,
    fmt: FormatOpt = Format.TABLE,
) -> None:
    """Rank current offers for the configured workloads (cost per run or per 1M tokens)."""
    settings = state(ctx).settings
    if not settings.workloads:
        raise UsageError(
            "no workloads configured: add [[workloads]] to the config (see docs/configuration.md)"
        )
    names = [settings.workload(workload).name] if workload else [w.name for w in settings.workloads]
    from priceadvisor.sizing.advisor import store_advice  # here: numpy for advise only

    with store.writer(store.target(settings), settings.lock_timeout) as con:
        if include_flagged:
            table = _advice_with_flagged(con, settings, names, top)
            render(table, fmt, out, title="Advice, flagged offers included (USD)")
            return
        store_advice(con, settings.workloads)
        table = reads.fetch_table(
            con,
            f"SELECT {ADVICE_COLUMNS} FROM advice WHERE list_contains(?, workload) "
            "AND rank <= ? ORDER BY workload, rank",
            [names, top],
        )
    render(table, fmt, out, title="Advice (USD)")


def _advice_with_flagged(con: Any, settings: Any, names: list[str], top: int) -> reads.Table:
    """The ranking with flagged offers, straight from the advisor (never stored)."""
    from priceadvisor.sizing.advisor import rank

    columns, rows = rank(con, settings.workloads, include_flagged=True)
    wanted = [c.strip() for c in ADVICE_COLUMNS.split(",")] + ["flag_reason"]
    at = [columns.index(c) for c in wanted]
    chosen = [r for r in rows if r[0] in names and r[columns.index("rank")] <= top]
    return reads.Table(wanted, [tuple(r[i] for i in at) for r in chosen])


def _finite(value: float | None) -> float | None:
    """NaN passes every range check and inf most: refuse both."""
    if value is not None and not math.isfinite(value):
        raise typer.BadParameter(f"{value} is not a finite number")
    return value


def _positive(value: float | None) -> float | None:
    if _finite(value) is not None and value is not None and value <= 0:
        raise typer.BadParameter(f"{value} is not a positive number")
    return value


@commands.command()
def tco(
    ctx: typer.Context,
    gpu: Annotated[str | None, typer.Option(help="GPU model to compare.")] = None,
    workload: Annotated[str | None, typer.Option(help="Use this workload's best offer.")] = None,
    purchase_price: Annotated[
        float | None, typer.Option(help="USD per GPU.", callback=_positive)
    ] = None,
    power_w: Annotated[
        float | None, typer.Option(help="Watts per GPU (default: TDP).", callback=_positive)
    ] = None,
    pue: Annotated[float, typer.Option(min=1.0, max=10.0, callback=_positive)] = 1.3,
    electricity: Annotated[
        float, typer.Option(help="USD per kWh.", min=0.0, max=100.0, callback=_finite)
    ] = 0.15,
    utilisation: Annotated[float, typer.Option(min=0.01, max=1.0, callback=_positive)] = 0.6,
    years: Annotated[float, typer.Option(min=0.5, max=100.0, callback=_positive)] = 4.0,
    include_flagged: Annotated[
        bool,
        typer.Option(
            "--include-flagged",
            help="Rent at the cheapest offer even if the offer guard flagged it.",
        ),
    ] = False,
    fmt: FormatOpt = Format.TABLE,
) -> None:
    """Rent vs buy: break-even GPU-hours and utilisation against the cheapest suitable rental."""
    settings = state(ctx).settings
    if (gpu is None) == (workload is None):
        raise UsageError("give --gpu or --workload")
    if include_flagged and workload is not None:
        with store.writer(store.target(settings), settings.lock_timeout) as con:
            model, rent = _flagged_rental(con, workload, settings)
    else:
        with store.reader(store.target(settings), settings.lock_timeout) as con:
            model, rent = _rental(con, gpu, workload, settings, include_flagged)
    spec = gpu_catalog().gpus[model]
    price = purchase_price or spec.specs.get("approx_list_price_usd")
    watts = power_w or spec.specs.get("tdp_w")
    if not price or not watts:
        raise UsageError(
            f"no list price or TDP for {model} in the catalog: give --purchase-price and --power-w"
        )
    result = rent_vs_buy(
        model, rent, float(price), float(watts), pue, electricity, utilisation, years
    )
    _render_record(result.as_dict(), fmt, "Rent vs buy (per GPU)")


def _rental(
    con: Any, gpu: str | None, workload: str | None, settings: Any, include_flagged: bool = False
) -> tuple[str, float]:
    """The rental price: the cheapest on-demand offer of `gpu`, or the stored advice's best
    offer for `workload` (which never holds a flagged offer)."""
    if gpu is not None:
        model = _gpu(gpu)
        row = con.execute(
            "SELECT min(price_gpu_hour_usd) FROM offers WHERE gpu_model = ? "
            "AND pricing = 'on_demand' AND (flag IS NULL OR ?)",
            [model, include_flagged],
        ).fetchone()
        if not row or row[0] is None:
            raise UserError(f"no current on-demand offer for {model}")
        return model, float(row[0])
    name = settings.workload(workload).name
    row = con.execute(
        "SELECT gpu_model, price_hour_usd / gpu_count FROM advice WHERE workload = ? AND rank = 1",
        [name],
    ).fetchone()
    if not row:
        raise UserError(f"no advice for {name!r} yet: run `priceadvisor advise` first")
    return str(row[0]), float(row[1])


def _flagged_rental(con: Any, workload: str, settings: Any) -> tuple[str, float]:
    """The best offer for `workload` with flagged offers ranked too (not stored)."""
    from priceadvisor.sizing.advisor import rank

    name = settings.workload(workload).name
    columns, rows = rank(con, settings.workloads, keep=1, include_flagged=True)
    best = next((dict(zip(columns, r, strict=True)) for r in rows if r[0] == name), None)
    if best is None:
        raise UserError(f"no current offer suits {name!r}")
    return str(best["gpu_model"]), float(best["price_hour_usd"]) / float(best["gpu_count"])


@commands.command()
def calibrate(
    by_case: Annotated[bool, typer.Option("--cases", help="Also list every case.")] = False,
    fmt: FormatOpt = Format.TABLE,
) -> None:
    """Predicted vs published measurements, leave-one-source-out, with the error per regime.

    Every prediction runs the same estimate as `priceadvisor estimate`; a case's prediction
    uses factors fitted without any case of its publication."""
    rows = calibration.report()
    if by_case:
        render(_case_table(rows), fmt, out, title="Calibration cases (leave-one-source-out)")
    render(_summary_table(rows), fmt, out, title="Calibration per regime (leave-one-source-out)")
    factors = calibration.fitted_scales().factors
    fitted = ", ".join(f"{name} {value:.2f}" for name, value in factors.items())
    err.print(f"Factors fitted on every case (what estimate and advise use): {fitted}")


def _summary_table(rows: Sequence[calibration.Row]) -> reads.Table:
    """Per regime: held-out error, the share of cases inside the range `estimate` would state
    (from the other publications' errors, never below the published prior of the part and
    model) and inside the held-out p90 alone, and the regime's range (± %) as stated now."""
    stated = calibration.fitted_scales().uncertainty
    return reads.Table(
        [
            "regime",
            "cases",
            "sources",
            "median_abs_error_pct",
            "p90_abs_error_pct",
            "in_range_pct",
            "in_p90_pct",
            "stated_range_pct",
            "stated_range_unknown_pct",
        ],
        [
            (
                s.regime,
                s.cases,
                s.sources,
                round(100 * s.median, 1),
                round(100 * s.p90, 1),
                round(100 * s.in_range, 1),
                round(100 * s.in_p90, 1),
                _pct(stated.get(s.regime)),
                _pct(stated.get(pooled_key(s.regime))),
            )
            for s in calibration.summary(rows)
        ],
    )


def _pct(value: float | None) -> int | None:
    return None if value is None else round(100 * value)


def _case_table(rows: Sequence[calibration.Row]) -> reads.Table:
    """Every case; `software` is the engine/stack its source states, `pooled_error_pct` the
    error without an engine/stack factor (as for an unknown one)."""
    return reads.Table(
        [
            "case",
            "source",
            "software",
            "regime",
            "metric",
            "gpu",
            "gpus",
            "measured",
            "prior",
            "predicted",
            "error_pct",
            "pooled_error_pct",
        ],
        [
            (
                r.case.case_id,
                r.case.source_key,
                software_key(r.case.workload) or "unknown",
                r.case.regime,
                r.case.metric,
                r.case.gpu,
                r.case.gpus,
                r.case.measured,
                round(r.prior, 2),
                round(r.loo, 2),
                round(100 * r.error, 1),
                round(100 * r.pooled_error, 1),
            )
            for r in rows
        ],
    )
