"""Calibration of the sizing priors on published measurements (providers/calibration.toml).

Each metric group ("train", "throughput", "tpot") gets one scale factor on its efficiency prior:
the median of measured / predicted over the group's cases. The report predicts every case
leave-one-out — a case's own measurement never calibrates its prediction — and gives the median
absolute error. KV capacity is memory accounting, not an efficiency, and is not scaled.
"""

from __future__ import annotations

import dataclasses
import statistics
import tomllib
from dataclasses import dataclass
from functools import cache
from typing import Any

from priceadvisor import llm
from priceadvisor.catalog import gpu_catalog
from priceadvisor.resources import providers_dir
from priceadvisor.sizing import estimate as sizing

GROUPS = {
    "tokens_per_s_per_gpu": "train",
    "tokens_per_s_total": "throughput",
    "tpot_ms": "tpot",
    "kv_cache_tokens": "kv",
}


@dataclass(frozen=True, slots=True)
class Case:
    case_id: str
    source: str
    metric: str
    measured: float
    workload: sizing.Workload
    gpu: str
    gpus: int

    @property
    def group(self) -> str:
        return GROUPS[self.metric]


@dataclass(frozen=True, slots=True)
class Row:
    case: Case
    prior: float  # predicted with the unscaled priors
    loo: float  # predicted with the scale fitted on the other cases of its group

    @property
    def error(self) -> float:
        return (self.loo - self.case.measured) / self.case.measured


@cache
def cases() -> tuple[Case, ...]:
    data = tomllib.loads((providers_dir() / "calibration.toml").read_text(encoding="utf-8"))
    return tuple(_case(case_id, entry) for case_id, entry in data["cases"].items())


def _case(case_id: str, entry: dict[str, Any]) -> Case:
    arch = (
        llm.lookup(entry["model"])
        if "model" in entry
        else llm.from_numbers(case_id, **entry["arch"])
    )
    keys = ("precision", "input_tokens", "output_tokens", "concurrency", "seq_len")
    workload = sizing.Workload(
        task=entry["task"], arch=arch, **{k: entry[k] for k in keys if k in entry}
    )
    return Case(
        case_id,
        entry["source"],
        entry["metric"],
        float(entry["value"]),
        workload,
        entry["gpu"],
        int(entry["gpus"]),
    )


def predict(case: Case) -> float:
    result = sizing.estimate(case.workload, case.gpu, case.gpus)
    if case.metric == "tokens_per_s_per_gpu":
        return result.tokens_per_s / case.gpus
    if case.metric == "tokens_per_s_total":
        return result.tokens_per_s
    if case.metric == "tpot_ms":
        return result.tpot_ms or float("nan")
    gpu = gpu_catalog().gpus[case.gpu]
    return float(sizing.kv_tokens(case.workload, gpu, case.gpus))


def prior_predictions() -> dict[str, float]:
    """Every case predicted with the unscaled priors (the cases' workloads carry no scales)."""
    return {c.case_id: predict(c) for c in cases()}


def _ratio(case: Case, predicted: float) -> float:
    """How much faster reality is than the prior (TPOT is a time: inverted)."""
    ratio = case.measured / predicted
    return 1 / ratio if case.metric == "tpot_ms" else ratio


def _fit(ratios: list[float]) -> float:
    return statistics.median(ratios) if ratios else 1.0


@cache
def fitted_scales() -> sizing.Scales:
    """Scale per group fitted on every case (cached: the cases are shipped data)."""
    priors = prior_predictions()
    fitted = {}
    for group in ("train", "throughput", "tpot"):
        ratios = [_ratio(c, priors[c.case_id]) for c in cases() if c.group == group]
        fitted[group] = _fit(ratios)
    return sizing.Scales(**fitted)


def calibrated(work: sizing.Workload) -> sizing.Workload:
    """The workload with the fitted scales, as `estimate` and `advise` size it."""
    return dataclasses.replace(work, scales=fitted_scales())


def report() -> list[Row]:
    priors = prior_predictions()
    rows = []
    for case in cases():
        others = [
            _ratio(c, priors[c.case_id])
            for c in cases()
            if c.group == case.group and c.case_id != case.case_id
        ]
        scale = _fit(others) if case.group != "kv" else 1.0
        loo = (
            priors[case.case_id] / scale
            if case.metric == "tpot_ms"
            else priors[case.case_id] * scale
        )
        rows.append(Row(case, priors[case.case_id], loo))
    return rows


def median_abs_error(rows: list[Row]) -> float:
    return statistics.median(abs(r.error) for r in rows)
