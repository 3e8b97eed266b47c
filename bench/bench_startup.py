"""Start-up benchmark: `priceadvisor prices --gpu H100 --pricing spot` in a fresh process, beside
raw DuckDB running the same SQL on the same file in a fresh process (the floor: Python, the
duckdb import and the query). Runs are interleaved (CLI, raw, CLI, raw, ...) so a busy machine
slows both alike; medians and ranges of wall time are reported, and the median CPU time (user +
system, all threads) of each process, which a busy machine inflates less.

    uv run python bench/bench_startup.py [--offers 10000 1000000] [--runs 9] [--quick]

--src DIR: time the CLI of another checkout's src/ (e.g. `git archive REV src providers db
templates | tar -x -C DIR` for a before/after), run as `python -m priceadvisor` either way.
--before DIR: time that checkout's CLI as well, interleaved with this one ("CLI before");
--before-python PATH runs it with that checkout's own venv (its own dependencies, e.g. another
Typer) instead of this one's. It reads a database built by that checkout's own bench and ingest
(so in its own storage order), and raw DuckDB runs this CLI's SQL on that file too ("raw
DuckDB, before's file").

--gpuhunt-python PATH: also time gpuhunt (https://github.com/dstackai/gpuhunt, installed in its
own venv, never a dependency of this project) answering the same question in a fresh process:
`Catalog.load()` then `query(gpu_name="H100", spot=True)`, printing the 50 cheapest per GPU-hour.
There is no network here, so gpuhunt loads the same offers from a local mirror of its published
catalog (GPUHUNT_CATALOG_URL=file://...: `<provider>/version` and
`<provider>/<version>/catalog.zip` holding `<provider>.csv` in gpuhunt's v2 columns), made from
the benchmark database: every published on-demand and spot offer, GPU named by family (H100)
with its memory, as gpuhunt names GPUs; all in `aws`, the other offline providers empty.

--block-size BYTES: build the databases with blocks of that size (default: DuckDB's, 256 KiB).
--compare-block-size BYTES: also build each database with blocks of that size and time the CLI
and raw DuckDB on it too, interleaved ("CLI, N KiB blocks"): the same rows, ingested the same way.

--terminal COLUMNS: every command writes to a pseudo-terminal of that width instead of
/dev/null (the CLI then prints Rich's styled table, sized to the window), read to the end.

--quick: 10k offers and 3 runs, a smoke test for CI. The databases are built once in a temp
folder from one synthetic snapshot (bench/gen_snapshot.py), through the real ingest and the
storage-order rewrite the fetch session runs after it.

The CLI and raw DuckDB run from a venv this checkout is installed into as a user gets it:
`./uvw pip install` (not editable, so bytecode compiled at install: `./uvw` sets
UV_COMPILE_BYTECODE=1), with PYTHONDONTWRITEBYTECODE=1 and no pycache prefix, as a service user
who cannot write into the venv runs it: the bytecode the install left is all a start gets, and a
module without it is compiled from source on every start. gpuhunt's venv is run the same way,
so install it with `./uvw pip install` too. --src and --before folders are compiled with
compileall first (what an install does). --editable-venv: time this checkout's own .venv
instead of an install (its src/ is compiled with compileall the same way).
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import fcntl
import io
import json
import os
import pty
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
import zipfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from bench_ingest import MANIFEST
from gen_snapshot import snapshots

from priceadvisor.cli import prices as layout
from priceadvisor.records import FetchResult, RunStatus
from priceadvisor.store import clustering as storage_order
from priceadvisor.store import connections, filters, reads
from priceadvisor.store.ingest import ingest
from priceadvisor.store.runs import start_run

CLI_ARGS = ["prices", "--gpu", "H100", "--pricing", "spot"]
TABLE_ROWS = 50  # what the CLI's table asks for without --limit

RAW = """
import json, sys
import duckdb
con = duckdb.connect(sys.argv[1], read_only=True)
rows = con.execute(sys.argv[2], json.loads(sys.argv[3])).fetchall()
print(len(rows))
"""


# gpuhunt's side: the whole catalog is read and parsed, then filtered, on every start.
GPUHUNT = """
import gpuhunt
catalog = gpuhunt.Catalog(balance_resources=False, auto_reload=False)
catalog.load()
items = sorted(catalog.query(gpu_name="H100", spot=True), key=lambda i: i.price / i.gpu_count)
for i in items[:50]:
    print(i.provider, i.location, i.instance_name, i.gpu_name, i.gpu_count, i.price)
