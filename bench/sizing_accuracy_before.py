"""Accuracy of the sizing estimator as it was before issue 16 (commit effa9f3: one TP-N
replica, three global scales, TPOT with amortised prefill) on today's calibration cases, fitted
leave-one-source-out like `priceadvisor calibrate` and grouped by today's regimes — the
"before" column of docs/accuracy.md. Needs the git history:

    python3 -m uv run python bench/sizing_accuracy_before.py

FP4 cases are sized at FP8 (the old estimator has no FP4); the range check uses the old flat
uncertainties (±20/30/45 %).
"""

import importlib.util
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from priceadvisor.gpu_specs import gpu_catalog
from priceadvisor.sizing import calibration as cal

BEFORE = "effa9f3"


def _old_module():
    text = subprocess.run(
        ["git", "show", f"{BEFORE}:src/priceadvisor/sizing/estimate.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    path = Path(tempfile.mkdtemp()) / "old_estimate.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("old_estimate", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["old_estimate"] = module
    spec.loader.exec_module(module)
    return module


old = _old_module()

GROUP = {
    "tokens_per_s_per_gpu": "train",
    "gpu_hours_total": "train",
    "tokens_per_s_total": "throughput",
    "tpot_ms": "tpot",
    "e2e_latency_s": "tpot",
    "ttft_ms": None,
    "kv_cache_tokens": None,
}
TIME = ("tpot_ms", "e2e_latency_s", "gpu_hours_total", "ttft_ms")


def work_of(case, scales):
    w = case.workload
    prec = "fp8" if w.precision == "fp4" else w.precision
    return old.Workload(
        task=w.task,
        arch=w.arch,
        precision=prec,
        input_tokens=w.input_tokens,
        output_tokens=w.output_tokens,
        concurrency=w.concurrency,
        train_tokens=w.train_tokens,
        seq_len=w.seq_len,
        scales=scales,
    )


def predict(case, scales):
    w = work_of(case, scales)
    r = old.estimate(w, case.gpu, case.gpus)
    gpu = gpu_catalog().gpus[case.gpu]
    m = case.metric
    if m == "tokens_per_s_per_gpu":
        return r.tokens_per_s / case.gpus
    if m == "gpu_hours_total":
        return r.gpu_hours or float("nan")
    if m == "tokens_per_s_total":
        return r.tokens_per_s or float("nan")
    if m == "tpot_ms":
        return r.tpot_ms or float("nan")
    if m == "ttft_ms":
        return old.ttft_seconds(w, gpu, case.gpus) * 1000
    if m == "e2e_latency_s":
        if r.tpot_ms is None:
            return float("nan")
        return old.ttft_seconds(w, gpu, case.gpus) + w.output_tokens * r.tpot_ms / 1000
    return float(old.kv_tokens(w, gpu, case.gpus))


def fit(train):
    out = {}
    for g in ("train", "throughput", "tpot"):
        ratios = []
        for c in train:
            if GROUP[c.metric] != g:
                continue
            p = predict(c, old.PRIORS)
            if p != p:
                continue
            r = c.measured / p
            ratios.append(1 / r if c.metric in TIME else r)
        out[g] = statistics.median(ratios) if ratios else 1.0
    return old.Scales(**out)


rows = []
cases = cal.cases()
for src in {c.source_key for c in cases}:
    s = fit([c for c in cases if c.source_key != src])
    for c in cases:
        if c.source_key == src:
            p = predict(c, s)
            rows.append((c, p))


def unc(c):
    return old.uncertainty(gpu_catalog().gpus[c.gpu], c.workload.arch, c.workload.task)


groups = {}
for c, p in rows:
    groups.setdefault(c.regime, []).append((c, p))
groups["all"] = rows
print("regime,cases,median_abs_error_pct,p90_abs_error_pct,in_range_pct,unpredicted")
for name, g in groups.items():
    ok = [(c, p) for c, p in g if p == p and p > 0]
    errs = sorted(abs((p - c.measured) / c.measured) for c, p in ok)
    inside = sum(1 for c, p in ok if abs(p - c.measured) / c.measured <= unc(c))
    p90 = errs[min(len(errs) - 1, round(0.9 * (len(errs) - 1)))]
    median = 100 * statistics.median(errs)
    share = 100 * inside / len(g)
    print(f"{name},{len(g)},{median:.1f},{100 * p90:.1f},{share:.1f},{len(g) - len(ok)}")
