"""Connections to a store (one writer, many readers) and the writer's turn.

One writer: read-write connections are opened only around a write (open, write, checkpoint,
close) and retried while another process holds the lock; readers open read-only and retry too.
Most writes give up after `lock_timeout`; writes of fetched data wait their turn however long it
takes (see `writer`), so a reader holding the file never costs a snapshot. Every writer open
brings the schema up to date (store.schema). store.handle.Store holds a store's place and
timeouts and is what the rest of the program opens connections with.
"""

from __future__ import annotations

import datetime as dt
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from priceadvisor.config_basics import ReaderBounds, ReaderDefaults, reader_config
from priceadvisor.store import asof, schema
from priceadvisor.store.errors import StoreError, first_line
from priceadvisor.store.transactions import is_conflict, retry_on

# DuckDB's words for a file another process holds. Precise on purpose: "lock" alone also
# matches "block" in a corrupt-file error, which must fail at once rather than be waited out.
_LOCK_MARKERS = ("Could not set lock on file", "Conflicting lock is held")
_HOLDER = re.compile(r"Conflicting lock is held in (.+?) \(PID (\d+)\)")
# DuckDB's words for a write-ahead log it cannot replay (a torn or corrupt .wal file).
_WAL_REPLAY = "Failure while replaying WAL"


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


if TYPE_CHECKING:
    from priceadvisor.store.lake import Lake

    # Where the data is: a DuckDB file, or a DuckLake (storage = "ducklake").
    Target = Path | Lake

# store.lake (and the dataclasses module) is imported where a lake is used: a reader of a file,
# such as `prices` (cli/light.py), starts without them.


def change_stamp(con: duckdb.DuckDBPyConnection, where: Target) -> int:
    """A number that changes whenever the data may have: a file's modification time, a lake's
    latest snapshot id."""
    if not isinstance(where, Path):
        from priceadvisor.store import lake  # noqa: PLC0415

        row = con.execute(f"SELECT max(snapshot_id) FROM ducklake_snapshots('{lake.ALIAS}')")
        found = row.fetchone()
        return int(found[0]) if found and found[0] is not None else 0
    return where.stat().st_mtime_ns


def describe(where: Target) -> str:
    """`where` for messages: a file's path, a lake's catalog without its password."""
    return str(where) if isinstance(where, Path) else where.describe()


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
    `transactions.retry_conflicts`). Migrated means store.schema.prepare has run: it also
    repairs a sequence left behind its table (store.ids).

    `vacuum=False`: the closing CHECKPOINT leaves the space of deleted rows in place (DuckDB's
    `max_vacuum_tasks=0`) instead of merging the row groups that hold them; the next writer
    session's checkpoint merges them (any change makes a checkpoint vacuum every table). For
    the hourly ingest, whose memory peaks in that merge (docs/benchmarks.md): every fetch cycle
    starts its runs in a writer session of its own, so the space is reclaimed an hour later."""
    if not isinstance(path, Path):
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
def _lake_writer(target: Lake) -> Iterator[duckdb.DuckDBPyConnection]:
    """No CHECKPOINT at the end: on a lake it compacts files and expires snapshots, which is
    maintenance for the operator (it would also cut the time travel short)."""
    from priceadvisor.store import lake  # noqa: PLC0415

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


def _prepare_once(con: duckdb.DuckDBPyConnection, key: Path | str) -> None:
    """Migrations, catalogs, views and stale runs: once per process per file (and again if the
    file was replaced, which its missing bookkeeping table shows)."""
    if key in _prepared and schema.has_schema(con):
        return
    schema.prepare(con)
    _prepared.add(key)


@retry_on(is_conflict, 5)
def _prepare_lake_once(con: duckdb.DuckDBPyConnection, key: str) -> None:
    """As _prepare_once; daemons starting together on one lake conflict here (both migrate or
    reload the catalog), and the loser simply runs again on the winner's result."""
    _prepare_once(con, key)


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
    if not isinstance(path, Path):
        from priceadvisor.store import lake  # noqa: PLC0415

        snapshot = asof.naive_utc(as_of) if as_of else None
        with lake.connect(path, True, _reader_base(), snapshot) as con:
            _seal_lake(con, path, writable_dir)
            # A snapshot keeps the schema of its day: older is history, not an upgrade to run.
            schema.check_version(con, path.describe(), older_ok=snapshot is not None)
            if snapshot is not None:
                asof.pad_snapshot_views(con, lake.ALIAS)
            yield con
        return
    if not path.is_file():
        raise StoreError(f"no database at {path}: run `priceadvisor fetch` (or `demo`) first")
    with _connection(path, True, lock_timeout, allowed=writable_dir) as con:
        schema.check_version(con, path)
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
        schema.check_version(con, path)
    except BaseException:
        close_shared_reader(con)
        raise
    return con


