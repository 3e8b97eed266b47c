"""Calibration of the sizing priors on published measurements (sizing-data/calibration.toml).

Each regime (estimate.REGIMES: dense / 3D-parallel / MoE / LoRA training, end-to-end goodput,
prefill, decode, saturated serving) has one factor on its efficiency prior, fitted as the
median of measured ÷ predicted over the regime's cases — only when at least three cases remain,
never on a single row. On top of them each serving engine / training stack a case states has
one factor, fitted only on the cases of two or more publications of that software and shrunk
towards the pooled value (factor 1) by publication count. The report predicts every case
**leave-one-source-out**: all the cases of the case's publication are held out of every fit
its prediction uses. The stated uncertainty of a regime is the 90th percentile of its
held-out errors. Predictions run `estimate.estimate`, the same code path as the CLI.
"""

from __future__ import annotations

import dataclasses
import statistics
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from priceadvisor import llm
from priceadvisor.gpu_specs import gpu_catalog
from priceadvisor.resources import sizing_data_dir
from priceadvisor.sizing import estimate as sizing
from priceadvisor.sizing import scalecache

TIME_METRICS = ("tpot_ms", "ttft_ms", "e2e_latency_s", "gpu_hours_total")
# Fitting order: a regime's factor is fitted with the factors before it already applied.
FIT_ORDER = (
    "prefill",
    "decode",
    "serve-throughput",
    sizing.ENGINE_FACTOR,
    *sizing.TRAIN_REGIMES,
    "train-e2e",
)
MIN_UNCERTAINTY = 0.10
# A factor is a median: fitted on fewer than three cases it would be one case (or the mean of
# two), which lets one outlier move a whole regime.
MIN_FIT_CASES = 3
# An engine/stack factor needs rows from at least two publications (one publication's rows share
# its settings and its errors), and is shrunk towards the pooled value 1 in log space with weight
# n / (n + SHRINK_PUBLICATIONS) for n publications: halfway with two, 3/4 with six.
MIN_SOFTWARE_PUBLICATIONS = 2
SHRINK_PUBLICATIONS = 2

# A case states its workload in the sizing input's own field names (task and model apart).
CASE_KEYS = tuple(
    f.name for f in dataclasses.fields(sizing.Workload) if f.name not in {"task", "arch", "scales"}
)


@dataclass(frozen=True, slots=True)
class Case:
    case_id: str
    source: str
    source_key: str
    metric: str
    measured: float
    workload: sizing.Workload
    gpu: str
    gpus: int
    tensor_parallel: int | None = None
    check_only: bool = False  # the source leaves settings out: reported, never fitted on

    @property
    def regime(self) -> str:
        """The regime whose factor this measurement calibrates."""
        if self.metric == "tokens_per_s_per_gpu":
            return sizing.training_regime(self.workload)
        return {
            "gpu_hours_total": "train-e2e",
            "ttft_ms": "prefill",
            "tokens_per_s_total": "serve-throughput",
            "kv_cache_tokens": "kv",
        }.get(
            self.metric, "decode" if (self.workload.concurrency or 5) <= 4 else "serve-throughput"
        )


@dataclass(frozen=True, slots=True)
class Row:
    case: Case
    prior: float  # predicted with the unscaled priors
    loo: float  # predicted with factors fitted without the case's publication
    pooled: float  # the same without an engine/stack factor (as if the software were unknown)
    specific: bool = False  # the fold had a factor for the case's engine/stack

    @property
    def error(self) -> float:
        return (self.loo - self.case.measured) / self.case.measured

    @property
    def pooled_error(self) -> float:
        return (self.pooled - self.case.measured) / self.case.measured


@cache
def cases() -> tuple[Case, ...]:
    data = tomllib.loads((sizing_data_dir() / "calibration.toml").read_text(encoding="utf-8"))
    return tuple(_case(case_id, entry) for case_id, entry in data["cases"].items())


def _case(case_id: str, entry: dict[str, Any]) -> Case:
    arch = (
        llm.lookup(entry["model"])
        if "model" in entry
        else llm.from_numbers(case_id, **entry["arch"])
    )
    workload = sizing.Workload(
        task=entry["task"], arch=arch, **{k: entry[k] for k in CASE_KEYS if k in entry}
    )
    return Case(
        case_id,
        entry["source"],
        entry["source_key"],
        entry["metric"],
        float(entry["value"]),
        workload,
        entry["gpu"],
        int(entry["gpus"]),
        entry.get("tp"),
        bool(entry.get("check_only", False)),
    )


