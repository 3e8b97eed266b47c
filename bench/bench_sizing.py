"""Sizing benchmark: the advise benchmark's 50 workloads on every GPU model of the catalog at
1, 2, 4 and 8 GPUs (11,400 inputs), one sizing pass per workload as `advise` opens them, timed
in CPU over several rounds in one process; `--digest` prints instead a SHA-256 of every
estimate's `repr` (each input sized in its workload's pass, then alone), so that two trees can
be checked to give bit-identical estimates (run each with PYTHONPATH=<tree>/src). `--advice`
times instead what `advise` keeps of each input (`advisor._size_all`, a workload's inputs
together: the cost factor and the estimate's columns), which for serving with the layout left
to sizing needs no whole estimate.

    ./uvw run python bench/bench_sizing.py [--rounds 7] [--digest] [--advice]
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_advise import workloads

from priceadvisor.config import WorkloadProfile
from priceadvisor.gpu_specs import gpu_catalog
from priceadvisor.sizing import advisor
from priceadvisor.sizing.advisor import size_offer
from priceadvisor.sizing.estimate import SizingError, Workload
from priceadvisor.sizing.memo import sizing_pass
from priceadvisor.sizing.workloads import to_workload

COUNTS = (1.0, 2.0, 4.0, 8.0)


def size_all(profile: WorkloadProfile, work: Workload, models: list[str]) -> list[str]:
    """Every (GPU model, count) of one workload: the estimate's repr, or the sizing error."""
    out = []
    for model in models:
        for count in COUNTS:
            try:
                result: object = size_offer(work, profile.tensor_parallel, model, count)
            except SizingError as exc:
                result = ("error", str(exc))
            out.append(repr((profile.name, model, count, result)))
    return out


def advice_all(profile: WorkloadProfile, work: Workload, models: list[str]) -> None:
    """Every (GPU model, count) of one workload as `advise` sizes it (no process memo): the
    workload's shapes together (`advisor._size_all`)."""
    advisor._size_all(profile, work, [(model, count) for model in models for count in COUNTS])


def digest(cases: list[tuple[WorkloadProfile, Workload]], models: list[str]) -> str:
    lines = []
    for profile, work in cases:
        with sizing_pass():
            lines += size_all(profile, work, models)
    for profile, work in cases:
        lines += size_all(profile, work, models)
    text = "\n".join(lines)
    return f"{len(lines)} estimates, sha256 {hashlib.sha256(text.encode()).hexdigest()}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--digest", action="store_true")
    parser.add_argument("--advice", action="store_true", help="time advise's figures")
    args = parser.parse_args()
    models = sorted(gpu_catalog().gpus)
    cases = [(profile, to_workload(profile)) for profile in workloads(50)]
    if args.digest:
        print(digest(cases, models))
        return
    cpu = []
    size = advice_all if args.advice else size_all
    for _ in range(args.rounds):
        started = time.process_time()
        for profile, work in cases:
            with sizing_pass():
                size(profile, work, models)
        cpu.append(time.process_time() - started)
    print(
        f"{'advice of' if args.advice else 'sizing'} {len(cases)} workloads x "
        f"{len(models)} GPU models x {len(COUNTS)} counts: "
        f"CPU median {statistics.median(cpu):.3f} s (min {min(cpu):.3f}) over {args.rounds}"
    )


if __name__ == "__main__":
    main()
