"""Lake maintenance: fewer, larger data files, snapshots expired after a retention, and the
files no snapshot needs any more deleted (DuckLake's own functions, on the attached lake).

Every commit to a lake adds a snapshot and, past DuckLake's inlining limit, small Parquet
files. Three steps keep that in bounds, each one DuckLake transaction:
- `ducklake_merge_adjacent_files` rewrites a table's small files into larger ones; the merged
  file keeps each row's snapshot, so time travel reads the same rows as before;
- `ducklake_expire_snapshots` forgets the snapshots older than the retention, except the one
  that was current at the cutoff: `--as-of` any time within the retention still has its
  snapshot (a time before the cutoff has none any more);
- `ducklake_cleanup_old_files` deletes the files scheduled for deletion (replaced by a merge,
  or only referenced by expired snapshots) at least `grace` ago: a query that started before
  a merge may still be reading them.

None of this changes what the current snapshot (or a kept one) reads. A step that loses a
commit conflict to a concurrent writer runs again on a fresh snapshot (db.conflict_retry).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import duckdb

from priceadvisor.durations import format_duration
from priceadvisor.store import db
from priceadvisor.store.lake import ALIAS

# A query that started before this run may still read a file it replaces for this long.
DEFAULT_GRACE = dt.timedelta(minutes=10)


@dataclass(frozen=True)
class Merged:
    tables: int
    files_processed: int
    files_created: int
    data_files_before: int
    data_files_after: int


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
    row = con.execute(f"SELECT coalesce(sum(file_count), 0) FROM ducklake_table_info('{ALIAS}')")
    found = row.fetchone()
    return int(found[0]) if found else 0


def snapshot_count(con: duckdb.DuckDBPyConnection) -> int:
    row = con.execute(f"SELECT count(*) FROM ducklake_snapshots('{ALIAS}')").fetchone()
    return int(row[0]) if row else 0


@db.retry_conflicts
def merge(con: duckdb.DuckDBPyConnection) -> Merged:
    """Merge each table's adjacent small files (DuckLake's size thresholds)."""
    before = data_files(con)
    rows = con.execute(f"CALL ducklake_merge_adjacent_files('{ALIAS}')").fetchall()
    return Merged(
        tables=len(rows),
        files_processed=sum(int(r[2]) for r in rows),
        files_created=sum(int(r[3]) for r in rows),
        data_files_before=before,
        data_files_after=data_files(con),
    )


@db.retry_conflicts
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


@db.retry_conflicts
def cleanup(con: duckdb.DuckDBPyConnection, grace: dt.timedelta, now: dt.datetime) -> Cleaned:
    """Delete the files scheduled for deletion before `now - grace`."""
    rows = con.execute(
        f"CALL ducklake_cleanup_old_files('{ALIAS}', older_than => ?)", [now - grace]
    ).fetchall()
    return Cleaned(files=len(rows))


@dataclass(frozen=True)
class Report:
    merged: Merged
    expired: Expired
    cleaned: Cleaned
    retention: dt.timedelta
    grace: dt.timedelta

    def lines(self) -> list[str]:
        """One line per step, with DuckLake's own counts."""
        merged, expired = self.merged, self.expired
        return [
            f"merged {merged.files_processed} small data files into {merged.files_created} "
            f"({_count(merged.tables, 'table')}); data files {merged.data_files_before} -> "
            f"{merged.data_files_after}",
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
    """Merge, expire, clean up, in that order (a file a merge replaces waits for the next run
    when it is younger than `grace`). `now` is aware UTC."""
    now = now or dt.datetime.now(dt.UTC)
    merged = merge(con)
    expired = expire(con, retention, now)
    return Report(merged, expired, cleanup(con, grace, now), retention, grace)
