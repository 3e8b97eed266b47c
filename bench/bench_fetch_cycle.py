"""One fetch cycle against local servers with 100 ms added per request (target: the whole
cycle ≤ 1.5× the slowest provider fetched alone — providers run concurrently).

    ./uvw run python bench/bench_fetch_cycle.py [--latency 0.1] [--repeat 3]

Every provider's recordings are served by its own HTTP server on 127.0.0.1 that sleeps
`latency` before each answer; each provider is fetched alone, then all together, into a real
DuckDB file. Request spacing is set to 0 (it is a politeness delay, not latency). Medians of
`repeat` runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.localserver import local_settings, serving

from priceadvisor.collect.adapters import REGISTRY
from priceadvisor.collect.fetch import run_cycle
from priceadvisor.config import Settings
from priceadvisor.service.stores import configured_store


def timed(config: Settings, ids: list[str]) -> tuple[float, int]:
    started = time.perf_counter()
    summaries = run_cycle(config, configured_store(config), ids, False, lambda *_: None)
    assert all(s.status.value == "ok" for s in summaries), [
        (s.provider, s.error) for s in summaries
    ]
    return time.perf_counter() - started, sum(s.requests for s in summaries)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("GCP_API_KEY", "bench")
    providers = sorted(REGISTRY)
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        servers = {p: stack.enter_context(serving(p)) for p in providers}
        for server in servers.values():
            server.delay = args.latency
        config = local_settings(Path(tmp) / "bench.duckdb", *servers.values())
        alone = {}
        for p in providers:
            runs = [timed(config, [p]) for _ in range(args.repeat)]
            alone[p] = statistics.median(r[0] for r in runs)
            print(f"{p:10s} alone: {alone[p]:.2f} s ({runs[0][1]} requests)")
        cycle = [timed(config, providers) for _ in range(args.repeat)]
        whole = statistics.median(c[0] for c in cycle)
        slowest = max(alone, key=alone.__getitem__)
        print(
            f"whole cycle: {whole:.2f} s ({cycle[0][1]} requests); slowest alone: {slowest} "
            f"{alone[slowest]:.2f} s; ratio {whole / alone[slowest]:.2f} (target <= 1.5)"
        )


if __name__ == "__main__":
    main()
