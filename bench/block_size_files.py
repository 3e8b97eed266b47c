"""What a store file's block size does to its size: the same snapshot ingested into files of each
block size, then each file's size, its used blocks, the size of the same data copied into a
fresh file (COPY FROM DATABASE), how DuckDB compressed the DOUBLE columns of
`core.current_offers` (segments per compression), and what a full read of four of its columns
costs a fresh read-only process with a reader's bounds (128 MB, one thread): DuckDB's buffer
pool afterwards (`BASE_TABLE` pages it keeps), RSS growth and CPU, `--scans` times each.

    ./uvw run --locked python bench/block_size_files.py [--offers 100000 1000000]
        [--block-sizes 262144 65536 16384] [--scans 3]

Each database is built as bench_startup.py builds its own (one synthetic snapshot through the
real ingest, then the storage-order rewrite of the fetch session), with DuckDB's
`default_block_size` set for the new file.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import duckdb
from bench_ingest_history import compact_size
from bench_startup import build

DOUBLES = """
SELECT compression, count(*) FROM pragma_storage_info('core.current_offers')
WHERE segment_type = 'DOUBLE' GROUP BY ALL ORDER BY ALL
"""


SCAN = """
import sys, time, duckdb
from pathlib import Path
def rss():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
con = duckdb.connect(sys.argv[1], read_only=True, config={"memory_limit": "128MB", "threads": 1})
before, cpu = rss(), time.process_time()
con.execute(
    "SELECT sum(price_hour_usd), sum(price_gpu_hour_usd), sum(price_hour_original), "
    "count(DISTINCT instance_type) FROM core.current_offers"
).fetchall()
cpu = time.process_time() - cpu
held = con.execute(
    "SELECT sum(memory_usage_bytes) FROM duckdb_memory() WHERE tag = 'BASE_TABLE'"
).fetchone()[0]
print(f"buffer pool {held / 1e6:.1f} MB, RSS +{rss() - before:.1f} MB, CPU {cpu:.3f} s")
"""


def scanned(db: Path) -> str:
    """A full read of three prices and a name, in a fresh process."""
    command = [sys.executable, "-c", SCAN, str(db)]
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout.strip()


def describe(db: Path) -> str:
    con = duckdb.connect(str(db), read_only=True)
    try:
        found = con.execute(
            "SELECT block_size, total_blocks, free_blocks FROM pragma_database_size()"
        ).fetchone()
        assert found is not None
        size, total, free = found
        doubles = ", ".join(f"{kind} {n}" for kind, n in con.execute(DOUBLES).fetchall())
    finally:
        con.close()
    return (
        f"{size // 1024} KiB blocks: file {db.stat().st_size / 2**20:.1f} MB, "
        f"{(total - free) * size / 2**20:.1f} MB in used blocks, "
        f"copied into a fresh file {compact_size(db, size):.1f} MB; "
        f"DOUBLE segments of core.current_offers: {doubles}"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--offers", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--block-sizes", type=int, nargs="+", default=[262_144, 65_536, 16_384])
    parser.add_argument("--scans", type=int, default=3)
    args = parser.parse_args()
    print(f"duckdb {duckdb.__version__}")
    with tempfile.TemporaryDirectory() as tmp:
        for offers in args.offers:
            for block_size in args.block_sizes:
                db = Path(tmp) / f"offers-{offers}-{block_size}.duckdb"
                build(db, offers, block_size)
                print(f"{offers:,} offers, {describe(db)}", flush=True)
                for _ in range(args.scans):
                    print(f"  full read: {scanned(db)}", flush=True)
                db.unlink()


if __name__ == "__main__":
    main()
