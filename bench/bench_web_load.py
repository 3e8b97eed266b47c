"""Dashboard throughput under concurrent clients: 20 clients against one, same server.

Usage: python bench/bench_web_load.py [--offers 100000] [--seconds 15] [--clients 20]

Builds a database of N synthetic current offers (as bench_web.py does), starts `priceadvisor
serve` on 127.0.0.1 in its own process (so the server's CPU is measured apart from the
clients'), then runs two phases of `--seconds` each: one client, then `--clients` clients, each
a thread with its own keep-alive connection sending filtered `/api/offers` calls back to back
(a rotation of GPU, pricing, VRAM and region filters). Reports per phase: answered requests per
second, p50/p95 latency, errors (anything but 200, and failed connections), and the server's
CPU (cores used over the phase, CPU ms per answered request, from /proc/<pid>/stat).

PRICEADVISOR_BENCH_SRC=<folder>: run the server from another source tree (e.g. an unpacked
`git archive` of an earlier commit) to measure before and after on the same machine and data.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1]))

from bench_web import build

PATHS = [
    "/api/offers?gpu=H100&pricing=spot&vram_min=80&per_page=50",
    "/api/offers?gpu=A100&per_page=50",
    "/api/offers?pricing=on_demand&eu=1&per_page=50&sort=hour",
    "/api/offers?vram_min=40&gpus=8&per_page=25",
    "/api/offers?gpu=L4&pricing=spot&per_page=50&page=2",
]


@dataclass
class Phase:
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--offers", type=int, default=100_000)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--clients", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.duckdb"
        build(db, args.offers)
        server, url = start_server(db)
        try:
            for path in PATHS:  # warm: first open of the file
                httpx.get(url + path, timeout=60).raise_for_status()
            for clients in (1, args.clients):
                report(args.offers, clients, *run_phase(url, server.pid, clients, args.seconds))
        finally:
            server.terminate()
            server.wait(30)


def start_server(db: Path) -> tuple[subprocess.Popen[str], str]:
    env = dict(os.environ)
    source = os.environ.get("PRICEADVISOR_BENCH_SRC")
    if source:
        env["PYTHONPATH"] = str(Path(source) / "src")
    command = [sys.executable, "-m", "priceadvisor", "--db", str(db), "serve", "--port", "0"]
    server = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env)
    assert server.stderr is not None
    line = ""
    while "dashboard on " not in line:
        line = server.stderr.readline()
        if not line and server.poll() is not None:
            raise SystemExit(f"serve exited: {server.stderr.read()}")
    threading.Thread(target=server.stderr.read, daemon=True).start()  # keep the pipe drained
    return server, line.split("dashboard on ")[1].split()[0].rstrip("/")


def run_phase(url: str, pid: int, clients: int, seconds: float) -> tuple[Phase, float, float]:
    phase = Phase()
    deadline = time.monotonic() + seconds
    cpu_before, started = cpu_seconds(pid), time.monotonic()
    threads = [
        threading.Thread(target=client, args=(url, phase, deadline, n)) for n in range(clients)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return phase, time.monotonic() - started, cpu_seconds(pid) - cpu_before


def client(url: str, phase: Phase, deadline: float, offset: int) -> None:
    paths = itertools.islice(itertools.cycle(PATHS), offset, None)
    with httpx.Client(base_url=url, timeout=60) as http:
        while time.monotonic() < deadline:
            path = next(paths)
            started = time.perf_counter()
            try:
                ok = http.get(path).status_code == 200
            except httpx.HTTPError:
                ok = False
            elapsed = time.perf_counter() - started
            with phase.lock:
                if ok:
                    phase.latencies.append(elapsed)
                else:
                    phase.errors += 1


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def report(offers: int, clients: int, phase: Phase, wall: float, cpu: float) -> None:
    answered = len(phase.latencies)
    ordered = sorted(phase.latencies) or [0.0]
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    print(
        f"{offers:>9,} offers  {clients:>2} client(s): {answered / wall:6.1f} answered/s, "
        f"p50 {statistics.median(ordered) * 1000:6.1f} ms, p95 {p95 * 1000:6.1f} ms, "
        f"errors {phase.errors} of {answered + phase.errors}, "
        f"server CPU {cpu / wall:4.2f} cores, {cpu / max(answered, 1) * 1000:5.1f} ms/request"
    )


if __name__ == "__main__":
    main()
