"""Parquet export for analysts: readable by any engine without touching the database lock.

Layout under the target folder (hive partitioning by day):
    price_history/day=YYYY-MM-DD/*.parquet   (partitioned by valid_from)
    fetch_runs/day=YYYY-MM-DD/*.parquet      (partitioned by started_at)
    offers.parquet, gpus.parquet, regions.parquet, fx_rates.parquet
    api_prices.parquet                       (LLM API token prices with their history: small)
    .priceadvisor-export                     (the files this export wrote, one a line)
The export is written beside the target and swapped in, so readers never see half of one. The
target must be missing, empty or an earlier export holding only the files that export listed:
an export replaces its own files and never deletes anything else.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import duckdb

from priceadvisor.store import errors
from priceadvisor.store.handle import Store

_PARTITIONED = {"price_history": "valid_from", "fetch_runs": "started_at"}
_WHOLE = ("offers", "gpus", "regions", "fx_rates", "api_prices")  # one file per table
MANIFEST = ".priceadvisor-export"


class ExportError(errors.StoreError):
    """The export cannot go where it was asked to; the message is one line."""


def export_database(store: Store, target: Path) -> dict[str, int]:
    """Export `store` into `target` through a reader that may write only into its own
    staging folder; return rows written per table."""
    check_target(target)
    staging = _staging_dir(target)
    try:
        with store.reader(writable_dir=staging) as con:
            counts = export_parquet(con, staging)
        _write_manifest(staging)
        _swap(staging, target)
    except OSError as exc:
        raise ExportError(f"cannot export to {target}: {exc.strerror or exc}") from None
    except duckdb.Error as exc:
        raise ExportError(f"export to {target} failed: {errors.first_line(exc)}") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return counts


def export_parquet(con: duckdb.DuckDBPyConnection, folder: Path) -> dict[str, int]:
    """Write every public table into an empty `folder`; return rows written per table."""
    counts = {}
    for view, column in _PARTITIONED.items():
        counts[view] = _copy(
            con,
            f"SELECT *, CAST({column} AS DATE) AS day FROM {view}",
            folder / view,
            "FORMAT parquet, PARTITION_BY (day)",
        )
    for view in _WHOLE:
        counts[view] = _copy(
            con, f"SELECT * FROM {view}", folder / f"{view}.parquet", "FORMAT parquet"
        )
    return counts


def check_target(target: Path) -> None:
    """Refuse a target whose replacement would delete files an export did not write."""
    if not target.exists():
        return
    if not target.is_dir():
        raise ExportError(f"export target {target} exists and is not a directory")
    present = _files_under(target)
    if not present:
        return
    if MANIFEST not in present:
        raise ExportError(
            f"export target {target} is not empty and not an earlier priceadvisor export; "
            "choose an empty or new folder"
        )
    foreign = sorted(present - _listed(target) - {MANIFEST})
    if foreign:
        raise ExportError(
            f"export target {target} holds {len(foreign)} file(s) an export did not write "
            f"(e.g. {foreign[0]}); move them away first"
        )


def _files_under(folder: Path) -> set[str]:
    try:
        return {
            str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() or p.is_symlink()
        }
    except OSError as exc:
        raise ExportError(f"cannot read export target {folder}: {exc.strerror or exc}") from None


def _listed(folder: Path) -> set[str]:
    text = (folder / MANIFEST).read_text(encoding="utf-8", errors="replace")
    return {line for line in text.splitlines() if line}


def _write_manifest(folder: Path) -> None:
    names = sorted(_files_under(folder))
    (folder / MANIFEST).write_text("".join(f"{n}\n" for n in names), encoding="utf-8")


def _staging_dir(target: Path) -> Path:
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=f".{target.name}.staging-", dir=target.parent))
    except OSError as exc:
        raise ExportError(f"cannot export to {target}: {exc.strerror or exc}") from None


def _copy(con: duckdb.DuckDBPyConnection, query: str, path: Path, options: str) -> int:
    row = con.execute(f"COPY ({query}) TO '{_quoted(path)}' ({options})").fetchone()
    return int(row[0]) if row else 0


def _quoted(path: Path) -> str:
    return str(path).replace("'", "''")


def _swap(staging: Path, target: Path) -> None:
    """Move the checked earlier export aside (a fresh empty name, so nothing is overwritten),
    move the new one in, then delete the old one: only files an export listed."""
    if not target.exists():
        staging.rename(target)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
    target.rename(old)
    staging.rename(target)
    shutil.rmtree(old, ignore_errors=True)
