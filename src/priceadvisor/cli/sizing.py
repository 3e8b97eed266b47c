"""CLI commands of the sizing core and advisor: estimate, advise, tco, calibrate."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import BaseModel, ValidationError

from priceadvisor import llm
from priceadvisor.cli import advice as advice_layout
from priceadvisor.cli import reports
from priceadvisor.cli.common import FormatOpt, UsageError, UserError, err, out, state
from priceadvisor.cli.output import Format, render, to_json
from priceadvisor.gpu_specs import gpu_catalog
from priceadvisor.records import utcnow
from priceadvisor.sizing import apicompare, calibration, rentals
from priceadvisor.sizing import tco as tco_model
from priceadvisor.sizing.alternatives import what_fits
from priceadvisor.sizing.estimate import SizingError, Workload, estimate, pooled_key, software_key
from priceadvisor.sizing.workloads import to_workload
from priceadvisor.store import freshness, reads
from priceadvisor.workload import ArchitectureNumbers, WorkloadSpec, describe, field_choices

commands = typer.Typer()


def _gpu(gpu: str) -> str:
    catalog = gpu_catalog()
    resolved = gpu if gpu in catalog else catalog.resolve(gpu)
    if resolved is None:
        raise UsageError(
            f'unknown GPU {gpu!r} (canonical ids: `priceadvisor sql "select gpu_model from gpus"`)'
        )
    return resolved


# Serving GPUs up to the largest training clusters (Llama 3: 16,384 H100; xAI-class 100k).
MAX_GPUS = 131072


def _help(name: str, model: type[BaseModel] = WorkloadSpec) -> str:
    """An option's help: the workload field's description and its choices (one declaration)."""
    field = model.model_fields[name]
    text = field.description or name
    choices = field_choices(field)
    if choices:
        text += f"; one of {', '.join(choices)}"
    return text[:1].upper() + text[1:] + "."


def _default(name: str) -> Any:
    return WorkloadSpec.model_fields[name].default


def _numbers(name: str) -> str:
    return _help(name, ArchitectureNumbers)


@commands.command("estimate")
def estimate_command(
    ctx: typer.Context,
    gpu: Annotated[str, typer.Option(help="Canonical GPU id or alias, e.g. H100-SXM-80GB.")],
    task: Annotated[str, typer.Option(help=_help("task"))] = "serve",
    model: Annotated[
        str | None,
        typer.Option(help=f"{_help('model')} Bundled: {', '.join(sorted(llm.catalog()))}."),
    ] = None,
    model_config_json: Annotated[
        Path | None,
        typer.Option("--config-json", "--model-config-json", help=_help("model_config_json")),
    ] = None,
    params_b: Annotated[float | None, typer.Option(help=_numbers("params_b"))] = None,
    active_params_b: Annotated[float | None, typer.Option(help=_numbers("active_params_b"))] = None,
    layers: Annotated[int | None, typer.Option(help=_numbers("layers"))] = None,
    hidden: Annotated[int | None, typer.Option(help=_numbers("hidden"))] = None,
    heads: Annotated[int | None, typer.Option(help=_numbers("heads"))] = None,
    kv_heads: Annotated[int | None, typer.Option(help=_numbers("kv_heads"))] = None,
    head_dim: Annotated[int | None, typer.Option(help=_numbers("head_dim"))] = None,
    ffn: Annotated[int | None, typer.Option(help=_numbers("ffn"))] = None,
    vocab: Annotated[int | None, typer.Option(help=_numbers("vocab"))] = None,
    tied: Annotated[
        bool | None, typer.Option("--tied/--no-tied", help=_numbers("tied"), show_default=False)
    ] = None,
    gated: Annotated[
        bool | None,
        typer.Option("--gated/--no-gated", help=_numbers("gated"), show_default=False),
    ] = None,
    experts: Annotated[int | None, typer.Option(help=_numbers("experts"))] = None,
    experts_per_token: Annotated[
        int | None, typer.Option(help=_numbers("experts_per_token"))
    ] = None,
    dense_layers: Annotated[int | None, typer.Option(help=_numbers("dense_layers"))] = None,
    gpus: Annotated[int, typer.Option(min=1, max=MAX_GPUS, help="Number of GPUs.")] = 1,
    tensor_parallel: Annotated[
        int | None,
        typer.Option(
            "--tp",
            "--tensor-parallel",
            help=_help("tensor_parallel") + " Serving runs --gpus/(--tp x --pp) replicas.",
        ),
    ] = None,
    precision: Annotated[str, typer.Option(help=_help("precision"))] = _default("precision"),
    kv_precision: Annotated[str | None, typer.Option(help=_help("kv_precision"))] = None,
    input_tokens: Annotated[int, typer.Option(help=_help("input_tokens"))] = _default(
        "input_tokens"
    ),
    output_tokens: Annotated[int, typer.Option(help=_help("output_tokens"))] = _default(
        "output_tokens"
    ),
    concurrency: Annotated[int | None, typer.Option(help=_help("concurrency"))] = None,
    train_tokens: Annotated[float | None, typer.Option(help=_help("train_tokens"))] = None,
    seq_len: Annotated[int, typer.Option(help=_help("seq_len"))] = _default("seq_len"),
    stack: Annotated[str, typer.Option(help=_help("stack"))] = _default("stack"),
    engine: Annotated[str, typer.Option(help=_help("engine"))] = _default("engine"),
    expert_parallel: Annotated[int | None, typer.Option(help=_help("expert_parallel"))] = None,
    recompute: Annotated[str | None, typer.Option(help=_help("recompute"))] = None,
    moe_overlap: Annotated[str | None, typer.Option(help=_help("moe_overlap"))] = None,
    pipeline_parallel: Annotated[
        int, typer.Option("--pp", "--pipeline-parallel", help=_help("pipeline_parallel"))
    ] = _default("pipeline_parallel"),
    virtual_stages: Annotated[
        int, typer.Option("--vp", "--virtual-stages", help=_help("virtual_stages"))
    ] = _default("virtual_stages"),
    micro_batches: Annotated[int | None, typer.Option(help=_help("micro_batches"))] = None,
    global_batch_tokens: Annotated[
        float, typer.Option(help=_help("global_batch_tokens"))
    ] = _default("global_batch_tokens"),
    goodput: Annotated[float | None, typer.Option(help=_help("goodput"))] = None,
    packed_document_tokens: Annotated[
        int | None, typer.Option(help=_help("packed_document_tokens"))
    ] = None,
    one_wave: Annotated[bool, typer.Option("--one-wave", help=_help("one_wave"))] = False,
    ttft_ms_max: Annotated[float | None, typer.Option(help=_help("ttft_ms_max"))] = None,
    tpot_ms_max: Annotated[float | None, typer.Option(help=_help("tpot_ms_max"))] = None,
    fmt: FormatOpt = Format.TABLE,
) -> None:
    """Memory, fit, throughput, time and binding constraint — no prices needed.

    The options are the fields of a workload in the config (docs/configuration.md),
    checked the same way. The model is one of --model, --config-json or explicit numbers
    (--params-b alone, or --layers/--hidden/--heads/--ffn/--vocab, with --experts/
    --experts-per-token/--active-params-b for MoE). `uncertainty` is the calibrated relative
    range of the regime (docs/accuracy.md)."""
    spec = workload_from_options(ctx)
    work = to_workload(spec)
    arch = work.arch
    try:
        sized = estimate(work, _gpu(gpu), gpus, spec.tensor_parallel)
    except SizingError as exc:
        raise typer.BadParameter(str(exc)) from None
    result = {
        "model": arch.name,
        "task": spec.task,
        "precision": spec.precision,
        "software": software_key(work) or "unknown",
        "params_b": round(arch.total_params / 1e9, 2),
        "active_params_b": round(arch.active_params / 1e9, 2),
    } | sized.as_dict()
    _render_estimate(result, work, tensor_parallel, fmt)


def _render_estimate(
    record: dict[str, Any], work: Workload, tensor_parallel: int | None, fmt: Format
) -> None:
    """The estimate with its likely ranges and, when it does not fit, what would."""
    alternatives = (
        []
        if record["fits"]
        else what_fits(work, record["gpu_model"], int(record["gpu_count"]), tensor_parallel)
    )
    record |= {
        "likely": reports.likely(record),
        "would_fit": [a.as_dict() for a in alternatives],
    }
    if fmt is Format.TABLE:
        out.print(reports.estimate_view(record, alternatives), soft_wrap=False)
    else:
        _render_record(record, fmt, "Estimate")


def workload_from_options(ctx: typer.Context) -> WorkloadSpec:
    """`estimate`'s options validated as a workload of the config is: the options named like
    the workload's fields, the architecture numbers among them nested as the config nests
    them; an error is the config's one-line message, on the option at fault."""
    numbers = {k: v for k, v in ctx.params.items() if k in ArchitectureNumbers.model_fields}
    given = {k: v for k, v in ctx.params.items() if k in WorkloadSpec.model_fields}
    if any(v is not None for v in numbers.values()):
        given["architecture"] = {k: v for k, v in numbers.items() if v is not None}
    try:
        return WorkloadSpec.model_validate({k: v for k, v in given.items() if v is not None})
    except ValidationError as exc:
        where, message = describe(exc)
        options = {p.name: p for p in ctx.command.params}
        option = options.get(str(where[-1])) if where else None
        if option is None:
            raise UsageError(message) from None
        raise typer.BadParameter(message, ctx=ctx, param=option) from None


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
            else "; ".join(x if isinstance(x, str) else json.dumps(x) for x in v)
            if isinstance(v, list)
            else v,
        )
        for k, v in record.items()
    ]
    render(reads.Table(["field", "value"], rows), fmt, out, title=title)


