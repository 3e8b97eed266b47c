"""Daemon soak (target: ≥ 500 fetch cycles, RSS ≤ 200 MB and flat over the second half).

    ./uvw run python bench/bench_soak.py [--runs 500] [--every 0.2] [--fault-rate 0.2]

`priceadvisor run` as a subprocess, every provider pointed at its own local server serving the
recordings, intervals shortened to `every` seconds, and random faults injected by the servers
(HTTP 500 or 429, truncated bodies, 2 s hangs against a 1 s deadline). RSS of the daemon is
sampled from /proc every 0.5 s until the database holds `runs` finished fetch runs; then SIGTERM.
Reported: RSS at start, max of the first and second halves, the second half's slope, run
outcomes, and whether the offers of every provider equal those of its last successful run.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.localserver import RecordingServer, serving

from priceadvisor.collect.adapters import REGISTRY
from priceadvisor.manifest import manifest
from priceadvisor.store import connections, errors

PROVIDERS = [p for p in sorted(REGISTRY) if p != "vast"]  # vast: 25 calls per run, see note


def fault(rng: random.Random, rate: float, server: RecordingServer) -> Any:
    def maybe(*_: Any) -> tuple[int, dict[str, str], bytes] | None:
        if rng.random() >= rate:
            return None
        kind = rng.choice(["500", "429", "truncated", "hang"])
        if kind == "hang":
            time.sleep(2)
            return None
        if kind == "truncated":
            return 200, {"Content-Type": "application/json"}, b'{"Items": [{"armSkuN'
        return int(kind), {"Retry-After": "0"}, b"fault"

    return maybe


def config(tmp: Path, servers: dict[str, RecordingServer], every: float) -> Path:
    lines = ["[daemon]", "health_port = 0", "[http]", "attempts = 2", 'timeout = "1s"']
    for provider in sorted(REGISTRY):
        lines.append(f"[providers.{provider}]")
        if provider not in servers:
            lines.append("enabled = false")
            continue
        endpoints = ", ".join(
            f'{n} = "{servers[provider].base_url}"' for n in manifest(provider).endpoints
        )
        lines += [
            f'interval = "{every}s"',
            'deadline = "1s"',
            "request_spacing = 0",
            f"endpoints = {{ {endpoints} }}",
        ]
    path = tmp / "soak.toml"
    path.write_text("\n".join(lines))
    return path


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def finished_runs(db: Path) -> int:
    try:
        with connections.reader(db, lock_timeout=5) as con:
            row = con.execute(
                "SELECT count(*) FROM fetch_runs WHERE status <> 'running'"
            ).fetchone()
            return int(row[0]) if row else 0
    except errors.StoreError:
        return 0


def slope(samples: list[tuple[float, float]]) -> float:
    """MB per minute, least squares."""
    xs, ys = [t for t, _ in samples], [r for _, r in samples]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    var = sum((x - mx) ** 2 for x in xs) or 1.0
    return sum((x - mx) * (y - my) for x, y in samples) / var * 60


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--every", type=float, default=0.2)
    parser.add_argument("--fault-rate", type=float, default=0.2)
    args = parser.parse_args()
    os.environ.setdefault("GCP_API_KEY", "soak")
    rng = random.Random(11)
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        servers = {p: stack.enter_context(serving(p)) for p in PROVIDERS}
        for server in servers.values():
            server.faults.append(fault(rng, args.fault_rate, server))
            server.post_faults.append(fault(rng, args.fault_rate, server))
        db = Path(tmp) / "soak.duckdb"
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "priceadvisor",
                "--config",
                str(config(Path(tmp), servers, args.every)),
                "--db",
                str(db),
                "run",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        samples, started = [], time.monotonic()
        while (done := finished_runs(db)) < args.runs:
            samples.append((time.monotonic() - started, rss_mb(proc.pid)))
            time.sleep(0.5)
            if proc.poll() is not None:
                raise SystemExit("the daemon died")
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
        report(db, samples, done, code, time.monotonic() - started)


def report(
    db: Path, samples: list[tuple[float, float]], runs: int, code: int, seconds: float
) -> None:
    samples = [s for s in samples if s[1] > 0]  # before the process had mapped anything
    half = len(samples) // 2
    first, second = samples[:half], samples[half:]
    with connections.reader(db) as con:
        outcomes = dict(
            con.execute("SELECT status, count(*) FROM fetch_runs GROUP BY 1").fetchall()
        )
        consistent = con.execute("""
            SELECT bool_and(o.n = r.offers_seen) FROM (
                SELECT provider, count(*) AS n FROM offers GROUP BY 1) o
            JOIN (SELECT provider, arg_max(offers_seen, run_id) AS offers_seen
                  FROM fetch_runs WHERE status = 'ok' GROUP BY 1) r USING (provider)
        """).fetchone()
    print(
        f"{runs} finished fetch runs in {seconds:.0f} s over {len(PROVIDERS)} providers; "
        f"exit code after SIGTERM: {code}"
    )
    print(f"outcomes: {outcomes}")
    print(
        f"RSS: start {samples[0][1]:.0f} MB, first-half max {max(r for _, r in first):.0f} MB, "
        f"second-half max {max(r for _, r in second):.0f} MB, min {min(r for _, r in second):.0f}"
        f" MB, second-half slope {slope(second):+.2f} MB/min"
    )
    quarters = [samples[i * len(samples) // 4 : (i + 1) * len(samples) // 4] for i in range(4)]
    medians = ", ".join(f"{statistics.median(r for _, r in q):.0f}" for q in quarters)
    print(f"RSS median per quarter: {medians} MB")
    print(f"offers of every provider = its last ok run: {bool(consistent and consistent[0])}")


if __name__ == "__main__":
    main()