print(f"showing {min(50, len(items))} of {len(items)}")
"""
# gpuhunt's offline providers (gpuhunt._internal.catalog.OFFLINE_PROVIDERS in 0.1.34) and its
# v2 catalog columns (gpuhunt._internal.storage.CATALOG_V2_FIELDS).
GPUHUNT_PROVIDERS = ("aws", "azure", "verda", "gcp", "lambdalabs", "nebius", "oci", "runpod")
GPUHUNT_PROVIDERS += ("cloudrift",)
GPUHUNT_FIELDS = ["instance_name", "location", "price", "cpu", "memory", "gpu_count"]
GPUHUNT_FIELDS += ["gpu_name", "gpu_memory", "spot", "disk_size", "gpu_vendor", "flags"]
GPUHUNT_FIELDS += ["cpu_arch", "provider_data"]
CATALOG_ROWS = """
SELECT o.instance_type, coalesce(o.zone, o.region), o.price_hour_usd, o.vcpus::INT,
       o.ram_gb, o.gpu_count::INT, g.family, o.gpu_memory_gb,
       CASE WHEN o.pricing = 'spot' THEN 'True' ELSE 'False' END, '', lower(g.vendor), '',
       'x86', '{}'
FROM offers o JOIN gpus g USING (gpu_model)
WHERE o.pricing IN ('on_demand', 'spot') AND o.price_origin = 'published'
"""


def build(db: Path, offers: int, block_size: int = 0) -> None:
    """`block_size`: the new file's (0: DuckDB's default)."""
    config = connections.CONNECTION_CONFIG
    config.pop("default_block_size", None)
    if block_size:  # DuckDB applies it to a file it creates only
        config["default_block_size"] = block_size
    quotes, _ = next(snapshots(offers, 0.0))
    with connections.writer(db) as con:
        run_id = start_run(con, "bench")
        result = FetchResult("bench", RunStatus.OK, quotes, finished_at=dt.datetime(2026, 11, 1))
        ingest(con, run_id, result, MANIFEST)
        storage_order.keep_clustered(con)  # as the fetch session does after its ingests


# A database built by another checkout's own ingest (its own storage order), for "CLI before".
BUILD = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from bench_startup import build
build(Path(sys.argv[2]), int(sys.argv[3]))
"""


def build_before(before: Command, db: Path, offers: int) -> None:
    """`db` built by the checkout of `before` (its bench/ beside its src/), with its python."""
    (python, *_), env = before
    bench = Path(env["PYTHONPATH"]).parent / "bench"
    subprocess.run([python, "-c", BUILD, str(bench), str(db), str(offers)], env=env, check=True)


def cli_sql(db: Path) -> tuple[str, list[Any]]:
    """The exact SQL and parameters the CLI runs for CLI_ARGS (captured from reads.prices)."""
    seen: list[tuple[str, list[Any]]] = []
    original = reads.fetch_table

    def capture(con: Any, sql: str, params: list[Any] | None = None) -> reads.Table:
        seen.append((sql, list(params or [])))
        return original(con, sql, params)

    reads.fetch_table = capture  # type: ignore[assignment]
    try:
        with connections.reader(db) as con:
            flt = reads.OfferFilter(
                gpu_models=filters.gpu_models("H100", reads.gpu_families(con)), pricing="spot"
            )
            reads.prices(con, flt, "gpu-hour", TABLE_ROWS, layout.view_columns(layout.DEFAULT))
    finally:
        reads.fetch_table = original  # type: ignore[assignment]
    return seen[0]


