"""Which DuckDB releases open the files this project's DuckDB writes: a plain table and one
with a PRIMARY KEY (every store has primary keys), each in a file of DuckDB's default 256 KiB
blocks and one of 16 KiB blocks. Each file is opened read-only, read, then written and
checkpointed by every given Python (each with another DuckDB installed), on a copy.

    ./uvw venv /tmp/duckdb-1.0 --python 3.11
    ./uvw pip install --python /tmp/duckdb-1.0/bin/python duckdb==1.0.0   # and so on
    ./uvw run --locked python bench/duckdb_file_compat.py \\
        --pythons /tmp/duckdb-1.0/bin/python /tmp/duckdb-1.1/bin/python ...
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
from pathlib import Path

import duckdb

TABLES = {
    "plain table": "CREATE TABLE t AS SELECT range AS i, 'x' || range AS s FROM range(100000)",
    "primary key": "CREATE TABLE t (i BIGINT PRIMARY KEY, s VARCHAR); "
    "INSERT INTO t SELECT range, 'x' || range FROM range(100000)",
}
OPEN = """
import sys, duckdb
con = duckdb.connect(sys.argv[1], read_only=True)
con.execute("SELECT count(*) FROM t").fetchall()
con.close()
con = duckdb.connect(sys.argv[1])
con.execute("INSERT INTO t SELECT 100000 + range, 'y' FROM range(5000)")
con.execute("CHECKPOINT")
con.close()
print(duckdb.__version__)
"""


def make(folder: Path) -> list[Path]:
    made = []
    for name, sql in TABLES.items():
        for block_size in (262_144, 16_384):
            path = folder / f"{name.replace(' ', '-')}-{block_size // 1024}k.duckdb"
            with duckdb.connect(str(path), config={"default_block_size": block_size}) as con:
                con.execute(sql)
            made.append(path)
    return made


def opens(python: str, path: Path, scratch: Path) -> str:
    copy = scratch / path.name
    shutil.copy(path, copy)
    try:
        command = [python, "-c", OPEN, str(copy)]
        done = subprocess.run(command, check=False, capture_output=True, text=True)
    finally:
        copy.unlink()
        copy.with_name(copy.name + ".wal").unlink(missing_ok=True)
    if done.returncode == 0:
        return "opens, reads, writes"
    return (done.stderr.strip().splitlines() or ["failed"])[-1][:140]


def version(python: str) -> str:
    command = [python, "-c", "import duckdb; print(duckdb.__version__)"]
    found = subprocess.run(command, check=False, capture_output=True, text=True)
    return found.stdout.strip() or "?"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pythons", nargs="+", required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder, scratch = Path(tmp) / "files", Path(tmp) / "scratch"
        folder.mkdir()
        scratch.mkdir()
        files = make(folder)
        print(f"written by duckdb {duckdb.__version__}")
        for python in args.pythons:
            for path in files:
                print(f"duckdb {version(python)}, {path.stem}: {opens(python, path, scratch)}")


if __name__ == "__main__":
    main()