ADVICE_COLUMNS = (
    "workload, rank, provider, region, zone, country, instance_type, gpu_model, gpu_count, "
    "pricing, "
    "price_hour_usd, cost_usd, usd_per_mtok, monthly_usd, list_cost_usd, effective_cost_usd, "
    "list_rank, terms_applied, rank_reason, tokens_per_s, hours, binding, low, high, "
    "interruption_source, "
    "freshness, round(epoch(computed_at - fetched_at) / 3600, 1) AS age_hours"
)
ADVICE_NAMES = [c.split(" AS ")[-1].strip() for c in re.split(r",\s*(?![^()]*\))", ADVICE_COLUMNS)]
# Machine formats also get the rest of each row's provenance (too wide for a terminal table).
ADVICE_PROVENANCE = ", interruption_rate, price_origin, fetched_at, source_url, available"


@commands.command()
def advise(
    ctx: typer.Context,
    workload: Annotated[str | None, typer.Option(help="Only this workload.")] = None,
    top: Annotated[int, typer.Option(min=1, max=100, help="Offers per workload.")] = 5,
    columns: Annotated[
        str | None,
        typer.Option(help=f"Comma-separated columns: {', '.join(advice_layout.FIELDS)}."),
    ] = None,
    wide: Annotated[bool, typer.Option("--wide", help="Every column (a wide terminal).")] = False,
    include_stale: Annotated[
        bool, typer.Option(help="Rank prices older than 2 fetch intervals too (marked stale).")
    ] = False,
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
    shown = advice_layout.chosen(columns, wide)
    settings = state(ctx).settings
    if not settings.workloads:
        raise UsageError(
            "no workloads configured: add [[workloads]] to the config (see docs/configuration.md)"
        )
    names = [settings.workload(workload).name] if workload else [w.name for w in settings.workloads]
    from priceadvisor.sizing.advisor import Options, store_advice  # here: numpy for advise only

    # The table heads each workload with its task; machine formats keep the view's columns.
    wanted = ADVICE_COLUMNS + (", task" if fmt is Format.TABLE else "")
    with state(ctx).store.writer() as con:
        if include_flagged:
            table = _advice_with_flagged(con, settings, names, top, include_stale)
            render(table, fmt, out, title="Advice, flagged offers included (USD)")
            return
        store_advice(con, settings.workloads, options=Options.of(settings, include_stale))
        table = reads.fetch_table(
            con,
            f"SELECT {wanted}{'' if fmt is Format.TABLE else ADVICE_PROVENANCE} "
            "FROM advice WHERE list_contains(?, workload) "
            "AND rank <= ? ORDER BY workload, rank",
            [names, top],
        )
        best = apicompare.best_per_workload(con, settings.workloads, names)
        api_lines = {workload: c.sentence() for workload, c in best.items()}
        commitments, gaps = _commitments(con, settings, names, include_stale)
        if fmt is not Format.TABLE:
            table = _with_api_comparison(con, table, settings.workloads, top)
    if fmt is Format.TABLE:
        lines = _joined(
            advice_layout.rank_change_lines(table),
            api_lines,
            advice_layout.commitment_lines(table, commitments, gaps),
        )
        out.print(advice_layout.to_rich(table, shown, [], lines), soft_wrap=False)
    else:
        if fmt is Format.JSON:  # an object per row: the workload's, never part of its ranking
            table = _with_commitment(table, commitments)
        render(table, fmt, out, title="Advice (USD)")


def _with_api_comparison(con: Any, table: reads.Table, profiles: Any, top: int) -> reads.Table:
    """Each serve row with the cheapest API for its model beside it (api_* and break_even_*
    fields; empty where there is no API price for the model)."""
    by_row = {
        (p.name, rank): c.record()
        for p in profiles
        for rank, c in apicompare.compare(con, p, top).items()
    }
    names = list(apicompare.RECORD_FIELDS)
    at = (table.columns.index("workload"), table.columns.index("rank"))
    rows = [
        row + tuple(by_row.get((row[at[0]], row[at[1]]), {}).get(n) for n in names)
        for row in table.rows
    ]
    return reads.Table(table.columns + names, rows, table.total)


def _commitments(
    con: Any, settings: Any, names: list[str], include_stale: bool
) -> tuple[dict[str, dict[str, Any] | None], dict[str, dict[str, Any]]]:
    """Per workload: the cheapest commitment for its best offer's GPU model, at its size, its
    price as fresh as the ranking's (stale only with --include-stale); and per workload
    without one, why (only stale or week-old ones fit, or none)."""
    from priceadvisor.sizing import commitment
    from priceadvisor.store.freshness import configured_intervals

    best = reads.fetch_table(
        con,
        "SELECT workload, gpu_model, gpu_count, replicas, hours FROM advice "
        "WHERE list_contains(?, workload) AND rank = 1",
        [names],
    )
    rows = {r[0]: dict(zip(best.columns, r, strict=True)) for r in best.rows}
    profiles = [w for w in settings.workloads if w.name in names]
    intervals = configured_intervals(settings)
    found = commitment.for_workloads(con, profiles, rows, include_stale, intervals)
    return found, commitment.gaps(con, profiles, rows, found, intervals)


def _with_commitment(
    table: reads.Table, commitments: dict[str, dict[str, Any] | None]
) -> reads.Table:
    at = table.columns.index("workload")
    rows = [(*row, commitments.get(row[at])) for row in table.rows]
    return reads.Table([*table.columns, "commitment"], rows)


def _joined(*parts: dict[str, str]) -> dict[str, str]:
    """Per workload, the lines under its table, in the order given."""
    names = dict.fromkeys(name for part in parts for name in part)
    return {n: "\n".join(part[n] for part in parts if part.get(n)) for n in names}


def _advice_with_flagged(
    con: Any, settings: Any, names: list[str], top: int, include_stale: bool
) -> reads.Table:
    """The ranking with flagged offers, straight from the advisor (never stored); stale prices
    only with --include-stale, as in the stored ranking."""
    from priceadvisor.sizing.advisor import Options, rank

    options = Options.of(settings, include_stale, include_flagged=True)
    columns, rows = rank(con, settings.workloads, options=options)
    wanted = [c for c in ADVICE_NAMES if c in columns] + ["flag_reason"]
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
    workload: Annotated[
        str | None,
        typer.Option(
            help="Use this workload's GPU model, GPU count and utilisation; rent only offers "
            "its constraints allow."
        ),
    ] = None,
    purchase_price: Annotated[
        float | None, typer.Option(help="USD per GPU (default: catalog).", callback=_positive)
    ] = None,
    power_w: Annotated[
        float | None, typer.Option(help="Watts per GPU (default: TDP).", callback=_positive)
    ] = None,
    server_share: Annotated[
        float,
        typer.Option(
            help="Non-GPU server cost per GPU, share of its price.",
            min=0.0,
            max=10.0,
            callback=_finite,
        ),
    ] = tco_model.SERVER_SHARE,
    pue: Annotated[float, typer.Option(min=1.0, max=10.0, callback=_positive)] = tco_model.PUE,
    electricity: Annotated[
        float, typer.Option(help="USD per kWh.", min=0.0, max=100.0, callback=_finite)
    ] = tco_model.ELECTRICITY_USD_KWH,
    colocation: Annotated[
        float,
        typer.Option(help="USD per kW-month of IT load.", min=0.0, max=100000.0, callback=_finite),
    ] = tco_model.COLOCATION_USD_KW_MONTH,
    utilisation: Annotated[
        float | None,
        typer.Option(
            help="Share of hours used (default: the workload's, else 0.6).",
            min=0.01,
            max=1.0,
            callback=_positive,
        ),
    ] = None,
    years: Annotated[float, typer.Option(min=0.5, max=100.0, callback=_positive)] = tco_model.YEARS,
    include_flagged: Annotated[
        bool,
        typer.Option(
            "--include-flagged",
            help="Rent at the cheapest offer even if the offer guard flagged it.",
        ),
    ] = False,
    include_stale: Annotated[
        bool,
        typer.Option(help="Rent at prices older than 2 fetch intervals too (marked stale)."),
    ] = False,
    fmt: FormatOpt = Format.TABLE,
) -> None:
    """Rent vs buy: break-even GPU-hours and utilisation of owning against the cheapest current
    on-demand offer, the commitment cheapest over the years (paid whether used or not) and spot
    with its restart overhead, each offer named; prices as fresh as `advise`'s. With --workload
    only offers the workload's constraints allow (where it may run, max_gpus, require_available,
    sla's hosts). Purchase price and power default to the GPU catalog's list price and TDP."""
    settings = state(ctx).settings
    if (gpu is None) == (workload is None):
        raise UsageError("give --gpu or --workload")
    with state(ctx).store.reader() as con:
        use = _workload_use(con, settings, workload, years) if workload else None
        model = use["gpu_model"] if use else _gpu(str(gpu))
        now, intervals = utcnow(), freshness.configured_intervals(settings)
        found = rentals.cheapest(
            con,
            model,
            years,
            include_stale=include_stale,
            include_flagged=include_flagged,
            intervals=intervals,
            now=now,
            profile=settings.workload(workload) if workload else None,
        )
        gaps = {
            kind: _OUTSIDE
            if kind in found.excluded
            else rentals.gap(
                con, model, kind, include_flagged=include_flagged, intervals=intervals, now=now
            )
            for kind, offer in found.offers.items()
            if offer is None
        }
    own, sources = _ownership(
        model, purchase_price, power_w, server_share, pue, electricity, colocation, years
    )
    share = utilisation or (use["utilisation"] if use else tco_model.UTILISATION)
    result = _tco_record(model, own, share, found, use, gaps) | sources
    if fmt is Format.TABLE:
        out.print(reports.tco_view(result), soft_wrap=False)
    else:
        _render_record(result, fmt, "Rent vs buy (per GPU)")


