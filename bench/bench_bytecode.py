"""Start-up of an installed priceadvisor with and without bytecode compiled at install.

Usage: python bench/bench_bytecode.py [--runs 9]

Installs this checkout (non-editable, dependencies from uv's cache) into two fresh venvs with
`./uvw pip install`: one with UV_COMPILE_BYTECODE=1 (what ./uvw now sets for installs), one
with UV_COMPILE_BYTECODE=0 (uv's own default, and ./uvw's before). Builds the offline demo
database once, then times `priceadvisor prices --gpu H100 --pricing spot` in fresh processes,
interleaved (with, without, with, ...), with PYTHONDONTWRITEBYTECODE=1: the service's user
cannot write __pycache__ into an installed venv, so whatever bytecode the install left is all a
start gets. Reports the median and range of wall time and the median CPU time (user + system).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def install(venv: Path, compile_bytecode: str) -> Path:
    env = {**os.environ, "UV_COMPILE_BYTECODE": compile_bytecode}
    subprocess.run([str(ROOT / "uvw"), "venv", "--quiet", str(venv)], check=True, env=env)
    python = venv / "bin" / "python"
    subprocess.run(
        [str(ROOT / "uvw"), "pip", "install", "--quiet", "--python", str(python), str(ROOT)],
        check=True,
        env=env,
    )
    return venv / "bin" / "priceadvisor"


def timed(command: list[str]) -> tuple[float, float]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-bytecode-") as tmp:
        folder = Path(tmp)
        cli = {
            "with bytecode (./uvw default)": install(folder / "compiled", "1"),
            "without bytecode (uv default)": install(folder / "plain", "0"),
        }
        db = folder / "demo.duckdb"
        first = next(iter(cli.values()))
        subprocess.run([str(first), "--db", str(db), "demo"], check=True, capture_output=True)
        query = ["--db", str(db), "prices", "--gpu", "H100", "--pricing", "spot"]
        results: dict[str, list[tuple[float, float]]] = {label: [] for label in cli}
        for _ in range(args.runs):
            for label, binary in cli.items():
                results[label].append(timed([str(binary), *query]))
        print(f"python {sys.version.split()[0]}, {args.runs} runs each, interleaved")
        for label, runs in results.items():
            walls = [w for w, _ in runs]
            cpus = [c for _, c in runs]
            print(
                f"{label:<32} wall median {statistics.median(walls):5.2f} s "
                f"(range {min(walls):4.2f}-{max(walls):4.2f}), "
                f"CPU median {statistics.median(cpus):5.2f} s"
            )


if __name__ == "__main__":
    main()
