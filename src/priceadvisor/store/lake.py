"""DuckLake: the same tables and views in a lakehouse (catalog in PostgreSQL, SQLite or a DuckDB
file; data in Parquet files in a directory or on S3), for many writers and readers on many hosts.

A lake connection is an in-memory DuckDB with the lake attached as `lake` and made the default
catalog, so `core.fetch_runs` and the views in `main` resolve exactly as in the DuckDB file.

Extensions never come from the network: ducklake, postgres and httpfs are loaded from the files
of the PyPI packages pinned to our DuckDB (`duckdb-extension-*`), with autoinstall and autoload
switched off on the connection.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from priceadvisor.store.errors import StoreError, first_line

ALIAS = "lake"
Config = dict[str, str | bool | int | float | list[str]]
_NO_EXTENSIONS: Config = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}
# Extension name -> the PyPI package (import name) that ships <name>.duckdb_extension. DuckDB
# finds an extension's entry point from its file name, so the packages named after the
# extension are used (duckdb-extension-postgres ships the same library as postgres.duckdb_extension,
# which does not load under that name).
_EXTENSIONS = {
    "ducklake": "duckdb_extension_ducklake",
    "postgres_scanner": "duckdb_extension_postgres_scanner",
    "sqlite_scanner": "duckdb_extension_sqlite_scanner",
    "httpfs": "duckdb_extension_httpfs",
}
# The name of the temporary DuckDB secret that holds the catalog password (not a password).
_CATALOG_CREDENTIAL = "priceadvisor_catalog"
_PASSWORD = re.compile(r"(password\s*=\s*)('[^']*'|\S+)", re.IGNORECASE)


@dataclass(frozen=True)
class S3:
    """Object storage for the data files (any S3-compatible server)."""

    endpoint: str | None = None
    region: str | None = None
    url_style: str = "vhost"
    use_ssl: bool = True
    key_id: str | None = field(default=None, repr=False)
    secret: str | None = field(default=None, repr=False)


@dataclass(frozen=True)
class Lake:
    """Where a lake is: `catalog` is `postgres:<libpq DSN>`, `sqlite:<file>` or a DuckDB file;
    `data_path` a directory or `s3://bucket/prefix/`. `password` joins a PostgreSQL DSN only
    when attaching and never appears in a message."""

    catalog: str
    data_path: str
    password: str | None = field(default=None, repr=False)
    s3: S3 | None = None

    @property
    def kind(self) -> str:
        head = self.catalog.split(":", 1)[0]
        return head if head in {"postgres", "sqlite"} else "duckdb"

    def describe(self) -> str:
        """The lake for messages and logs: the catalog without any password."""
        return f"ducklake:{redact(self.catalog)} (data {self.data_path})"


def redact(text: str) -> str:
    return _PASSWORD.sub(r"\1***", text)


def extension_file(name: str) -> Path:
    """The extension's file in its PyPI package, for the DuckDB version we run."""
    package = _EXTENSIONS[name]
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise StoreError(f"the {name} extension is missing: install the {package} package")
    root = Path(next(iter(spec.submodule_search_locations)))
    path = root / "extensions" / f"v{duckdb.__version__}" / f"{name}.duckdb_extension"
    if not path.is_file():
        raise StoreError(f"{package} has no extension for DuckDB {duckdb.__version__} ({path})")
    return path


def load_extensions(con: duckdb.DuckDBPyConnection, names: list[str]) -> None:
    for name in names:
        literal = str(extension_file(name)).replace("'", "''")
        try:
            con.execute(f"LOAD '{literal}'")
        except duckdb.Error as exc:
            raise StoreError(f"cannot load the {name} extension: {first_line(exc)}") from None


def needed_extensions(lake: Lake) -> list[str]:
    names = ["ducklake"]
    if lake.kind == "postgres":
        names.append("postgres_scanner")
    if lake.kind == "sqlite":
        names.append("sqlite_scanner")
    if lake.data_path.startswith("s3://"):
        names.append("httpfs")
    return names


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _attach_target(lake: Lake) -> str:
    if lake.kind == "postgres" and lake.password:
        # The postgres type comes from METADATA_PARAMETERS (see _password_options).
        return "ducklake:" + lake.catalog.removeprefix("postgres:")
    return f"ducklake:{lake.catalog}"