def _ownership(
    model: str, price: float | None, watts: float | None, *rest: float
) -> tuple[tco_model.Ownership, dict[str, str]]:
    """Owning one GPU: the price and power given, else the catalog's (and where each came from);
    `rest` is server share, PUE, electricity, colocation and years."""
    specs = gpu_catalog().gpus[model].specs
    purchase, purchase_source = _catalog_value(price, specs, "approx_list_price_usd")
    power, power_source = _catalog_value(watts, specs, "tdp_w")
    _require(model, purchase, power, specs)
    sources = {"purchase_source": _price_source(purchase_source, specs)}
    return tco_model.Ownership(purchase, power / 1000, *rest), sources | {
        "power_source": power_source
    }


def _tco_record(
    model: str,
    own: tco_model.Ownership,
    share: float,
    found: rentals.Rentals,
    use: dict[str, Any] | None,
    gaps: dict[str, dict[str, Any]],
) -> dict[str, Any]:
    """The record `tco` prints: owning's costs and each break-even with the offer it names, or
    why none is compared: none within the workload's constraints, or (`gaps`: rentals.gap per
    kind without an offer) none stored, only stale ones, or none from the last week."""
    offers = found.offers
    rents = {k: (o["usd_per_gpu_hour"] if o else None) for k, o in offers.items()}
    held = offers["commitment"]
    commitment = rentals.held(held) if held else None
    record = tco_model.rent_vs_buy(model, own, share, rents, commitment).as_dict()
    record |= {"gpus": use["gpus"] if use else 1, "workload": use["workload"] if use else None}
    for even in record["break_evens"]:
        even["offer"] = offers[even["against"]]
        even.update(gaps.get(even["against"], {"missing": None, "newest_stored": None}))
        even["summary"] = reports.break_even(even, record)
        if even["against"] in found.excluded:
            even["summary"] = f"{_NONE_ALLOWED[even['against']]} within the workload's constraints"
    return record


