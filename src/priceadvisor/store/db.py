"""DuckDB file: connections (one writer, many readers), migrations, views, catalog tables.

One writer: read-write connections are opened only around a write (open, write, checkpoint,
close) and retried while another process holds the lock; readers open read-only and retry too.
Most writes give up after `lock_timeout`; writes of fetched data wait their turn however long it
takes (see `writer`), so a reader holding the file never costs a snapshot. Migrations are
numbered SQL files, each applied in one transaction together with its bookkeeping row; views are
re-created on every writer open.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
import os
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ParamSpec, TypeVar

import duckdb

from priceadvisor.catalog import gpu_catalog, region_catalog
from priceadvisor.config_light import ReaderBounds, ReaderDefaults, reader_config
from priceadvisor.models import utcnow
from priceadvisor.resources import migrations_dir, views_dir
from priceadvisor.store import asof, lake, lakesql
from priceadvisor.store.errors import StoreError, first_line

if TYPE_CHECKING:
    from priceadvisor.config_light import DbSettings
    from priceadvisor.store import columns

log = logging.getLogger(__name__)
P = ParamSpec("P")
T = TypeVar("T")
# Callers catch store.StoreError and use store.first_line, which live in store.errors.
__all__ = ["StoreError", "first_line"]

_MIGRATION_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")
# DuckDB's words for a file another process holds. Precise on purpose: "lock" alone also
# matches "block" in a corrupt-file error, which must fail at once rather than be waited out.
_LOCK_MARKERS = ("Could not set lock on file", "Conflicting lock is held")
# PostgreSQL's messages for SQLSTATE 40001 and 40P01, as DuckLake's errors quote them.
_CATALOG_ROLLBACKS = ("could not serialize access", "deadlock detected")
_HOLDER = re.compile(r"Conflicting lock is held in (.+?) \(PID (\d+)\)")


def migrations() -> list[tuple[int, Path]]:
    found = []
    for path in sorted(migrations_dir().glob("*.sql")):
        match = _MIGRATION_NAME.match(path.name)
        if not match:
            raise StoreError(f"migration file name {path.name!r} is not NNNN_name.sql")
        found.append((int(match.group(1)), path))
    return found


def latest_version() -> int:
    return max(version for version, _ in migrations())


# Connections of one process to one file share a database instance: see _connection.
_WRITE_LOCK = threading.Lock()
# Extra DuckDB settings for every connection this process opens; the daemon bounds memory here.
Config = dict[str, str | bool | int | float | list[str]]
CONNECTION_CONFIG: Config = {}
# No connection ever fetches or loads an extension behind the user's back: a SQLite file at the
# database path or an s3:// URL in a query would otherwise download sqlite_scanner or httpfs.
_NO_EXTENSIONS: Config = {
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
}
# Readers (the `sql` command, reports, exports) see the database file and nothing else: no other
# file, no network, no extension, and the settings cannot be changed by a statement. DuckDB checks
# these itself, so they hold for any statement that slips past the CLI's own statement check.
# The configuration is locked by a statement right after the connection is made quiet (`_open`).
_SEALED: Config = {
    **_NO_EXTENSIONS,
    "enable_external_access": False,
    "allow_community_extensions": False,
}
# Every reader's memory limit and threads ([readers]), part of its connect-time configuration so
# the lock that follows keeps a statement from raising them. The process's CONNECTION_CONFIG
# (the daemon's tighter bound) wins where both set a value.
READER_LIMITS: Config = dict(reader_config(ReaderDefaults()))
_SQLITE_MAGIC = b"SQLite format 3\x00"
_prepared: set[Path | str] = set()


class _CounterMoved(RuntimeError):
    """Another writer took the id we read: read the counter again."""


def is_conflict(exc: Exception) -> bool:
    """A lake commit that lost to a concurrent writer's: nothing of it was written, and running
    the transaction again is the way on. Either DuckLake's own snapshot conflict check, or a
    PostgreSQL catalog rolling the transaction back because a concurrent one touched the same
    rows (a serialization failure or a deadlock, both retryable by PostgreSQL's own account),
    which DuckLake 1.5.5 passes on as a plain error: seen when a flush of inlined data and
    another writer's commit overlap. A DuckDB file never raises any of them."""
    text = str(exc)
    if isinstance(exc, duckdb.TransactionException) and "Transaction conflict" in text:
        return True
    return isinstance(exc, duckdb.Error) and any(m in text for m in _CATALOG_ROLLBACKS)


def _retry(
    on: Callable[[Exception], bool],
    attempts: int,
    wait_initial: float = 0.1,
    wait_max: float = 5.0,
    timeout: float | None = 45.0,
) -> Callable[[Callable[P, T]], Callable[P, T]]:
    """stamina.retry, imported when a retrying call first runs: read commands never retry,
    and importing stamina is ~10 ms of every command's start-up."""

    def decorate(work: Callable[P, T]) -> Callable[P, T]:
        @functools.wraps(work)
        def retrying(*args: P.args, **kwargs: P.kwargs) -> T:
            import stamina  # noqa: PLC0415 - on the first retrying call, not at start-up

            policy = stamina.retry(
                on=on,
                attempts=attempts,
                wait_initial=wait_initial,
                wait_max=wait_max,
                timeout=timeout,
            )
            return policy(work)(*args, **kwargs)

        return retrying

    return decorate


def conflict_retry(
    attempts: int = 10, on: Callable[[Exception], bool] = is_conflict
) -> Callable[[Callable[P, T]], Callable[P, T]]:
    """The one policy for a commit lost to another lake writer: the work (a whole transaction)
    runs again on a fresh snapshot after a jittered backoff of up to 5 s, `attempts` times.
    `on` widens what counts as lost (a step with a failure of its own that means the same)."""
    return _retry(on, attempts, wait_initial=0.05, wait_max=5.0, timeout=None)


# Runs a self-contained transaction (it begins, commits or rolls back) again after a conflict.
retry_conflicts = conflict_retry()


# Where the data is: a DuckDB file, or a DuckLake (storage = "ducklake").
Target = Path | lake.Lake


def target(settings: DbSettings) -> Target:
    """The configured store: the DuckDB file (--db, PRICEADVISOR_DB) or the [lake]. The light
    read settings never name a lake (config_light defers any storage key to the full load)."""
    lake_settings = getattr(settings, "lake", None)
    if getattr(settings, "storage", "duckdb") == "ducklake" and lake_settings is not None:
        return lake.from_settings(settings, lake_settings)  # type: ignore[arg-type]
    return settings.db_path()


def change_stamp(con: duckdb.DuckDBPyConnection, where: Target) -> int:
    """A number that changes whenever the data may have: a file's modification time, a lake's
    latest snapshot id."""
    if isinstance(where, lake.Lake):
        row = con.execute(f"SELECT max(snapshot_id) FROM ducklake_snapshots('{lake.ALIAS}')")
        found = row.fetchone()
        return int(found[0]) if found and found[0] is not None else 0
    return where.stat().st_mtime_ns


def describe(where: Target) -> str:
    """`where` for messages: a file's path, a lake's catalog without its password."""
    return where.describe() if isinstance(where, lake.Lake) else str(where)


class _Turn(threading.local):
    """Whether this thread holds the process's turn (to refuse a nested use)."""

    held = False


_TURN = _Turn()


@contextmanager
def _connection(
    path: Path,
    read_only: bool,
    lock_timeout: float,
    give_up: threading.Event | None = None,
    allowed: Path | None = None,
    extra: Config | None = None,
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection opened on this process's turn. In one process a read-only and a read-write
    connection to the same file cannot coexist (DuckDB refuses a second configuration) and two
    writers would conflict inside the shared instance, so all of them take turns."""
    if _TURN.held:
        # Waiting for its own turn would never end: a nested use is a programming error.
        raise StoreError(f"{path} is already open in this thread")
    if not _wait_for_turn(lock_timeout, give_up):
        raise StoreError(f"another use of {path} in this process did not finish in time")
    _TURN.held = True
    try:
        con = _open(
            path,
            read_only,
            {**_config(read_only, allowed), **(extra or {})},
            _LockWait(path, lock_timeout, give_up),
        )
        try:
            if allowed is not None:
                _seal_except(con, allowed)
            elif read_only:
                con.execute("SET lock_configuration = true")
            yield con
        finally:
            con.close()
    finally:
        _TURN.held = False
        _WRITE_LOCK.release()


class _Waiting:
    """How many threads wait for the process's turn: a holder that can hand it back early (the
    dashboard's shared reader) does so when anyone waits, so a write is never starved."""

    count = 0
    lock = threading.Lock()


def turn_wanted() -> bool:
    return _Waiting.count > 0


def _wait_for_turn(lock_timeout: float, give_up: threading.Event | None) -> bool:
    with _Waiting.lock:
        _Waiting.count += 1
    try:
        return _take_turn(lock_timeout, give_up)
    finally:
        with _Waiting.lock:
            _Waiting.count -= 1


def _take_turn(lock_timeout: float, give_up: threading.Event | None) -> bool:
    if give_up is None:
        return _WRITE_LOCK.acquire(timeout=lock_timeout)
    while not _WRITE_LOCK.acquire(timeout=0.5):
        if give_up.is_set():
            return False
    return True


@contextmanager
def writer(
    path: Target,
    lock_timeout: float = 10.0,
    give_up: threading.Event | None = None,
    vacuum: bool = True,
) -> Iterator[duckdb.DuckDBPyConnection]:
    """Read-write connection for one write job: migrated, views fresh; checkpointed on close.

    Without `give_up` it waits at most `lock_timeout` for other processes (readers, a CLI
    fetch, the daemon) to release the file. With it, the write waits its turn however long that
    takes, warning every `lock_timeout`, until `give_up` is set (the daemon's shutdown).
    On a lake there is no file lock to wait for: writers run at once and DuckLake orders their
    transactions (a conflicting commit fails with duckdb.TransactionException, see
    `retry_conflicts`).

    `vacuum=False`: the closing CHECKPOINT leaves the space of deleted rows in place (DuckDB's
    `max_vacuum_tasks=0`) instead of merging the row groups that hold them; the next writer
    session's checkpoint merges them (any change makes a checkpoint vacuum every table). For
    the hourly ingest, whose memory peaks in that merge (docs/benchmarks.md): every fetch cycle
    starts its runs in a writer session of its own, so the space is reclaimed an hour later."""
    if isinstance(path, lake.Lake):
        with _lake_writer(path) as con:
            yield con
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create a database at {path}: {exc.strerror or exc}") from None
    with (
        _connection(path, False, lock_timeout, give_up, extra=_vacuum_config(vacuum)) as con,
        _write_failures(path),
    ):
        _prepare_once(con, path.resolve())
        yield con
        con.execute("CHECKPOINT")


def _vacuum_config(vacuum: bool) -> Config:
    return {} if vacuum else {"max_vacuum_tasks": 0}


@contextmanager
def _lake_writer(target: lake.Lake) -> Iterator[duckdb.DuckDBPyConnection]:
    """No CHECKPOINT at the end: on a lake it compacts files and expires snapshots, which is
    maintenance for the operator (it would also cut the time travel short)."""
    described = target.describe()
    with lake.connect(target, config=CONNECTION_CONFIG) as con, _write_failures(described):
        _prepare_lake_once(con, described)
        yield con


@contextmanager
def _write_failures(path: Path | str) -> Iterator[None]:
    """A write the file system refused (disk full, read-only, I/O error) ends as one line
    with DuckDB's cause: a failed checkpoint is fatal, a failed WAL write fails the commit."""
    try:
        yield
    except (duckdb.IOException, duckdb.FatalException, duckdb.TransactionException) as exc:
        raise StoreError(f"writing {path} failed: {first_line(exc)}") from None


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """The block in one transaction: committed when it ends, rolled back when it raises."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield
        con.execute("COMMIT")
    except BaseException:
        rollback(con)  # a failed COMMIT has ended it already; rollback() stays quiet then
        raise


def rollback(con: duckdb.DuckDBPyConnection) -> None:
    """Roll back after a failure without hiding it: when the failure (a full disk, a fatal
    error) already ended the transaction, ROLLBACK raises too, and that error would mask the
    cause the caller is about to re-raise."""
    with suppress(duckdb.Error):
        con.execute("ROLLBACK")


def _prepare_once(con: duckdb.DuckDBPyConnection, key: Path | str) -> None:
    """Migrations, catalogs, views and stale runs: once per process per file (and again if the
    file was replaced, which its missing bookkeeping table shows)."""
    if key in _prepared and _has_schema(con):
        return
    prepare(con)
    _prepared.add(key)


@_retry(is_conflict, 5)
def _prepare_lake_once(con: duckdb.DuckDBPyConnection, key: str) -> None:
    """As _prepare_once; daemons starting together on one lake conflict here (both migrate or
    reload the catalog), and the loser simply runs again on the winner's result."""
    _prepare_once(con, key)


def _has_schema(con: duckdb.DuckDBPyConnection) -> bool:
    row = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'core' "
        "AND table_name = 'schema_migrations' AND database_name = current_database()"
    ).fetchone()
    return bool(row and row[0])


@contextmanager
def reader(
    path: Target,
    lock_timeout: float = 10.0,
    writable_dir: Path | None = None,
    as_of: dt.datetime | None = None,
) -> Iterator[duckdb.DuckDBPyConnection]:
    """Read-only connection sealed off from files, network, extensions and settings (only
    `writable_dir`, for an export, is reachable); refuses a file that is missing or from
    another schema version. A lake is attached READ_ONLY and sealed the same way once attached
    (its local data directory stays readable). With `as_of`, `offers` lists the offers of
    that moment (store.asof says how each store answers)."""
    if isinstance(path, lake.Lake):
        snapshot = asof.naive_utc(as_of) if as_of else None
        with lake.connect(path, True, _reader_base(), snapshot) as con:
            _seal_lake(con, path, writable_dir)
            _check_version(con, path.describe())
            yield con
        return
    if not path.is_file():
        raise StoreError(f"no database at {path}: run `priceadvisor fetch` (or `demo`) first")
    with _connection(path, True, lock_timeout, allowed=writable_dir) as con:
        _check_version(con, path)
        if as_of is not None:
            asof.shadow_offers(con, as_of)
        yield con


def open_shared_reader(path: Path, lock_timeout: float) -> duckdb.DuckDBPyConnection:
    """A sealed read-only connection to be shared by many threads (store.sharedreader): it
    holds the process's turn, in any thread, until `close_shared_reader`."""
    if not path.is_file():
        raise StoreError(f"no database at {path}: run `priceadvisor fetch` (or `demo`) first")
    if not _take_turn(lock_timeout, None):
        raise StoreError(f"another use of {path} in this process did not finish in time")
    try:
        con = _open(path, True, _config(True, None), _LockWait(path, lock_timeout, None))
    except BaseException:
        _WRITE_LOCK.release()
        raise
    try:
        con.execute("SET lock_configuration = true")
        _check_version(con, path)
    except BaseException:
        close_shared_reader(con)
        raise
    return con


def close_shared_reader(con: duckdb.DuckDBPyConnection) -> None:
    try:
        con.close()
    finally:
        _WRITE_LOCK.release()


@dataclass
class _LockWait:
    """Waiting while another process holds the file: bounded by `lock_timeout`, or (with a
    `give_up` event) until the event is set, with a warning every `lock_timeout`."""

    path: Path
    lock_timeout: float
    give_up: threading.Event | None
    started: float = field(default_factory=time.monotonic)
    delay: float = 0.05
    warned: float = 0.0
    holder: str = ""

    def pause(self) -> None:
        """Wait a moment before the next attempt, or raise StoreError when it is time to stop."""
        waited = time.monotonic() - self.started
        if self.give_up is None:
            if waited >= self.lock_timeout:
                raise StoreError(
                    f"database {self.path} is locked by another process{self.holder} "
                    "(a write in progress?); "
                    f"gave up after {self.lock_timeout:.0f} s"
                )
            time.sleep(self.delay)
        else:
            self._patient(waited)
        self.delay = min(self.delay * 2, 0.25)

    def _patient(self, waited: float) -> None:
        assert self.give_up is not None
        if waited - self.warned >= max(self.lock_timeout, 1.0):
            self.warned = waited
            log.warning(
                "database %s is held by another process%s; waiting our turn (%.0f s so far)",
                self.path,
                self.holder,
                waited,
            )
        if self.give_up.wait(self.delay):
            raise StoreError(f"stopped waiting for database {self.path}: shutting down")


def limit_readers(bounds: ReaderBounds) -> None:
    """Readers opened from now on run within `bounds` ([readers] of the configuration)."""
    READER_LIMITS.update(reader_config(bounds))


def _reader_base() -> Config:
    return {**READER_LIMITS, **CONNECTION_CONFIG}


def _config(read_only: bool, allowed: Path | None) -> Config:
    if not read_only:
        return {**CONNECTION_CONFIG, **_NO_EXTENSIONS}
    if allowed is None:
        return {**_reader_base(), **_SEALED}
    return {**_reader_base(), **_NO_EXTENSIONS, "allow_community_extensions": False}


def _seal_lake(con: duckdb.DuckDBPyConnection, target: lake.Lake, writable: Path | None) -> None:
    """_SEALED after the attach (the attach itself reads the catalog and the extensions). Data
    on S3 needs external access, so such a lake reader is read-only but not sealed."""
    data = lake.local_data_dir(target)
    if data is None:
        return
    folders = [f"{data.resolve()}/", *([f"{writable.resolve()}/"] if writable else [])]
    if target.kind != "postgres":
        folders.append(str(Path(target.catalog.removeprefix("sqlite:")).resolve()))
    literals = ", ".join("'" + f.replace("'", "''") + "'" for f in folders)
    con.execute(f"SET allowed_directories = [{literals}]")
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


def _seal_except(con: duckdb.DuckDBPyConnection, allowed: Path) -> None:
    """_SEALED with one writable folder: DuckDB takes allowed_directories only on a started
    database and before external access is switched off, so these run before any other
    statement (all ours: the folder's path is quoted as a literal)."""
    folder = f"{allowed.resolve()}/".replace("'", "''")
    con.execute(f"SET allowed_directories = ['{folder}']")
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


def _open(
    path: Path, read_only: bool, config: Config, wait: _LockWait
) -> duckdb.DuckDBPyConnection:
    _refuse_sqlite(path)
    while True:
        try:
            return quiet(duckdb.connect(str(path), read_only=read_only, config=config))
        except duckdb.IOException as exc:
            if not any(m in str(exc) for m in _LOCK_MARKERS):
                raise StoreError(f"cannot open database {path}: {first_line(exc)}") from None
            wait.holder = _holder(str(exc))
        except duckdb.Error as exc:
            raise StoreError(f"cannot open database {path}: {first_line(exc)}") from None
        wait.pause()


def quiet(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """`con` without DuckDB's progress bar: it draws on stdout, piped or not, once a statement
    runs for 2 s, into a CSV or JSON the user redirects and over the daemon's log. A setting of
    each connection (DuckDB refuses it in the connect-time configuration)."""
    con.execute("SET enable_progress_bar = false")
    return con


def _holder(message: str) -> str:
    """Which process holds the file, as DuckDB names it ("" when it does not say)."""
    found = _HOLDER.search(message)
    return f" (PID {found[2]}, {Path(found[1]).name})" if found else ""


def _refuse_sqlite(path: Path) -> None:
    """DuckDB would hand a SQLite file to its sqlite extension; say what the file is instead."""
    try:
        with path.open("rb") as file:
            head = file.read(len(_SQLITE_MAGIC))
    except OSError:
        return  # missing (a writer creates it) or unreadable: DuckDB's own error says which
    if head == _SQLITE_MAGIC:
        raise StoreError(f"{path} is a SQLite file, not a priceadvisor DuckDB database")


def _check_version(con: duckdb.DuckDBPyConnection, path: Path | str) -> None:
    try:
        row = con.execute("SELECT max(version) FROM core.schema_migrations").fetchone()
    except duckdb.CatalogException:
        raise StoreError(f"{path} is not a priceadvisor database") from None
    version = row[0] if row else None
    if version is None or version < latest_version():
        raise StoreError(
            f"database {path} has schema version {version}, this priceadvisor needs "
            f"{latest_version()}: run `priceadvisor fetch` once to upgrade it"
        )
    if version > latest_version():
        raise StoreError(f"database {path} was written by a newer priceadvisor (v{version})")


def prepare(con: duckdb.DuckDBPyConnection) -> None:
    """Everything a writer does on open: migrate, refresh catalogs, views, stale runs."""
    migrate(con)
    refresh_catalog(con)
    create_views(con)
    mark_abandoned_runs(con)


def migrate(con: duckdb.DuckDBPyConnection) -> list[int]:
    """Apply the missing migrations; on a lake in DuckLake's dialect (store.lakesql)."""
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
    return lakesql.translate(sql) if on_lake else sql


def _apply(con: duckdb.DuckDBPyConnection, version: int, path: Path, on_lake: bool) -> None:
    try:
        with transaction(con):
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
    with transaction(con):
        con.execute("DELETE FROM core.gpus")
        con.execute("INSERT INTO core.gpus BY NAME SELECT * FROM _catalog_gpus")
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


def start_run(con: duckdb.DuckDBPyConnection, provider: str, source: str = "live") -> int:
    """Record a run as `running` before its network work, so a crash leaves a trace.
    `source` is 'live' or 'recorded' (the shipped responses): recorded never passes for live."""
    run_id = next_id(con, "core.fetch_run_ids")
    con.execute(
        "INSERT INTO core.fetch_runs (run_id, provider, started_at, status, source, pid, host) "
        "VALUES (?, ?, ?, 'running', ?, ?, ?)",
        [run_id, provider, utcnow(), source, os.getpid(), socket.gethostname()],
    )
    return run_id


def next_id(con: duckdb.DuckDBPyConnection, sequence: str) -> int:
    """The next value of `sequence` (a name from the migrations' CREATE SEQUENCE): the sequence
    itself in a DuckDB file, its row in core.id_counters on a lake."""
    if not lake.is_lake(con):
        row = con.execute(f"SELECT nextval('{sequence}')").fetchone()
        assert row is not None
        return int(row[0])
    return _take_counter(con, sequence)


@_retry(lambda exc: isinstance(exc, _CounterMoved) or is_conflict(exc), 20)
def _take_counter(con: duckdb.DuckDBPyConnection, sequence: str) -> int:
    """Compare and set, so it needs no transaction of its own (and works inside the caller's):
    the id is ours only if the counter still holds it when we move it on. A writer that moved
    it meanwhile either shows in our snapshot (no row updated: try again) or commits
    concurrently (DuckLake fails one of the two commits), so no id is handed out twice."""
    row = con.execute("SELECT next_id FROM core.id_counters WHERE name = ?", [sequence]).fetchone()
    if row is None:
        raise StoreError(f"the lake has no id counter {sequence!r} (an incomplete migration?)")
    moved = con.execute(
        "UPDATE core.id_counters SET next_id = next_id + 1 WHERE name = ? AND next_id = ?",
        [sequence, row[0]],
    ).fetchone()
    if not moved or not moved[0]:
        raise _CounterMoved(sequence)
    return int(row[0])


def replace_rows(con: duckdb.DuckDBPyConnection, table: str, keys: list[str], source: str) -> None:
    """INSERT OR REPLACE for both backends (a lake has no key to conflict on): the rows of
    `source` (a table or a parenthesised query with `table`'s columns, by name) replace those
    with the same `keys`, in one MERGE statement."""
    match = " AND ".join(f"t.{k} = s.{k}" for k in keys)
    con.execute(
        f"MERGE INTO {table} t USING {source} s ON {match} "
        "WHEN MATCHED THEN UPDATE WHEN NOT MATCHED THEN INSERT"
    )


def abandon_own_runs(con: duckdb.DuckDBPyConnection) -> int:
    """At shutdown: runs this process started and will not finish."""
    row = con.execute(
        "UPDATE core.fetch_runs SET status = 'abandoned', finished_at = ?, "
        "error = 'abandoned at shutdown' WHERE status = 'running' AND pid = ? AND host = ?",
        [utcnow(), os.getpid(), socket.gethostname()],
    ).fetchone()
    return int(row[0]) if row else 0


def fail_runs(con: duckdb.DuckDBPyConnection, run_ids: list[int], status: str, error: str) -> int:
    """Finish the runs among `run_ids` still `running` (their ingest failed or was given up)."""
    row = con.execute(
        "UPDATE core.fetch_runs SET status = ?, finished_at = ?, error = ? "
        "WHERE status = 'running' AND list_contains(?, run_id)",
        [status, utcnow(), error, run_ids],
    ).fetchone()
    return int(row[0]) if row else 0


def mark_abandoned_runs(con: duckdb.DuckDBPyConnection) -> int:
    """Runs left `running` by a process of this host that no longer exists were abandoned."""
    host = socket.gethostname()
    rows = con.execute(
        "SELECT run_id, pid FROM core.fetch_runs WHERE status = 'running' AND host = ?", [host]
    ).fetchall()
    dead = [run_id for run_id, pid in rows if not _alive(pid)]
    if dead:
        con.execute(
            "UPDATE core.fetch_runs SET status = 'abandoned', finished_at = ?, "
            "error = 'the process ended before the run finished' WHERE list_contains(?, run_id)",
            [utcnow(), dead],
        )
    return len(dead)


def _alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