def predict(case: Case, scales: sizing.Scales = sizing.PRIORS) -> float:
    """The case's metric as `estimate` returns it for the case's workload and `scales`."""
    work = dataclasses.replace(case.workload, scales=scales)
    result = sizing.estimate(work, case.gpu, case.gpus, case.tensor_parallel)
    gpu = gpu_catalog().gpus[case.gpu]
    if case.metric == "e2e_latency_s":
        batch = work.concurrency or result.batch or 1
        return sizing.request_seconds(work, gpu, result.tensor_parallel, batch)
    if case.metric == "kv_cache_tokens":
        return float(sizing.kv_tokens(work, gpu, result.tensor_parallel))
    value = {
        "tokens_per_s_per_gpu": result.tokens_per_s / case.gpus,
        "tokens_per_s_total": result.tokens_per_s,
        "tpot_ms": result.tpot_ms,
        "ttft_ms": result.ttft_ms,
        "gpu_hours_total": result.gpu_hours,
    }[case.metric]
    return float("nan") if value is None else value


def _speed_ratio(case: Case, predicted: float) -> float:
    """How much faster reality is than the prediction (times inverted)."""
    ratio = case.measured / predicted
    return 1 / ratio if case.metric in TIME_METRICS else ratio


def fit_group(case: Case) -> str:
    """The factor a case is fitted into: its regime, except that serving cases on AMD parts fit
    the AMD engine factor (so the NVIDIA-measured regime factors never absorb a vendor gap)."""
    amd = gpu_catalog().gpus[case.gpu].vendor == "AMD"
    if amd and case.regime in sizing.SERVING_REGIMES:
        return sizing.ENGINE_FACTOR
    return case.regime


def fit(training: Sequence[Case]) -> sizing.Scales:
    """Factors per regime fitted on `training`, in FIT_ORDER (each with the earlier ones
    applied), then one per engine/stack (`fit_software`); check-only cases are skipped, and a
    regime with fewer than MIN_FIT_CASES left keeps its prior, or takes its parent's factor
    (`estimate.PARENT_REGIME`): a fitted factor is the whole factor, never one on top."""
    factors: dict[str, float] = {}
    for regime in FIT_ORDER:
        group = [c for c in training if fit_group(c) == regime and not c.check_only]
        if len(group) < MIN_FIT_CASES:
            continue
        current = sizing.Scales(dict(factors))
        ratios = [_speed_ratio(c, predict(c, current)) for c in group]
        factors[regime] = statistics.median(ratios) * current.factor(regime)
    pooled = sizing.Scales(dict(factors))
    return sizing.Scales(factors | fit_software(training, pooled))


def fit_software(training: Sequence[Case], pooled: sizing.Scales) -> dict[str, float]:
    """One factor per engine/stack on top of the pooled regime factors: the median over its
    publications of each publication's median measured ÷ predicted, only with at least
    MIN_SOFTWARE_PUBLICATIONS publications and MIN_FIT_CASES cases, shrunk towards 1 by
    publication count. End-to-end and KV cases measure no engine/stack efficiency."""
    groups: dict[str, list[Case]] = {}
    for case in training:
        key = sizing.software_key(case.workload)
        if key and not case.check_only and case.regime not in ("train-e2e", "kv"):
            groups.setdefault(key, []).append(case)
    factors: dict[str, float] = {}
    for key, group in groups.items():
        sources = {c.source_key for c in group}
        if len(sources) < MIN_SOFTWARE_PUBLICATIONS or len(group) < MIN_FIT_CASES:
            continue
        ratios = [
            statistics.median(
                _speed_ratio(c, predict(c, pooled)) for c in group if c.source_key == s
            )
            for s in sources
        ]
        weight = len(sources) / (len(sources) + SHRINK_PUBLICATIONS)
        factors[key] = statistics.median(ratios) ** weight
    return factors


def without_software(scales: sizing.Scales) -> sizing.Scales:
    """The pooled scales: the regime factors alone, as for an unknown engine/stack."""
    return sizing.Scales({k: v for k, v in scales.factors.items() if ":" not in k})


@cache
def report() -> tuple[Row, ...]:
    """Every case predicted leave-one-source-out."""
    return leave_one_source_out(cases())


def leave_one_source_out(every: Sequence[Case]) -> tuple[Row, ...]:
    """Each case predicted with factors fitted on the cases of the other publications only:
    all rows of one publication are held out together. Rows keep the order of `every`."""
    predicted: dict[str, Row] = {}
    for source in dict.fromkeys(c.source_key for c in every):
        scales = fit([c for c in every if c.source_key != source])
        pooled = without_software(scales)
        for case in (c for c in every if c.source_key == source):
            specific = sizing.software_key(case.workload) in scales.factors
            predicted[case.case_id] = Row(
                case, predict(case), predict(case, scales), predict(case, pooled), specific
            )
    return tuple(predicted[c.case_id] for c in every)


@cache
def fitted_scales() -> sizing.Scales:
    """Factors fitted on every case, with each regime's uncertainty from its held-out errors;
    read from the cache file of the current inputs when there is one (sizing.scalecache)."""
    return scalecache.load_or_fit(fit_scales)


