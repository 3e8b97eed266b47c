"""What a small append costs DuckDB until the next checkpoint, in plain DuckDB (no priceadvisor).

A table of 38 columns (30 DOUBLE, 7 VARCHAR and the row number, as wide as the store's
`core.current_offers` and `core.price_closed`) is checkpointed with N rows; a new connection
then appends a few rows in one transaction, as an hourly ingest appends its changed prices.
Printed: DuckDB's own accounting (`duckdb_memory()`) and the RSS the append left, both after
DuckDB's freed pages are returned (its jemalloc's purge), for a last row group that is partly
full and one that is exactly full (the append then starts a new row group). `--block-sizes`: the
files' block sizes (DuckDB's `default_block_size`, applied to the new file; default 262144, DuckDB's
own).

    ./uvw run --locked python bench/duckdb_append_blocks.py --rows 100000 122880 --append 2000 \
        [--block-sizes 262144 65536 16384]
"""

from __future__ import annotations

import argparse
import ctypes
import sys
import tempfile
from pathlib import Path

import duckdb

CONFIG = {"memory_limit": "128MB", "threads": 1}  # the daemon's bounds


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise SystemExit("no VmRSS in /proc/self/status (Linux only)")


def purge() -> None:
    """DuckDB's freed pages back to the system (its Linux wheel's own jemalloc)."""
    mallctl = ctypes.CDLL(sys.modules["_duckdb"].__file__).duckdb_je_mallctl
    mallctl(b"arena.4096.purge", None, None, None, 0)


def columns() -> str:
    numbers = ", ".join(f"random() AS d{j}" for j in range(30))
    names = ", ".join(f"'name-' || (i % 100) AS s{j}" for j in range(7))
    return f"i, {numbers}, {names}"


def measure(db: Path, rows: int, append: int, block_size: int) -> tuple[float, float]:
    with duckdb.connect(str(db), config={**CONFIG, "default_block_size": block_size}) as con:
        con.execute(f"CREATE TABLE t AS SELECT {columns()} FROM range({rows}) r(i)")
        con.execute("CHECKPOINT")
    with duckdb.connect(str(db), config=CONFIG) as con:
        con.execute("SELECT count(*) FROM t").fetchall()
        purge()
        before = rss_mb()
        con.execute("BEGIN")
        con.execute(f"INSERT INTO t SELECT {columns()} FROM range({rows}, {rows + append}) r(i)")
        con.execute("COMMIT")
        purge()
        found = con.execute(
            "SELECT sum(memory_usage_bytes) FROM duckdb_memory() WHERE tag = 'IN_MEMORY_TABLE'"
        ).fetchone()
        return (found[0] if found else 0) / 1e6, rss_mb() - before


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000, 122_880])
    parser.add_argument("--append", type=int, nargs="+", default=[1, 2000])
    parser.add_argument("--block-sizes", type=int, nargs="+", default=[262_144])
    args = parser.parse_args()
    print(f"duckdb {duckdb.__version__}")
    for block_size in args.block_sizes:
        for rows in args.rows:
            for append in args.append:
                with tempfile.TemporaryDirectory() as tmp:
                    accounted, grown = measure(Path(tmp) / "t.duckdb", rows, append, block_size)
                print(
                    f"{block_size // 1024} KiB blocks, {rows:,} rows checkpointed, {append:,} "
                    f"appended: IN_MEMORY_TABLE {accounted:.1f} MB, RSS +{grown:.1f} MB until "
                    "the next checkpoint"
                )


if __name__ == "__main__":
    main()