def _password_options(con: duckdb.DuckDBPyConnection, lake: Lake) -> list[str]:
    """The catalog's password goes into a temporary postgres secret, not into the DSN: an
    attached database's DSN is readable by any query (duckdb_databases()), a secret is not."""
    if lake.kind != "postgres" or not lake.password:
        return []
    con.execute(
        f"CREATE OR REPLACE TEMPORARY SECRET {_CATALOG_CREDENTIAL} "
        f"(TYPE postgres, PASSWORD {_quote(lake.password)})"
    )
    return [f"METADATA_PARAMETERS MAP {{'TYPE': 'postgres', 'SECRET': '{_CATALOG_CREDENTIAL}'}}"]


def _create_s3_secret(con: duckdb.DuckDBPyConnection, s3: S3) -> None:
    """A temporary (in-memory) secret: credentials never reach a file or the catalog."""
    options = ["TYPE s3", f"URL_STYLE {_quote(s3.url_style)}", f"USE_SSL {str(s3.use_ssl).lower()}"]
    for key, value in (
        ("ENDPOINT", s3.endpoint),
        ("REGION", s3.region),
        ("KEY_ID", s3.key_id),
        ("SECRET", s3.secret),
    ):
        if value:
            options.append(f"{key} {_quote(value)}")
    con.execute(f"CREATE OR REPLACE TEMPORARY SECRET priceadvisor_s3 ({', '.join(options)})")


def attach(
    con: duckdb.DuckDBPyConnection,
    lake: Lake,
    read_only: bool = False,
    snapshot_time: dt.datetime | None = None,
    alias: str = ALIAS,
) -> None:
    """Attach `lake` as `alias` on `con` (extensions loaded here), the default catalog when
    that is `lake`; with `snapshot_time` (naive UTC), as the lake was then (time travel)."""
    load_extensions(con, needed_extensions(lake))
    if lake.s3 is not None:
        _create_s3_secret(con, lake.s3)
    options = [f"DATA_PATH {_quote(lake.data_path)}", *_password_options(con, lake)]
    if read_only:
        options.append("READ_ONLY")
    if snapshot_time is not None:
        options.append(f"SNAPSHOT_TIME '{snapshot_time.isoformat(sep=' ')}+00'")
    sql = f"ATTACH {_quote(_attach_target(lake))} AS {alias} ({', '.join(options)})"
    try:
        con.execute(sql)
    except duckdb.Error as exc:
        if snapshot_time is not None and "No snapshot found" in str(exc):
            raise StoreError(
                f"{lake.describe()} has no snapshot as early as {snapshot_time:%Y-%m-%d %H:%M:%S}"
                " UTC (maintenance expires those older than [lake] snapshot_retention)"
            ) from None
        # DuckDB may echo the DSN (and so the password) in its message.
        raise StoreError(f"cannot attach {lake.describe()}: {redact(first_line(exc))}") from None
    if alias == ALIAS:
        con.execute(f"USE {ALIAS}")


@contextmanager
def connect(
    lake: Lake,
    read_only: bool = False,
    config: Config | None = None,
    snapshot_time: dt.datetime | None = None,
) -> Iterator[duckdb.DuckDBPyConnection]:
    """An in-memory DuckDB with the lake attached and current; closed at the end."""
    if lake.kind == "duckdb" and read_only and not Path(lake.catalog).is_file():
        raise StoreError(f"no lake catalog at {lake.catalog}: run `priceadvisor fetch` first")
    con = duckdb.connect(":memory:", config={**(config or {}), **_NO_EXTENSIONS})
    con.execute("SET enable_progress_bar = false")  # as db.quiet: it draws on stdout
    try:
        attach(con, lake, read_only, snapshot_time)
        yield con
    finally:
        con.close()


def is_lake(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether `con`'s default catalog is a lake (so lake SQL rules apply)."""
    row = con.execute("SELECT current_database()").fetchone()
    return bool(row and row[0] == ALIAS)


def local_data_dir(lake: Lake) -> Path | None:
    if lake.data_path.startswith("s3://"):
        return None
    return Path(os.path.expanduser(lake.data_path))
