"""Advice's serving figures for all the offer shapes of one workload at once.

Advice sizes a serving workload whose layout is left to sizing on every (GPU model, count) its
offers have, from the fastest layout's figures (`estimate.fastest_figures`). That search sizes
the layouts in the order of an upper bound on their tokens/s (`estimate.replica_speed_bound`)
and stops when the next bound is below the fastest found; most layouts are never sized in
full, but each one's bound was computed in Python, through the sizing pass's memo: ~7,000
bounds, a third of the search's time, in a first ranking of 50 workloads.

Here the bounds of every layout on every GPU model of the shapes are computed together, as
numpy arrays (`speed_bounds`), from the same per-layout and per-GPU figures, with the same
operations in the same order as `replica_speed_bound` (IEEE-754 gives each elementwise
operation the same result in numpy as in Python), so the search sizes the same layouts and
chooses the same one; tests/sizing/test_layout_bounds.py compares the two bound for bound. The
search itself (`estimate.fastest_of_bounded`) and the chosen layout's figures are the
estimate's own. Kept out of `estimate.py`, which the CLI's `estimate` imports without numpy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from priceadvisor.gpu_specs import GpuSpec, gpu_catalog
from priceadvisor.llm import GIB
from priceadvisor.sizing.estimate import (
    FREE_MEMORY_KV_ENGINES,
    SERVING_MEMORY_UTILISATION,
    SPEED_BOUND_MARGIN,
    BoundedLayout,
    ServingFigures,
    SizingError,
    Workload,
    check_pipeline,
    check_sizable,
    chosen_figures,
    decode_rates,
    engine_cap,
    fastest_of_bounded,
    kv_per_token,
    kv_tokens_per_request,
    layouts_in_pass,
    reduce_latency,
    replicas_of,
    routing_grows_concavely,
    serving_parts,
    usable_gib,
    weights_read,
    with_stages,
)
from priceadvisor.sizing.memo import sizing_pass

Floats = npt.NDArray[np.float64]


def fastest_figures_of(
    work: Workload, shapes: Sequence[tuple[str, int]]
) -> dict[tuple[str, int], ServingFigures | None]:
    """`estimate.fastest_figures(work, model, count)` of each (GPU model, whole GPU count)
    shape, in one sizing pass. A shape `fastest_figures` refuses (SizingError: a model that
    cannot be sized, a count the pipeline stages do not divide) is left out."""
    catalog = gpu_catalog().gpus
    with sizing_pass():
        models = {model: catalog[model] for model, _ in shapes}
        gpus = {model: gpu for model, gpu in models.items() if _sizable(gpu)}
        counts = {count for _, count in shapes if _splits(work, count)}
        layouts = sorted({layout for count in counts for layout in layouts_in_pass(work, count)})
        bounds = speed_bounds(work, list(gpus.values()), layouts)
        candidates = {count: _candidates(work, count, bounds.column) for count in counts}
        found: dict[tuple[str, int], ServingFigures | None] = {}
        for model, count in shapes:
            if model in gpus and count in counts:
                gpu = gpus[model]
                bounded = _bounded(bounds.rows[model], candidates[count])
                best = fastest_of_bounded(work, gpu, count, bounded)
                figures = None if best is None else chosen_figures(best.work, gpu, count, best.tp)
                found[(model, count)] = figures
        return found


def _sizable(gpu: GpuSpec) -> bool:
    try:
        check_sizable(gpu)
    except SizingError:
        return False
    return True


def _splits(work: Workload, gpus: int) -> bool:
    try:
        check_pipeline(work, gpus)
    except SizingError:
        return False
    return True


# A layout of a GPU count for the search: its bounds' column, replicas, index, TP and PP.
Candidate = tuple[int, int, int, int, int]


def _candidates(work: Workload, gpus: int, column: dict[tuple[int, int], int]) -> list[Candidate]:
    """The layouts of `gpus` GPUs (`serving_layouts`' order) with what `_bounded` reads."""
    return [
        (column[(tp, pp)], replicas_of(gpus, tp, pp), index, tp, pp)
        for index, (tp, pp) in enumerate(layouts_in_pass(work, gpus))
    ]


def _bounded(row: list[float], candidates: list[Candidate]) -> list[BoundedLayout]:
    """`estimate.fastest_fitting`'s bounded layouts, sorted, from one GPU model's bounds (NaN:
    a replica holds no request)."""
    bounded = [
        (-row[column] * replicas, index, tp, pp)
        for column, replicas, index, tp, pp in candidates
        if not math.isnan(row[column])
    ]
    bounded.sort()
    return bounded


class SpeedBounds(NamedTuple):
    """`replica_speed_bound` of each layout (a column) on each GPU model (a row, by id), NaN
    where a replica holds no request."""

    column: dict[tuple[int, int], int]
    rows: dict[str, list[float]]


class _Layouts(NamedTuple):
    """What a layout's bound reads that is the same on every GPU model, one entry per layout."""

    memory_gib: Floats  # the weights, activation peak and runtime per GPU (`serving_parts`)
    kv_per_token: Floats
    weights_per_gpu: Floats  # the weights one request routes to, over TP GPUs
    kv_per_request: Floats  # KV bytes of one request at the mean context
    flops_per_request: Floats  # 2·N_active per decode token and its share of the prompt
    flops_per_decode_token: Floats  # 2·N_active
    gpus: Floats  # TP x PP


class _Gpus(NamedTuple):
    """What a layout's bound reads of each GPU model (`decode_rates`: the same at every
    pipeline depth, which it does not read), one entry per model; the all-reduces' latency
    per (model, layout)."""

    usable_gib: Floats  # what `serving_memory` takes the layout's memory from
    cap: Floats  # the engine's default batch cap (inf: none)
    bytes_per_s: Floats
    launch_seconds: Floats
    peak_flops: Floats
    mfu: Floats
    reduce_latency: Floats


def speed_bounds(
    work: Workload, gpus: Sequence[GpuSpec], layouts: Sequence[tuple[int, int]]
) -> SpeedBounds:
    """`estimate.replica_speed_bound(work, gpu, tp, pp)` of every layout on every GPU model,
    computed as arrays: each step is the scalar one's, in its order."""
    per_layout, per_gpu = _layout_terms(work, layouts), _gpu_terms(work, gpus, layouts)
    free = _free_gib(work, per_gpu.usable_gib[:, None], per_layout.memory_gib[None, :])
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        capacity = np.maximum(0.0, np.trunc(free * GIB / per_layout.kv_per_token))
        whole = work.input_tokens + work.output_tokens
        admitted = np.where(
            capacity < whole, 0.0, np.floor_divide(capacity, kv_tokens_per_request(work))
        )
        holds = (free > 0) & (admitted >= 1)
        batch = _batch(work, per_gpu, admitted)
        weights = _routed_weights(work, layouts, batch, per_layout)
        bound = _bound(work, layouts, per_layout, per_gpu, (batch, weights))
        # A bound that is not a number would stop no search: size such a layout first.
        bound = np.where(holds, np.where(np.isnan(bound), math.inf, bound), math.nan)
    rows = dict(zip((gpu.id for gpu in gpus), bound.tolist(), strict=True))
    return SpeedBounds({layout: index for index, layout in enumerate(layouts)}, rows)


def _batch(work: Workload, per_gpu: _Gpus, admitted: Floats) -> Floats:
    """The batch asked of a replica within what its KV cache admits (at least one)."""
    if work.concurrency:
        requested: Floats | float = float(work.concurrency)
    else:  # `engine_batch`
        requested = np.maximum(1.0, np.minimum(admitted, per_gpu.cap[:, None]))
    return np.maximum(1.0, np.minimum(requested, admitted))


def _routed_weights(
    work: Workload, layouts: Sequence[tuple[int, int]], batch: Floats, per_layout: _Layouts
) -> Floats:
    """The weights over TP GPUs that a step's micro-batch routes to (`routed_batch`): one
    request's on every GPU model unless a MoE model's batch is the bounded one; then
    `weights_read` of each distinct micro-batch of each layout (its powers are Python's)."""
    if not work.arch.is_moe or work.tpot_ms_max is not None:
        return per_layout.weights_per_gpu
    weights = np.empty_like(batch)
    for column, (tp, pp) in enumerate(layouts):
        staged = with_stages(work, pp)
        micro, where = np.unique(np.ceil(batch[:, column] / pp), return_inverse=True)
        routed = [weights_read(staged, int(m)) / tp for m in micro]  # m: `routed_batch`
        weights[:, column] = np.array(routed, dtype=np.float64)[where]
    return weights


def _bound(
    work: Workload,
    layouts: Sequence[tuple[int, int]],
    per_layout: _Layouts,
    per_gpu: _Gpus,
    batch_and_weights: tuple[Floats, Floats],
) -> Floats:
    """`replica_speed_bound`'s steps from its batch on (errors ignored by the caller)."""
    batch, weights = batch_and_weights
    fixed = _fixed_seconds(per_gpu, weights)
    kv_read = per_layout.kv_per_request / per_gpu.bytes_per_s[:, None]
    flops_per_s = per_layout.gpus * per_gpu.peak_flops[:, None] * per_gpu.mfu[:, None]
    if work.tpot_ms_max is not None:
        decode = kv_read + per_layout.flops_per_decode_token / flops_per_s
        cap = (work.tpot_ms_max / 1000 * SPEED_BOUND_MARGIN - fixed) / decode  # `tpot_batch_cap`
        batch = np.fmax(1.0, np.fmin(batch, cap))  # fmin/fmax: as Python's min/max with NaN
        if routing_grows_concavely(work):
            fixed = _fixed_seconds(per_gpu, _weights_at(work, layouts, batch))
    per_request = kv_read + per_layout.flops_per_request / flops_per_s
    bound: Floats = batch / (fixed + per_request * batch) * SPEED_BOUND_MARGIN
    return bound


def _fixed_seconds(per_gpu: _Gpus, weights: Floats) -> Floats:
    """The bound's step terms that do not grow with the batch: the routed weights over TP GPUs
    read at the decode bandwidth, the layers' launches, the all-reduces' latency."""
    fixed = weights / per_gpu.bytes_per_s[:, None] + per_gpu.launch_seconds[:, None]
    return fixed + per_gpu.reduce_latency


def _weights_at(work: Workload, layouts: Sequence[tuple[int, int]], batch: Floats) -> Floats:
    """`weights_read` of each element's real micro-batch batch/PP over TP GPUs (the bound
    under a TPOT target on a concavely routed MoE model), each computed in Python."""
    weights = np.empty_like(batch)
    for column, (tp, pp) in enumerate(layouts):
        staged = with_stages(work, pp)
        micro = (batch[:, column] / pp).tolist()
        weights[:, column] = [weights_read(staged, m) / tp for m in micro]
    return weights


def _free_gib(work: Workload, usable: Floats, memory: Floats) -> Floats:
    """`serving_memory`'s KV room, per GPU in GiB."""
    if work.engine in FREE_MEMORY_KV_ENGINES:
        return (usable - memory) * SERVING_MEMORY_UTILISATION
    return usable - memory


def _layout_terms(work: Workload, layouts: Sequence[tuple[int, int]]) -> _Layouts:
    rows = []
    for tp, pp in layouts:
        staged = with_stages(work, pp)
        kv = kv_per_token(staged, tp)
        context = staged.input_tokens + staged.output_tokens / 2
        tokens = 1 + staged.input_tokens / max(1, staged.output_tokens)  # per decode token
        rows.append(
            (
                sum(serving_parts(staged, tp).values()),
                kv,
                weights_read(staged, 1) / tp,
                context * kv,
                2 * staged.arch.active_params * tokens,
                2 * staged.arch.active_params,
                tp * pp,
            )
        )
    columns = zip(*rows, strict=True) if rows else ([] for _ in _Layouts._fields)
    return _Layouts(*(np.array(column, dtype=np.float64) for column in columns))


def _gpu_terms(
    work: Workload, gpus: Sequence[GpuSpec], layouts: Sequence[tuple[int, int]]
) -> _Gpus:
    usable = SERVING_MEMORY_UTILISATION
    if work.engine in FREE_MEMORY_KV_ENGINES:
        usable = 1.0
    rows = []
    for gpu in gpus:
        rates = decode_rates(work, gpu)
        cap = engine_cap(work, gpu)
        rows.append(
            (
                usable_gib(gpu, usable),
                math.inf if cap is None else cap,
                rates.bytes_per_s,
                rates.launch_seconds,
                rates.peak_flops,
                rates.mfu,
            )
        )
    columns = zip(*rows, strict=True) if rows else ([] for _ in range(6))
    usable_col, caps, bytes_per_s, launch, peak, mfu = (
        np.array(column, dtype=np.float64) for column in columns
    )
    latency = _reduce_latency(work, gpus, layouts)
    return _Gpus(usable_col, caps, bytes_per_s, launch, peak, mfu, latency)


def _reduce_latency(
    work: Workload, gpus: Sequence[GpuSpec], layouts: Sequence[tuple[int, int]]
) -> Floats:
    """Per (GPU model, layout): `reduce_latency`, asked once per model and TP."""
    degrees = sorted({tp for tp, _ in layouts})
    found = [reduce_latency(work, gpu, tp) for gpu in gpus for tp in degrees]
    table = np.array(found, dtype=np.float64).reshape(len(gpus), len(degrees))
    return table[:, [degrees.index(tp) for tp, _ in layouts]]