def gpuhunt_mirror(db: Path, folder: Path) -> str:
    """A local copy of gpuhunt's catalog bucket holding the database's offers; its file:// URL."""
    with connections.reader(db) as con:
        rows = con.execute(CATALOG_ROWS).fetchall()
    for provider in GPUHUNT_PROVIDERS:
        text = io.StringIO()
        writer = csv.writer(text, lineterminator="\n")
        writer.writerow(GPUHUNT_FIELDS)
        writer.writerows(rows if provider == "aws" else [])
        release = folder / provider / "bench"
        release.mkdir(parents=True, exist_ok=True)
        (folder / provider / "version").write_text("bench\n")
        with zipfile.ZipFile(release / "catalog.zip", "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr(f"{provider}.csv", text.getvalue())
    return folder.resolve().as_uri()


def timed(command: list[str], env: dict[str, str], terminal: int = 0) -> tuple[float, float]:
    """Wall time and CPU time (user + system, all threads) of one run; with `terminal`, stdout
    is a pseudo-terminal that many columns wide (read to the end, as a terminal does)."""
    started = time.perf_counter()
    if terminal:
        leader, follower = _terminal(terminal)
        env = env | {"TERM": "xterm-256color", "COLUMNS": str(terminal)}
        child = subprocess.Popen(command, env=env, stdout=follower, stderr=subprocess.PIPE)
        os.close(follower)
        _drain(leader)
    else:
        child = subprocess.Popen(
            command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
    assert child.stderr is not None
    with child.stderr:
        stderr = child.stderr.read()  # to the end: the child has exited or closed it
    _, status, usage = os.wait4(child.pid, 0)  # the child's own resource usage
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise SystemExit(f"{command[0]} failed: {stderr.decode(errors='replace').strip()}")
    return wall, usage.ru_utime + usage.ru_stime


def _terminal(columns: int) -> tuple[int, int]:
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    return leader, follower


def _drain(leader: int) -> None:
    """Read the terminal until the child closes it (EIO on Linux once it has exited)."""
    try:
        while os.read(leader, 65536):
            pass
    except OSError:
        pass
    finally:
        os.close(leader)


ROOT = Path(__file__).resolve().parents[1]


def install(venv: Path) -> str:
    """This checkout installed into a fresh venv as a user installs it; the venv's python."""
    env = os.environ | {"UV_COMPILE_BYTECODE": "1"}  # what ./uvw sets for sync/pip/tool
    subprocess.run([str(ROOT / "uvw"), "venv", "--quiet", str(venv)], check=True, env=env)
    python = str(venv / "bin" / "python")
    install = [str(ROOT / "uvw"), "pip", "install", "--quiet", "--python", python, str(ROOT)]
    subprocess.run(install, check=True, env=env)
    return python


def installed_env(src: Path | None) -> dict[str, str]:
    """No bytecode written at run time and no pycache prefix: a start gets what is installed.
    A `src` folder (before PYTHONPATH, ahead of the installed package) is compiled first."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPYCACHEPREFIX", "VIRTUAL_ENV")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if src is not None:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(src)], check=True)
        env["PYTHONPATH"] = str(src.resolve())
    return env


Command = tuple[list[str], dict[str, str]]
Timings = dict[str, list[tuple[float, float]]]  # per command: (wall, CPU) of each run


def commands(
    db: Path, cli: Command, gpuhunt: Path | None, before: Command | None, other: int = 0
) -> dict[str, Command]:
    """What to time: `before` is the python and environment of the CLI before, if any; it reads
    a database its own checkout built (db with the suffix .before.duckdb). `cli` is the python
    and environment of this checkout's CLI; raw DuckDB runs with the same."""
    (python, *_), env = cli
    sql, params = cli_sql(db)
    args = ["-m", "priceadvisor", "--db", str(db), *CLI_ARGS]
    chosen = {
        "CLI": ([python, *args], env),
        "raw DuckDB": ([python, "-c", RAW, str(db), sql, json.dumps(params)], env),
    }
    if other:
        kib = f"{other // 1024} KiB blocks"
        alt = str(other_db(db, other))
        chosen[f"CLI, {kib}"] = ([python, *args[:3], alt, *args[4:]], env)
        chosen[f"raw DuckDB, {kib}"] = ([python, "-c", RAW, alt, sql, json.dumps(params)], env)
    if before is not None:
        own = str(db.with_suffix(".before.duckdb"))
        chosen["CLI before"] = ([*before[0], *args[:3], own, *args[4:]], before[1])
        # The same SQL on the file before built: what its storage order alone costs the query.
        chosen["raw DuckDB, before's file"] = (
            [python, "-c", RAW, own, sql, json.dumps(params)],
            env,
        )
    if gpuhunt is not None:
        url = gpuhunt_mirror(db, db.with_suffix(".gpuhunt"))
        hunt_env = {k: v for k, v in env.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        chosen["gpuhunt"] = ([str(gpuhunt), "-c", GPUHUNT], hunt_env | {"GPUHUNT_CATALOG_URL": url})
    return chosen


def other_db(db: Path, block_size: int) -> Path:
    """The database of `--compare-block-size`: the same rows in a file of that block size."""
    return db.with_suffix(f".b{block_size}.duckdb")


def compare(chosen: dict[str, Command], runs: int, terminal: int = 0) -> Timings:
    for command, env in chosen.values():  # fill the page cache for each
        timed(command, env, terminal)
    times: Timings = {name: [] for name in chosen}
    for _ in range(runs):
        for name, (command, env) in chosen.items():
            times[name].append(timed(command, env, terminal))
    return times


def report(offers: int, times: Timings) -> None:
    wall = {name: [w for w, _ in runs] for name, runs in times.items()}
    cpu = {name: statistics.median(c for _, c in runs) for name, runs in times.items()}
    parts = [
        f"{name} median {statistics.median(t):.3f} s ({min(t):.3f}-{max(t):.3f}) "
        f"CPU {cpu[name]:.3f} s"
        for name, t in wall.items()
    ]
    cli = statistics.median(wall["CLI"])
    ratios = [
        f"CLI/{name} {cli / statistics.median(t):.2f}x wall, {cpu['CLI'] / cpu[name]:.2f}x CPU"
        for name, t in wall.items()
    ]
    print(f"{offers:>9,} offers: {', '.join(parts)}; {', '.join(ratios[1:])}")
    print(f"{'':>9}  load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--offers", type=int, nargs="+", default=[10_000, 1_000_000])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--src", type=Path, help="time the CLI from this src/ folder")
    parser.add_argument("--before", type=Path, help="also time the CLI from this src/ folder")
    parser.add_argument("--before-python", type=Path, help="run --before with this python")
    parser.add_argument("--gpuhunt-python", type=Path, help="python of a venv with gpuhunt")
    parser.add_argument("--quick", action="store_true", help="10k offers, 3 runs")
    parser.add_argument(
        "--terminal",
        type=int,
        default=0,
        metavar="COLUMNS",
        help="every command's stdout a pseudo-terminal this wide (Rich's styled table)",
    )
    parser.add_argument(
        "--editable-venv", action="store_true", help="time this checkout's .venv, not an install"
    )
    parser.add_argument("--block-size", type=int, default=0, help="of the databases (bytes)")
    parser.add_argument(
        "--compare-block-size", type=int, default=0, help="also time files of this block size"
    )
    args = parser.parse_args()
    sizes, runs = ([10_000], 3) if args.quick else (args.offers, args.runs)
    with tempfile.TemporaryDirectory() as tmp:
        src = args.src or (ROOT / "src" if args.editable_venv else None)
        python = sys.executable if args.editable_venv else install(Path(tmp) / "venv")
        cli: Command = ([python], installed_env(src))
        before = None
        if args.before:
            before_python = str(args.before_python or sys.executable)
            before = ([before_python], installed_env(args.before))
        for offers in sizes:
            db = Path(tmp) / f"offers-{offers}.duckdb"
            if args.compare_block_size:
                build(other_db(db, args.compare_block_size), offers, args.compare_block_size)
            build(db, offers, args.block_size)
            if before is not None:
                build_before(before, db.with_suffix(".before.duckdb"), offers)
            chosen = commands(db, cli, args.gpuhunt_python, before, args.compare_block_size)
            if args.compare_block_size:
                files = (db, other_db(db, args.compare_block_size))
                print(f"files: {', '.join(f'{f.stat().st_size / 2**20:.1f} MB' for f in files)}")
            report(offers, compare(chosen, runs, args.terminal))


if __name__ == "__main__":
    main()
