"""HTTP validators kept in the database, so conditional requests survive a restart.

A provider's validators are loaded once before its fetch into a `StoredValidatorCache` (the
fetch itself never touches the database: it runs while other providers are ingesting), and the
entries the fetch renewed are written back in the ingest's writer session.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import duckdb

from priceadvisor.records import CachedBody, utcnow
from priceadvisor.store import columns, transactions


@dataclass(slots=True)
class StoredValidatorCache:
    """A ValidatorCache (collect.http) for one provider, backed by core.http_validators."""

    provider: str
    entries: dict[str, CachedBody] = field(default_factory=dict)
    renewed: set[str] = field(default_factory=set)

    def get(self, url: str) -> CachedBody | None:
        return self.entries.get(url)

    def put(self, url: str, body: CachedBody) -> None:
        self.entries[url] = body
        self.renewed.add(url)


def load_validators(con: duckdb.DuckDBPyConnection, provider: str) -> StoredValidatorCache:
    rows = con.execute(
        "SELECT url, etag, last_modified, body FROM core.http_validators WHERE provider = ?",
        [provider],
    ).fetchall()
    entries = {url: CachedBody(zlib.decompress(body), etag, mod) for url, etag, mod, body in rows}
    return StoredValidatorCache(provider, entries)


def save_validators(con: duckdb.DuckDBPyConnection, cache: StoredValidatorCache) -> int:
    """Write back the entries renewed since the last save; returns how many."""
    rows = [
        (cache.provider, url, body.etag, body.last_modified, zlib.compress(body.content))
        for url in sorted(cache.renewed)
        if (body := cache.entries[url]) is not None
    ]
    if rows:
        con.execute("CREATE OR REPLACE TEMP TABLE _validators AS FROM core.http_validators LIMIT 0")
        _insert(con, rows)
        transactions.replace_rows(con, "core.http_validators", ["provider", "url"], "_validators")
    cache.renewed.clear()
    return len(rows)


# The columns of core.http_validators a save fills from Python, in its rows' order.
_SAVED: columns.Schema = {
    "provider": "string",
    "url": "string",
    "etag": "string",
    "last_modified": "string",
    "body": "binary",
}


def _insert(con: duckdb.DuckDBPyConnection, rows: Sequence[tuple[object, ...]]) -> None:
    """As Arrow columns, not executemany: DuckDB probes every Python parameter for pandas
    types (~0.8 ms a row here; a provider renews up to ~30 pages a fetch)."""
    con.register("_validator_rows", columns.from_tuples(rows, _SAVED))
    try:
        con.execute(
            "INSERT INTO _validators BY NAME SELECT *, ?::TIMESTAMP AS updated_at "
            "FROM _validator_rows",
            [utcnow()],
        )
    finally:
        con.unregister("_validator_rows")