# A rental whose offers a workload's constraints all remove (reports.NOTHING: none stored).
_OUTSIDE = {"missing": "outside_workload_constraints", "newest_stored": None}
_NONE_ALLOWED = {
    "on_demand": "no current on-demand offer",
    "commitment": "no commitment price",
    "spot": "no current spot offer",
}


def _catalog_value(given: float | None, specs: dict[str, Any], key: str) -> tuple[float, str]:
    """The value given on the command line, else the catalog's (0: the catalog has none)."""
    if given is not None:
        return given, "given"
    value = specs.get(key)
    return (float(value), "catalog") if value else (0.0, "missing")


def _price_source(source: str, specs: dict[str, Any]) -> str:
    """Where the purchase price comes from, with the catalog's kind, year and page."""
    if source != "catalog":
        return source
    kind, year, page = (
        specs.get(k) for k in ("list_price_kind", "list_price_year", "list_price_source")
    )
    return f"catalog: {kind or 'list price'}, {year or 'year unknown'}" + (
        f", {page}" if page else ""
    )


def _require(model: str, price: float, watts: float, specs: dict[str, Any]) -> None:
    missing = [
        f"no {what} for {model} in the GPU catalog (providers/gpus.toml{why}): give {option}"
        for what, option, value, why in (
            ("list price", "--purchase-price USD", price, _no_price(specs)),
            ("TDP", "--power-w WATTS", watts, ""),
        )
        if not value
    ]
    if missing:
        raise UsageError("; ".join(missing))


def _no_price(specs: dict[str, Any]) -> str:
    return ", no public price found" if specs.get("list_price_kind") == "no public price" else ""


def _workload_use(con: Any, settings: Any, workload: str, years: float) -> dict[str, Any]:
    """The workload's GPU model and count (its best offer, times its replicas) and utilisation:
    serving runs its replicas always on (100 %); a training run uses its GPUs for its wall
    hours once in the years owned."""
    name = settings.workload(workload).name
    row = con.execute(
        "SELECT gpu_model, gpu_count, coalesce(replicas, 1), hours FROM advice "
        "WHERE workload = ? AND rank = 1",
        [name],
    ).fetchone()
    if not row:
        raise UserError(f"no advice for {name!r} yet: run `priceadvisor advise` first")
    model, count, replicas, hours = row
    share = 1.0 if hours is None else min(1.0, max(hours / (years * 8760), 0.01))
    return {"workload": name, "gpu_model": model, "gpus": count * replicas, "utilisation": share}


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
