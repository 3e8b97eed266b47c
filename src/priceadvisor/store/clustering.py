"""The storage order of core.current_offers: rows clustered by GPU model, then pricing.

Every price query scans core.current_offers whole, with its filters pushed into the scan. DuckDB
keeps the minimum and maximum of each column per row group (122,880 rows) and skips the row
groups whose range cannot match: with rows stored in GPU-model order, `--gpu H100` reads the
few row groups holding H100s instead of all of them (at 1M offers 2 of 8). Nothing else depends
on the order: it changes how fast a filter runs, never what a query returns.

Each ingest appends its new intervals at the end of the table: a batch smaller than a row group
sorted in this order (store.ingest), a larger one (a first load) as it comes, because sorting
it inside the ingest runs out of the daemon's memory limit. Later ingests delete a few rows
here and there and append a small sorted batch each; those batches pile up at the end of the
table in row groups holding every model. Once the rows appended since the table was last
clustered reach CLUSTER_SHARE of it (a first load: all of them), `keep_clustered` rewrites the
table in order (one transaction, in the fetch's writer session; core.table_layout remembers the
last fetch run it covered).
"""

from __future__ import annotations

import duckdb

from priceadvisor.store import transactions

# The storage order (NULLs, the unmapped GPUs no price query shows, sort last).
CLUSTER_ORDER = "gpu_model, pricing, provider, region"
# DuckDB's zone maps cover a row group; an ingest sorts a batch smaller than this.
ROW_GROUP_ROWS = 122_880
# Rewrite once this share of the rows was appended since the last rewrite.
CLUSTER_SHARE = 0.2
# Below two row groups there is nothing to skip: the rewrite would buy nothing.
MIN_ROWS = 2 * ROW_GROUP_ROWS

_INSERTED = "coalesce(r.offers_new, 0) + coalesce(r.offers_changed, 0)"
# A table never clustered (NULL) counts all its rows as appended.
_APPENDED_SQL = f"""
SELECT CASE WHEN l.clustered_run IS NULL THEN (SELECT count(*) FROM core.current_offers)
            ELSE coalesce(sum({_INSERTED}), 0)
       END,
       max(r.run_id)
FROM core.table_layout AS l
    LEFT JOIN core.fetch_runs AS r ON r.run_id > coalesce(l.clustered_run, 0)
WHERE l.table_name = 'current_offers'
GROUP BY l.clustered_run
"""
# A temp table holds the sorted copy between the delete and the insert: DuckDB appends inserted
# rows after the table's existing row groups, so the table is emptied first.
_REWRITE_SQL = (
    "CREATE OR REPLACE TEMP TABLE _clustered AS "
    f"SELECT * FROM core.current_offers ORDER BY {CLUSTER_ORDER}",
    "DELETE FROM core.current_offers",
    "INSERT INTO core.current_offers SELECT * FROM _clustered",
    "DROP TABLE _clustered",
)


def appended_rows(con: duckdb.DuckDBPyConnection) -> tuple[int, int | None]:
    """Rows inserted since the last rewrite, and the latest run counted."""
    row = con.execute(_APPENDED_SQL).fetchone()
    return (int(row[0]), row[1]) if row else (0, None)


def keep_clustered(con: duckdb.DuckDBPyConnection) -> bool:
    """Rewrite core.current_offers in CLUSTER_ORDER once CLUSTER_SHARE of it was appended since
    the last rewrite (and it holds MIN_ROWS); whether it did. Runs in the caller's writer
    session, in a transaction of its own."""
    appended, latest = appended_rows(con)
    if latest is None:
        return False
    found = con.execute("SELECT count(*) FROM core.current_offers").fetchone()
    rows = int(found[0]) if found else 0
    if rows < MIN_ROWS or appended < CLUSTER_SHARE * rows:
        return False
    cluster(con, latest)
    return True


def cluster(con: duckdb.DuckDBPyConnection, latest_run: int) -> None:
    """Rewrite core.current_offers in CLUSTER_ORDER, as of fetch run `latest_run`."""
    with transactions.atomic(con):
        for statement in _REWRITE_SQL:
            con.execute(statement)
        con.execute(
            "UPDATE core.table_layout SET clustered_run = ? WHERE table_name = 'current_offers'",
            [latest_run],
        )
