"""Layout-drift guard: a snapshot far smaller than the provider's last good one is suspect.

A source that changes its layout often still parses, just into fewer rows (a table renamed, a
page section moved). Closing every offer that vanished would then record a false mass
withdrawal. So when a run that reports itself complete yields fewer than `min_share` of the
offers of the provider's last `ok` run, it is downgraded to `partial` with no complete scope:
offers seen are updated, none are closed, and the reason is recorded.
"""

from __future__ import annotations

import duckdb

DEFAULT_MIN_OFFER_SHARE = 0.5


def previous_good_count(con: duckdb.DuckDBPyConnection, provider: str) -> int | None:
    """Offers seen by the provider's latest run that ended `ok`, or None before the first."""
    row = con.execute(
        """SELECT offers_seen FROM core.fetch_runs
           WHERE provider = ? AND status = 'ok' AND offers_seen > 0
           ORDER BY finished_at DESC, run_id DESC LIMIT 1""",
        [provider],
    ).fetchone()
    return int(row[0]) if row else None


def drift_reason(
    con: duckdb.DuckDBPyConnection, provider: str, offers: int, min_share: float
) -> str | None:
    """Why this snapshot of `offers` valid offers looks like layout drift, or None if it does
    not (or the guard is off: `min_share` 0, or no earlier good run to compare with)."""
    before = previous_good_count(con, provider)
    if not min_share or before is None or offers >= min_share * before:
        return None
    return (
        f"only {offers} offers against {before} in the last good run (below "
        f"{min_share:.0%}): the source's layout may have changed, no offers closed"
    )
