"""The schema of a store: numbered migrations (each applied in one transaction together with
its bookkeeping row), the views re-created on every writer open, and the shipped GPU and region
catalogs reloaded so an upgrade's catalog takes effect."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from priceadvisor.clock import utcnow
from priceadvisor.resources import migrations_dir, views_dir
from priceadvisor.store.errors import StoreError, first_line
from priceadvisor.store.transactions import atomic, is_conflict

if TYPE_CHECKING:
    from priceadvisor.store import columns

_MIGRATION_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


def migrations() -> list[tuple[int, Path]]:
    # The names listed, not globbed: every reader checks the version (pathlib's glob cost a
    # start ~1 ms).
    folder = migrations_dir()
    found = []
    for name in sorted(n for n in os.listdir(folder) if n.endswith(".sql")):
        match = _MIGRATION_NAME.match(name)
        if not match:
            raise StoreError(f"migration file name {name!r} is not NNNN_name.sql")
        found.append((int(match.group(1)), folder / name))
    return found


def latest_version() -> int:
    return max(version for version, _ in migrations())


def check_version(con: duckdb.DuckDBPyConnection, path: Path | str, older_ok: bool = False) -> None:
    """Refuse a store this version cannot read: none, older (unless `older_ok`) or newer."""
    try:
        row = con.execute("SELECT max(version) FROM core.schema_migrations").fetchone()
    except duckdb.CatalogException:
        raise StoreError(f"{path} is not a priceadvisor database") from None
    version = row[0] if row else None
    latest = latest_version()
    if version is None or (version < latest and not older_ok):
        raise StoreError(
            f"database {path} has schema version {version}, this priceadvisor needs "
            f"{latest}: run `priceadvisor fetch` once to upgrade it"
        )
    if version > latest:
        raise StoreError(f"database {path} was written by a newer priceadvisor (v{version})")


def has_schema(con: duckdb.DuckDBPyConnection) -> bool:
    row = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'core' "
        "AND table_name = 'schema_migrations' AND database_name = current_database()"
    ).fetchone()
    return bool(row and row[0])


def prepare(con: duckdb.DuckDBPyConnection) -> None:
    """Everything a writer does on open: migrate, refresh catalogs, views, sequences behind their
    tables (store.ids), stale runs."""
    # Writers only: a reader (`prices`, cli/light.py) imports none of these modules.
    from priceadvisor.store import ids, runs  # noqa: PLC0415

    migrate(con)
    refresh_catalog(con)
    create_views(con)
    ids.repair_sequences(con)
    runs.mark_abandoned_runs(con)


def migrate(con: duckdb.DuckDBPyConnection) -> list[int]:
    """Apply the missing migrations; on a lake in DuckLake's dialect (store.lakesql)."""
    from priceadvisor.store import lake  # noqa: PLC0415 - writers only

    on_lake = lake.is_lake(con)
    con.execute("CREATE SCHEMA IF NOT EXISTS core")
    con.execute(
        _dialect(
            "CREATE TABLE IF NOT EXISTS core.schema_migrations "
            "(version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL)",
            on_lake,
        )
    )
    if on_lake:
        from priceadvisor.store import lakesql  # noqa: PLC0415 - lakes only

        con.execute(lakesql.COUNTERS_DDL)
    applied = {r[0] for r in con.execute("SELECT version FROM core.schema_migrations").fetchall()}
    if applied and max(applied) > latest_version():
        # Writing with an older schema's idea of the tables would corrupt a newer database.
        raise StoreError(
            f"the database was written by a newer priceadvisor (schema v{max(applied)}, "
            f"this one knows v{latest_version()})"
        )
    done = []
    for version, path in migrations():
        if version not in applied:
            _apply(con, version, path, on_lake)
            done.append(version)
    return done


def _dialect(sql: str, on_lake: bool) -> str:
    if not on_lake:
        return sql
    from priceadvisor.store import lakesql  # noqa: PLC0415 - lakes only

    return lakesql.translate(sql)


def _apply(con: duckdb.DuckDBPyConnection, version: int, path: Path, on_lake: bool) -> None:
    try:
        with atomic(con):
            con.execute(_dialect(path.read_text(encoding="utf-8"), on_lake))
            con.execute(
                "INSERT INTO core.schema_migrations VALUES (?, ?, ?)",
                [version, path.stem, utcnow()],
            )
    except duckdb.Error as exc:
        if is_conflict(exc):
            raise  # another writer migrated the lake at the same time: _prepare_lake_once retries
        raise StoreError(f"migration {path.name} failed: {first_line(exc)}") from None


def create_views(con: duckdb.DuckDBPyConnection) -> None:
    for path in sorted(views_dir().glob("*.sql")):
        con.execute(path.read_text(encoding="utf-8"))


def refresh_catalog(con: duckdb.DuckDBPyConnection) -> None:
    """Reload gpus and regions from the shipped TOML so an upgrade's catalog takes effect.

    Rows go in as Arrow arrays: executemany costs ~1 ms a row in DuckDB, this ~1 ms in all.
    """
    # The catalogs load here, for writers: a reader never parses them (cli/light.py's start)
    from dataclasses import asdict  # noqa: PLC0415

    from priceadvisor.gpu_specs import gpu_catalog, region_catalog  # noqa: PLC0415

    gpu_rows = [
        {
            "gpu_model": g.id,
            "name": g.name,
            "vendor": g.vendor,
            "family": g.family,
            "variant": g.variant,
            "memory_gb": g.memory_gb,
            "kind": g.kind,
            **g.specs,
        }
        for g in gpu_catalog().gpus.values()
    ]
    region_rows = [asdict(r) for r in region_catalog().values()]
    from priceadvisor.store import columns  # noqa: PLC0415 - nanoarrow: only writers sync

    con.register("_catalog_gpus", columns.from_rows(gpu_rows, _GPU_COLUMNS))
    con.register("_catalog_regions", columns.from_rows(region_rows, _REGION_COLUMNS))
    # Only the columns the table has: a database part-way through an upgrade (migrations run
    # before this on every start) never fails on a column a later migration adds.
    present = {row[0] for row in con.execute("DESCRIBE core.gpus").fetchall()}
    wanted = ", ".join(f'"{c}"' for c in _GPU_COLUMNS if c in present)
    with atomic(con):
        con.execute("DELETE FROM core.gpus")
        con.execute(f"INSERT INTO core.gpus BY NAME SELECT {wanted} FROM _catalog_gpus")
        con.execute("DELETE FROM core.regions")
        con.execute("INSERT INTO core.regions BY NAME SELECT * FROM _catalog_regions")
    con.unregister("_catalog_gpus")
    con.unregister("_catalog_regions")


_GPU_COLUMNS: columns.Schema = {
    "gpu_model": "string",
    "name": "string",
    "vendor": "string",
    "family": "string",
    "variant": "string",
    "architecture": "string",
    "memory_gb": "float",
    "memory_type": "string",
    "memory_bandwidth_gbs": "float",
    "bf16_dense_tflops": "float",
    "fp16_dense_tflops": "float",
    "fp8_dense_tflops": "float",
    "int8_dense_tops": "float",
    "fp32_tflops": "float",
    "tdp_w": "float",
    "interconnect": "string",
    "nvlink_bandwidth_gbs": "float",
    "form_factor": "string",
    "launch_year": "int",
    "approx_list_price_usd": "float",
    "source": "string",
    "notes": "string",
    "kind": "string",
}
_REGION_COLUMNS: columns.Schema = {
    "provider": "string",
    "region": "string",
    "city": "string",
    "country": "string",
    "country_name": "string",
    "continent": "string",
    "is_eu": "bool",
}
