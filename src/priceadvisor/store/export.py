"""Parquet export for analysts: readable by any engine without touching the database lock.

Layout under the target folder (hive partitioning by day):
    price_history/day=YYYY-MM-DD/*.parquet   (partitioned by valid_from)
    fetch_runs/day=YYYY-MM-DD/*.parquet      (partitioned by started_at)
    offers.parquet, gpus.parquet, regions.parquet, fx_rates.parquet
The export is written beside the target and swapped in, so readers never see half of one.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb

_PARTITIONED = {"price_history": "valid_from", "fetch_runs": "started_at"}
_SNAPSHOTS = ("offers", "gpus", "regions", "fx_rates")


def export_parquet(con: duckdb.DuckDBPyConnection, target: Path) -> dict[str, int]:
    """Write every public table; return rows written per table."""
    staging = target.with_name(f".{target.name}.staging")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    counts = {}
    for view, column in _PARTITIONED.items():
        counts[view] = _copy(
            con,
            f"SELECT *, CAST({column} AS DATE) AS day FROM {view}",
            staging / view,
            "FORMAT parquet, PARTITION_BY (day)",
        )
    for view in _SNAPSHOTS:
        counts[view] = _copy(
            con, f"SELECT * FROM {view}", staging / f"{view}.parquet", "FORMAT parquet"
        )
    _swap(staging, target)
    return counts


def _copy(con: duckdb.DuckDBPyConnection, query: str, path: Path, options: str) -> int:
    row = con.execute(f"COPY ({query}) TO '{_quoted(path)}' ({options})").fetchone()
    return int(row[0]) if row else 0


def _quoted(path: Path) -> str:
    return str(path).replace("'", "''")


def _swap(staging: Path, target: Path) -> None:
    old = target.with_name(f".{target.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    if target.exists():
        target.rename(old)
    staging.rename(target)
    shutil.rmtree(old, ignore_errors=True)