def fit_scales() -> sizing.Scales:
    """The fit itself: every case, then every leave-one-source-out fold for the ranges."""
    factors = fit(cases()).factors
    spread: dict[str, float] = {}
    for regime, rows in by_regime().items():
        spread[regime] = p90(abs(r.error) for r in rows)
        # Unknown software never states a narrower range than named software.
        pooled = p90(abs(r.pooled_error) for r in rows)
        spread[sizing.pooled_key(regime)] = max(pooled, spread[regime])
    uncertainty = {k: max(MIN_UNCERTAINTY, round(v, 2)) for k, v in spread.items()}
    return sizing.Scales(factors, uncertainty)


def calibrated(work: sizing.Workload) -> sizing.Workload:
    """The workload with the fitted scales, as `estimate` and `advise` size it."""
    return dataclasses.replace(work, scales=fitted_scales())


def by_regime(rows: Iterable[Row] | None = None) -> dict[str, list[Row]]:
    grouped: dict[str, list[Row]] = {}
    for row in report() if rows is None else rows:
        grouped.setdefault(row.case.regime, []).append(row)
    return grouped


@dataclass(frozen=True, slots=True)
class Summary:
    regime: str
    cases: int
    sources: int
    median: float
    p90: float
    in_range: float  # share of cases whose measurement lies inside the stated range
    in_p90: float  # the same with the held-out p90 alone (no published-prior floor)


def summary(rows: Sequence[Row] | None = None) -> list[Summary]:
    """Per regime, overall ("all"), and overall over the cases whose source states every input
    ("all-stated": the check-only cases left out; they are predicted from assumed settings, so
    their error is partly the assumption's): median and p90 |error|, share inside the range."""
    rows = list(report() if rows is None else rows)
    stated = [r for r in rows if not r.case.check_only]
    groups = by_regime(rows) | slices(rows) | {"all": rows, "all-stated": stated}
    return [_summarise(name, group, rows) for name, group in groups.items() if group]


SERVING_REGIMES = ("decode", "prefill", "serve-throughput", "kv")


def slices(rows: Sequence[Row]) -> dict[str, list[Row]]:
    """Coverage the regimes mix with other cases, reported on their own (each row stays in its
    regime too): serving on more than one AMD GPU, whose collectives run over the xGMI mesh
    rather than NVLink, and training on more than one node (beyond 8 GPUs), where the network
    between nodes and the whole run's restarts come in."""
    vendor = {gpu_id: spec.vendor.lower() for gpu_id, spec in gpu_catalog().gpus.items()}
    return {
        "slice: serving on 2+ AMD GPUs": [
            r
            for r in rows
            if r.case.regime in SERVING_REGIMES
            and r.case.gpus > 1
            and vendor.get(r.case.gpu) == "amd"
        ],
        "slice: training beyond one node": [
            r for r in rows if r.case.regime not in SERVING_REGIMES and r.case.gpus > 8
        ],
    }


def held_out_uncertainty(row: Row, rows: Sequence[Row], floor: bool = True) -> float:
    """The range `estimate` would state for `row` had its publication been unknown: the p90
    error of the regime's rows from other publications (of their pooled predictions when the
    fold had no factor for the row's engine/stack, as `Scales.range_for`), never below the
    published-accuracy prior for the case's GPU and model (the same rule as `estimate`; the
    check never uses the row itself). Without `floor`, the held-out p90 alone."""
    others = [
        r
        for r in rows
        if r.case.regime == row.case.regime and r.case.source_key != row.case.source_key
    ]
    spread = p90(abs(r.error) for r in others)
    if not row.specific:  # as `fitted_scales` states it for unknown software
        spread = max(spread, p90(abs(r.pooled_error) for r in others))
    spread = max(MIN_UNCERTAINTY, spread) if len(others) >= 2 else 0.45
    if not floor:
        return spread
    work = row.case.workload
    prior = sizing.prior_uncertainty(gpu_catalog().gpus[row.case.gpu], work.arch, work.task)
    return max(prior, spread)


def _summarise(name: str, rows: list[Row], every: Sequence[Row]) -> Summary:
    errors = [abs(r.error) for r in rows]
    inside = [r for r in rows if _inside(r, held_out_uncertainty(r, every))]
    inside_p90 = [r for r in rows if _inside(r, held_out_uncertainty(r, every, floor=False))]
    return Summary(
        name,
        len(rows),
        len({r.case.source_key for r in rows}),
        statistics.median(errors),
        p90(errors),
        len(inside) / len(rows),
        len(inside_p90) / len(rows),
    )


def _inside(row: Row, uncertainty: float) -> bool:
    """The measurement is inside the stated range when the prediction's relative error is
    within the stated uncertainty (the same measure as the error columns)."""
    return abs(row.error) <= uncertainty


def p90(values: Iterable[float]) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def median_abs_error(rows: Sequence[Row]) -> float:
    return statistics.median(abs(r.error) for r in rows)
