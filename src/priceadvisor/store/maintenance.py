"""Lake maintenance: rows inlined in the catalog flushed to Parquet, data files with many
deleted rows rewritten, fewer and larger data files, snapshots expired after a retention, and
the files no snapshot needs any more deleted (DuckLake's own functions, on the attached lake).

Every commit to a lake adds a snapshot. DuckLake 1.x keeps an insert of at most 10 rows, and a
delete of at most 10 rows from one data file, in tables of the catalog database (data inlining,
on by default: our attach leaves `data_inlining_row_limit` alone); larger ones become small
Parquet files: an ingest's new intervals, and delete files marking the intervals it closed in
`core.current_offers`. Five steps keep that in bounds, in this order, each one DuckLake
transaction:
- `ducklake_flush_inlined_data` writes the inlined rows and deletions out as Parquet data and
  delete files and removes them from the catalog, which would otherwise grow with every fetch;
- `ducklake_rewrite_data_files` rewrites each data file of which at least DELETE_THRESHOLD of
  the rows are deleted into one without them (after the flush, so the inlined deletions count);
- `ducklake_merge_adjacent_files` rewrites a table's small files into larger ones (after the
  rewrite, so the rewritten files are merged too);
- `ducklake_expire_snapshots` forgets the snapshots older than the retention, except the one
  that was current at the cutoff: `--as-of` any time within the retention still has its
  snapshot (a time before the cutoff has none any more);
- `ducklake_cleanup_old_files` deletes the files scheduled for deletion (replaced by a merge or
  rewrite, or only referenced by expired snapshots) at least `grace` ago: a query that started
  before a merge may still be reading them.

The first three keep every snapshot's rows (the files they replace stay in the catalog while a
kept snapshot reads them; on DuckLake 1.5.5 every table read the same at each of 149 snapshots
before and after them, and the tests compare the views and `--as-of`), so none of this changes
what the current snapshot or a kept one reads. A step that loses a commit conflict
to a concurrent writer runs again on a fresh snapshot (transactions.conflict_retry).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass

import duckdb

from priceadvisor.durations import format_duration
from priceadvisor.store import transactions
from priceadvisor.store.lake import ALIAS

# A query that started before this run may still read a file it replaces for this long.
DEFAULT_GRACE = dt.timedelta(minutes=10)
# Rewrite a data file once at least this share of its rows is deleted. DuckLake's default is
# 0.95; ingests delete a few rows of core.current_offers from many files, which every price
# query reads, so a file is rewritten once it reads twice the rows it returns.
DELETE_THRESHOLD = 0.5


@dataclass(frozen=True)
class Flushed:
    tables: int
    rows: int
    delete_files_before: int
    delete_files_after: int


@dataclass(frozen=True)
class Compacted:
    """A rewrite or a merge: DuckLake's counts, and the files it counts before and after
    (delete files for a rewrite, data files for a merge)."""

    tables: int
    files_processed: int
    files_created: int
    before: int
    after: int


@dataclass(frozen=True)
class Expired:
    snapshots: int
    kept: int
    cutoff: dt.datetime


@dataclass(frozen=True)
class Cleaned:
    files: int


def data_files(con: duckdb.DuckDBPyConnection) -> int:
    """The data files the current snapshot reads, over every table (DuckLake's table info)."""
    return _table_info_sum(con, "file_count")


def delete_files(con: duckdb.DuckDBPyConnection) -> int:
    """The delete files the current snapshot reads, over every table (DuckLake's table info)."""
    return _table_info_sum(con, "delete_file_count")


# DuckLake's catalog tables (its specification's ducklake_* tables), for the measurements below.
_META = f"__ducklake_metadata_{ALIAS}"


def inlined_rows(con: duckdb.DuckDBPyConnection) -> int:
    """Rows held in the catalog database's inlined-data tables (current, and those deleted but
    kept for time travel): what a flush moves out of the catalog."""
    names = con.execute(f"SELECT table_name FROM {_META}.ducklake_inlined_data_tables").fetchall()
    return sum(_count_rows(con, f"{_META}.{name}") for (name,) in names)


def dead_rows(con: duckdb.DuckDBPyConnection, schema: str, table: str) -> int:
    """Rows the table's current data files hold that a delete (file or inlined) hides: what
    every read of the table scans and then skips."""
    row = con.execute(
        f"SELECT coalesce(sum(f.record_count), 0) FROM {_META}.ducklake_data_file AS f "
        f"JOIN {_META}.ducklake_table AS t USING (table_id) "
        f"JOIN {_META}.ducklake_schema AS s USING (schema_id) "
        "WHERE f.end_snapshot IS NULL AND t.end_snapshot IS NULL AND s.end_snapshot IS NULL "
        "AND t.table_name = ? AND s.schema_name = ?",
        [table, schema],
    ).fetchone()
    in_files = int(row[0]) if row else 0
    visible = _count_rows(con, f"{schema}.{table}")
    return in_files - (visible - _live_inlined(con, schema, table))


def _live_inlined(con: duckdb.DuckDBPyConnection, schema: str, table: str) -> int:
    names = con.execute(
        f"SELECT i.table_name FROM {_META}.ducklake_inlined_data_tables AS i "
        f"JOIN {_META}.ducklake_table AS t USING (table_id) "
        f"JOIN {_META}.ducklake_schema AS s USING (schema_id) "
        "WHERE t.end_snapshot IS NULL AND t.table_name = ? AND s.schema_name = ?",
        [table, schema],
    ).fetchall()
    return sum(_count_rows(con, f"{_META}.{n} WHERE end_snapshot IS NULL") for (n,) in names)


def _count_rows(con: duckdb.DuckDBPyConnection, source: str) -> int:
    row = con.execute(f"SELECT count(*) FROM {source}").fetchone()
    return int(row[0]) if row else 0


def _table_info_sum(con: duckdb.DuckDBPyConnection, column: str) -> int:
    row = con.execute(f"SELECT coalesce(sum({column}), 0) FROM ducklake_table_info('{ALIAS}')")
    found = row.fetchone()
    return int(found[0]) if found else 0


def snapshot_count(con: duckdb.DuckDBPyConnection) -> int:
    row = con.execute(f"SELECT count(*) FROM ducklake_snapshots('{ALIAS}')").fetchone()
    return int(row[0]) if row else 0


def _flush_lost(exc: Exception) -> bool:
    """A flush that lost to a concurrent writer (transactions.is_conflict, PostgreSQL's
    serialization failure included), or the aborted catalog transaction such a loss can leave
    for the flush's next statement; nothing of the flush was committed either way."""
    return transactions.is_conflict(exc) or (
        isinstance(exc, duckdb.Error) and "Current transaction is aborted" in str(exc)
    )


@transactions.conflict_retry(on=_flush_lost)
def flush(con: duckdb.DuckDBPyConnection) -> Flushed:
    """Write the rows and deletions inlined in the catalog out to Parquet files (retried on a
    fresh snapshot, also after the errors of _flush_lost)."""
    before = delete_files(con)
    try:
        # One row per table with inlined inserts: (schema, table, rows flushed); inlined
        # deletions are flushed too but not counted there (they show as new delete files).
        rows = con.execute(f"CALL ducklake_flush_inlined_data('{ALIAS}')").fetchall()
    except duckdb.Error:
        transactions.rollback(con)  # an aborted catalog transaction fails every later statement
        raise
    return Flushed(
        tables=len(rows),
        rows=sum(int(r[2]) for r in rows),
        delete_files_before=before,
        delete_files_after=delete_files(con),
    )


@transactions.retry_conflicts
def rewrite(con: duckdb.DuckDBPyConnection, threshold: float = DELETE_THRESHOLD) -> Compacted:
    """Rewrite the data files with at least `threshold` of their rows deleted, without them."""
    call = f"CALL ducklake_rewrite_data_files('{ALIAS}', delete_threshold => ?)"
    return _compact(con, call, delete_files, [threshold])


@transactions.retry_conflicts
def merge(con: duckdb.DuckDBPyConnection) -> Compacted:
    """Merge each table's adjacent small files (DuckLake's size thresholds)."""
    return _compact(con, f"CALL ducklake_merge_adjacent_files('{ALIAS}')", data_files)


def _compact(
    con: duckdb.DuckDBPyConnection,
    call: str,
    files: Callable[[duckdb.DuckDBPyConnection], int],
    params: list[float] | None = None,
) -> Compacted:
    """Run a DuckLake compaction (one row per table: schema, table, files processed, files
    created), counting `files` before and after."""
    before = files(con)
    rows = con.execute(call, params).fetchall()
    return Compacted(
        tables=len(rows),
        files_processed=sum(int(r[2]) for r in rows),
        files_created=sum(int(r[3]) for r in rows),
        before=before,
        after=files(con),
    )


@transactions.retry_conflicts
def expire(con: duckdb.DuckDBPyConnection, retention: dt.timedelta, now: dt.datetime) -> Expired:
    """Expire the snapshots older than `now - retention` but the one current at that cutoff."""
    cutoff = now - retention
    row = con.execute(
        f"SELECT max(snapshot_time) FROM ducklake_snapshots('{ALIAS}') WHERE snapshot_time <= ?",
        [cutoff],
    ).fetchone()
    boundary = row[0] if row else None
    expired = 0
    if boundary is not None:  # snapshots strictly older than the one current at the cutoff
        expired = len(
            con.execute(
                f"CALL ducklake_expire_snapshots('{ALIAS}', older_than => ?)", [boundary]
            ).fetchall()
        )
    return Expired(snapshots=expired, kept=snapshot_count(con), cutoff=cutoff)


@transactions.retry_conflicts
def cleanup(con: duckdb.DuckDBPyConnection, grace: dt.timedelta, now: dt.datetime) -> Cleaned:
    """Delete the files scheduled for deletion before `now - grace`."""
    rows = con.execute(
        f"CALL ducklake_cleanup_old_files('{ALIAS}', older_than => ?)", [now - grace]
    ).fetchall()
    return Cleaned(files=len(rows))


@dataclass(frozen=True)
class Report:
    flushed: Flushed
    rewritten: Compacted
    merged: Compacted
    expired: Expired
    cleaned: Cleaned
    retention: dt.timedelta
    grace: dt.timedelta

    def lines(self) -> list[str]:
        """One line per step, with DuckLake's own counts."""
        flushed, rewritten = self.flushed, self.rewritten
        merged, expired = self.merged, self.expired
        return [
            f"flushed {flushed.rows} rows inlined in the catalog to Parquet "
            f"({_count(flushed.tables, 'table')}, and their inlined deletions); delete files "
            f"{flushed.delete_files_before} -> {flushed.delete_files_after}",
            f"rewrote {rewritten.files_processed} data files at least "
            f"{DELETE_THRESHOLD:.0%} deleted into {rewritten.files_created} "
            f"({_count(rewritten.tables, 'table')}); delete files "
            f"{rewritten.before} -> {rewritten.after}",
            f"merged {merged.files_processed} small data files into {merged.files_created} "
            f"({_count(merged.tables, 'table')}); data files {merged.before} -> {merged.after}",
            f"expired {expired.snapshots} snapshots older than {expired.cutoff:%Y-%m-%d %H:%M} "
            f"UTC (retention {format_duration(self.retention.total_seconds())}); "
            f"{expired.kept} kept",
            f"deleted {self.cleaned.files} files no kept snapshot reads (freed over "
            f"{format_duration(self.grace.total_seconds())} ago)",
        ]


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def run(
    con: duckdb.DuckDBPyConnection,
    retention: dt.timedelta,
    grace: dt.timedelta = DEFAULT_GRACE,
    now: dt.datetime | None = None,
) -> Report:
    """Flush, rewrite, merge, expire, clean up, in that order (a file a merge or rewrite
    replaces waits for the next run when it is younger than `grace`). `now` is aware UTC."""
    now = now or dt.datetime.now(dt.UTC)
    flushed = flush(con)
    rewritten = rewrite(con)
    merged = merge(con)
    expired = expire(con, retention, now)
    cleaned = cleanup(con, grace, now)
    return Report(flushed, rewritten, merged, expired, cleaned, retention, grace)
