"""CLI commands of the sizing core and advisor: estimate, advise, tco, calibrate."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any

import typer

from priceadvisor import llm
from priceadvisor.catalog import gpu_catalog
from priceadvisor.cli.common import FormatOpt, UsageError, UserError, out, state
from priceadvisor.cli.output import Format, render, to_json
from priceadvisor.models import Precision, Task
from priceadvisor.sizing import calibration
from priceadvisor.sizing.advisor import store_advice
from priceadvisor.sizing.estimate import Workload, estimate
from priceadvisor.sizing.tco import rent_vs_buy
from priceadvisor.store import db as store
from priceadvisor.store import reads

commands = typer.Typer()


def _arch(model: str | None, config_json: Path | None, numbers: dict[str, Any]) -> llm.Architecture:
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
        return llm.from_numbers("custom", **{k: v for k, v in numbers.items() if v})
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


@commands.command("estimate")
def estimate_command(
    gpu: Annotated[str, typer.Option(help="Canonical GPU id, e.g. H100-SXM-80GB.")],
    task: Annotated[str, typer.Option(help="pretrain|finetune|lora|qlora|serve|batch")] = "serve",
    model: Annotated[
        str | None, typer.Option(help=f"Bundled model: {', '.join(sorted(llm.catalog()))}.")
    ] = None,
    config_json: Annotated[Path | None, typer.Option(help="A local HF config.json.")] = None,
    params_b: Annotated[float | None, typer.Option(help="Parameters, billions.")] = None,
    layers: Annotated[int | None, typer.Option()] = None,
    hidden: Annotated[int | None, typer.Option()] = None,
    heads: Annotated[int | None, typer.Option()] = None,
    kv_heads: Annotated[int | None, typer.Option()] = None,
    ffn: Annotated[int | None, typer.Option()] = None,
    vocab: Annotated[int | None, typer.Option()] = None,
    gpus: Annotated[int, typer.Option(min=1, max=1024, help="Number of GPUs.")] = 1,
    precision: Annotated[str, typer.Option(help="bf16|fp16|fp8|int8|int4")] = "bf16",
    input_tokens: Annotated[int, typer.Option(min=1)] = 1000,
    output_tokens: Annotated[int, typer.Option(min=1)] = 250,
    concurrency: Annotated[int, typer.Option(min=1)] = 16,
    train_tokens: Annotated[float | None, typer.Option(min=1)] = None,
    seq_len: Annotated[int, typer.Option(min=1)] = 4096,
    ttft_ms_max: Annotated[float | None, typer.Option()] = None,
    tpot_ms_max: Annotated[float | None, typer.Option()] = None,
    fmt: FormatOpt = Format.TABLE,
) -> None:
    """Memory, fit, throughput, time and binding constraint — no prices needed."""
    if task not in Task.__args__:  # type: ignore[attr-defined]
        raise UsageError(f"unknown task {task!r} (use {', '.join(Task.__args__)})")  # type: ignore[attr-defined]
    if precision not in Precision.__args__:  # type: ignore[attr-defined]
        raise UsageError(f"unknown precision {precision!r} (use bf16, fp16, fp8, int8, int4)")
    numbers = {
        "params_b": params_b,
        "layers": layers,
        "hidden": hidden,
        "heads": heads,
        "kv_heads": kv_heads,
        "ffn": ffn,
        "vocab": vocab,
    }
    arch = _arch(model, config_json, numbers)
    work = calibration.calibrated(
        Workload(
            task=task,  # type: ignore[arg-type]
            arch=arch,
            precision=precision,  # type: ignore[arg-type]
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            concurrency=concurrency,
            train_tokens=train_tokens,
            seq_len=seq_len,
            ttft_ms_max=ttft_ms_max,
            tpot_ms_max=tpot_ms_max,
        )
    )
    result = estimate(work, _gpu(gpu), gpus).as_dict()
    result = {
        "model": arch.name,
        "task": task,
        "precision": precision,
        "params_b": round(arch.total_params / 1e9, 2),
        "active_params_b": round(arch.active_params / 1e9, 2),
    } | result
    _render_record(result, fmt, "Estimate")


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
    fmt: FormatOpt = Format.TABLE,
) -> None:
    """Rank current offers for the configured workloads (cost per run or per 1M tokens)."""
    settings = state(ctx).settings
    if not settings.workloads:
        raise UsageError(
            "no workloads configured: add [[workloads]] to the config (see docs/configuration.md)"
        )
    names = [settings.workload(workload).name] if workload else [w.name for w in settings.workloads]
    with store.writer(settings.db_path(), settings.lock_timeout) as con:
        store_advice(con, settings.workloads)
        table = reads.fetch_table(
            con,
            f"SELECT {ADVICE_COLUMNS} FROM advice WHERE list_contains(?, workload) "
            "AND rank <= ? ORDER BY workload, rank",
            [names, top],
        )
    render(table, fmt, out, title="Advice (USD)")


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
    fmt: FormatOpt = Format.TABLE,
) -> None:
    """Rent vs buy: break-even GPU-hours and utilisation against the cheapest suitable rental."""
    settings = state(ctx).settings
    if (gpu is None) == (workload is None):
        raise UsageError("give --gpu or --workload")
    with store.reader(settings.db_path(), settings.lock_timeout) as con:
        model, rent = _rental(con, gpu, workload, settings)
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


def _rental(con: Any, gpu: str | None, workload: str | None, settings: Any) -> tuple[str, float]:
    if gpu is not None:
        model = _gpu(gpu)
        row = con.execute(
            "SELECT min(price_gpu_hour_usd) FROM offers WHERE gpu_model = ? "
            "AND pricing = 'on_demand'",
            [model],
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


@commands.command()
def calibrate(fmt: FormatOpt = Format.TABLE) -> None:
    """Predicted vs published measurements, leave-one-out, with the median absolute error."""
    rows = calibration.report()
    table = reads.Table(
        ["case", "metric", "gpu", "gpus", "measured", "prior", "predicted", "error_pct"],
        [
            (
                r.case.case_id,
                r.case.metric,
                r.case.gpu,
                r.case.gpus,
                r.case.measured,
                round(r.prior, 2),
                round(r.loo, 2),
                round(100 * r.error, 1),
            )
            for r in rows
        ],
    )
    render(table, fmt, out, title="Calibration (leave-one-out)")
    if fmt is Format.TABLE:
        out.print(
            f"median absolute error {100 * calibration.median_abs_error(rows):.1f} % "
            f"over {len(rows)} cases"
        )
