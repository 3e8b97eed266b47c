"""What a store file's block size does to its size: the same snapshot ingested into files of each
block size, then each file's size, its used blocks, the size of the same data copied into a
fresh file (COPY FROM DATABASE) and how DuckDB compressed the DOUBLE columns of
`core.current_offers` (segments per compression).

    ./uvw run --locked python bench/block_size_files.py [--offers 100000 1000000]
        [--block-sizes 262144 65536 16384]

Each database is built as bench_startup.py builds its own (one synthetic snapshot through the
real ingest, then the storage-order rewrite of the fetch session), with DuckDB's
`default_block_size` set for the new file.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import duckdb
from bench_startup import build

DOUBLES = """
SELECT compression, count(*) FROM pragma_storage_info('core.current_offers')
WHERE segment_type = 'DOUBLE' GROUP BY ALL ORDER BY ALL
"""


def copied_mb(db: Path, block_size: int) -> float:
    copy = db.with_suffix(".copy.duckdb")
    con = duckdb.connect()
    try:
        con.execute(f"ATTACH '{db}' AS src (READ_ONLY)")
        con.execute(f"ATTACH '{copy}' AS dst (BLOCK_SIZE {block_size})")
        con.execute("COPY FROM DATABASE src TO dst")
        con.execute("DETACH dst")
        return copy.stat().st_size / 2**20
    finally:
        con.close()
        copy.unlink(missing_ok=True)


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
        f"copied into a fresh file {copied_mb(db, size):.1f} MB; "
        f"DOUBLE segments of core.current_offers: {doubles}"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--offers", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--block-sizes", type=int, nargs="+", default=[262_144, 65_536, 16_384])
    args = parser.parse_args()
    print(f"duckdb {duckdb.__version__}")
    with tempfile.TemporaryDirectory() as tmp:
        for offers in args.offers:
            for block_size in args.block_sizes:
                db = Path(tmp) / f"offers-{offers}-{block_size}.duckdb"
                build(db, offers, block_size)
                print(f"{offers:,} offers, {describe(db)}", flush=True)
                db.unlink()


if __name__ == "__main__":
    main()