def close_shared_reader(con: duckdb.DuckDBPyConnection) -> None:
    try:
        con.close()
    finally:
        _WRITE_LOCK.release()


class _LockWait:
    """Waiting while another process holds the file: bounded by `lock_timeout`, or (with a
    `give_up` event) until the event is set, with a warning every `lock_timeout`."""

    def __init__(self, path: Path, lock_timeout: float, give_up: threading.Event | None) -> None:
        self.path, self.lock_timeout, self.give_up = path, lock_timeout, give_up
        self.started = time.monotonic()
        self.delay = 0.05
        self.warned = 0.0
        self.holder = ""

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
            # logging is imported by the one message of this module: a reader never logs, and
            # `prices` starts without it (cli/light.py)
            import logging  # noqa: PLC0415

            logging.getLogger(__name__).warning(
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


def _seal_lake(con: duckdb.DuckDBPyConnection, target: Lake, writable: Path | None) -> None:
    """_SEALED after the attach (the attach itself reads the catalog and the extensions). Data
    on S3 needs external access, so such a lake reader is read-only but not sealed."""
    from priceadvisor.store import lake  # noqa: PLC0415

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
            if _being_created(path, exc):
                wait.holder = " (creating the file)"
            elif any(m in str(exc) for m in _LOCK_MARKERS):
                wait.holder = _holder(str(exc))
            else:
                raise _unopenable(path, exc) from None
        except duckdb.Error as exc:
            raise _unopenable(path, exc) from None
        wait.pause()


# DuckDB creates a new file, then takes its lock and writes its three 4 KiB headers: a second
# process opening the file in between reads it short and calls it "not a valid DuckDB database
# file". A short file that was just written is therefore waited for like a held lock; an old
# one (an empty file a user made, a truncated copy) fails at once.
_NOT_DUCKDB = "not a valid DuckDB database file"
_HEADERS_BYTES = 3 * 4096
_CREATION_SECONDS = 5.0


def _being_created(path: Path, exc: duckdb.Error) -> bool:
    """Whether `exc` is another process creating `path` right now (see _NOT_DUCKDB)."""
    if _NOT_DUCKDB not in str(exc):
        return False
    try:
        stat = path.stat()
    except OSError:
        return False
    young = time.time() - stat.st_mtime < _CREATION_SECONDS
    return stat.st_size < _HEADERS_BYTES and young


def _unopenable(path: Path, exc: duckdb.Error) -> StoreError:
    """A write-ahead log DuckDB cannot replay (torn or corrupt by a crash or a bad disk) keeps
    the file closed for good: the error names the way out (docs/operations.md)."""
    if _WAL_REPLAY not in str(exc):
        return StoreError(f"cannot open database {path}: {first_line(exc)}")
    wal = path.with_name(path.name + ".wal")
    return StoreError(
        f"cannot open database {path}: its write-ahead log {wal} does not replay "
        f"({first_line(exc)}); move that file aside (mv {wal} {wal}.broken) to open the "
        "database as of its last checkpoint, as docs/operations.md describes"
    )


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
