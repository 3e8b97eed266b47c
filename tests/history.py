"""The invariants every price history must keep, as SQL over the tables behind the views."""

from __future__ import annotations

from pathlib import Path

import duckdb

from tests.conftest import query

_KEY = "provider, region, zone, instance_type, pricing"
# Each provider's latest merged snapshot (in observation order).
_LATEST = """WITH latest AS (
    SELECT provider, arg_max(run_id, observed_at) AS run_id, arg_max(status, observed_at) AS status
    FROM core.fetch_runs WHERE status IN ('ok', 'partial') GROUP BY provider)"""

INVARIANTS = {
    # an interval that ends before (or when) it starts
    "backwards": "SELECT count(*) FROM core.price_intervals WHERE valid_to <= valid_from",
    # two intervals of one key that share a moment ([valid_from, valid_to) half-open)
    "overlapping": f"""
        SELECT count(*) FROM core.price_intervals a JOIN core.price_intervals b
            USING ({_KEY})
        WHERE a.opened_run < b.opened_run
          AND a.valid_from < coalesce(b.valid_to, 'infinity'::TIMESTAMP)
          AND b.valid_from < coalesce(a.valid_to, 'infinity'::TIMESTAMP)""",
    # a key with more than one open interval
    "open_twice": f"""
        SELECT count(*) FROM (SELECT {_KEY} FROM core.price_intervals
            WHERE valid_to IS NULL GROUP BY ALL HAVING count(*) > 1)""",
    # an open interval the provider's latest merged complete snapshot did not contain
    "open_not_live": f"""{_LATEST}
        SELECT count(*) FROM core.price_intervals p JOIN latest l USING (provider)
        WHERE l.status = 'ok' AND p.valid_to IS NULL AND p.last_run <> l.run_id""",
    # an offer of that snapshot without exactly one open interval
    "live_not_open": f"""{_LATEST}
        SELECT count(*) FROM latest l JOIN core.fetch_runs r USING (run_id)
        WHERE l.status = 'ok' AND r.offers_seen <> (
            SELECT count(*) FROM core.price_intervals p
            WHERE p.provider = l.provider AND p.valid_to IS NULL)""",
}


def violations(db: Path) -> dict[str, int]:
    """Rows breaking each invariant; all zero for a sound history."""
    return {name: query(db, sql)[0][0] for name, sql in INVARIANTS.items()}


def violations_in(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """As `violations`, on an open connection (a lake's)."""
    return {name: con.execute(sql).fetchone()[0] for name, sql in INVARIANTS.items()}
