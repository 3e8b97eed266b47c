"""The change log kept as open intervals (core.current_offers) apart from closed ones
(core.price_closed), with "seen" recorded per run (core.provider_coverage): the public views
give the same rows as the single table did, last_seen keeps its meaning for ok, partial,
failed and superseded runs, and migration 0040 moves an old database's history losslessly."""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path

import duckdb
import pytest

from priceadvisor.manifest import manifest
from priceadvisor.records import FetchResult, RawQuote, RunStatus
from priceadvisor.store import connections, schema
from priceadvisor.store.ingest import ingest
from priceadvisor.store.runs import start_run
from tests.conftest import query
from tests.history import violations

T0 = dt.datetime(2026, 11, 1, 12, 0)
SKU = "Standard_NC24ads_A100_v4"


def quote(region: str, price: float = 3.0, available: bool | None = None) -> RawQuote:
    return RawQuote(
        region=region, instance_type=SKU, pricing="on_demand", price=price, available=available
    )


def run(
    db: Path,
    hour: int,
    quotes: list[RawQuote],
    status: RunStatus = RunStatus.OK,
    scopes: frozenset[str] = frozenset(),
) -> RunStatus:
    """One azure run observed `hour` hours after T0."""
    with connections.writer(db) as con:
        run_id = start_run(con, "azure")
        observed = T0 + dt.timedelta(hours=hour)
        result = FetchResult("azure", status, quotes, finished_at=observed)
        result.complete_scopes = scopes
        return ingest(con, run_id, result, manifest("azure")).status


def last_seen(db: Path) -> dict[str, dt.datetime]:
    return dict(query(db, "SELECT region, last_seen FROM offers"))


def at(hour: int) -> dt.datetime:
    return T0 + dt.timedelta(hours=hour)


THREE = [quote("eastus"), quote("westeurope"), quote("japaneast")]


def test_an_ok_run_moves_every_unchanged_offers_last_seen_without_rewriting_it(
    db_path: Path,
) -> None:
    run(db_path, 0, THREE)
    run(db_path, 1, THREE)
    assert last_seen(db_path) == dict.fromkeys(("eastus", "westeurope", "japaneast"), at(1))
    # the rows themselves were written once, by the run that opened them
    assert query(db_path, "SELECT DISTINCT last_seen FROM core.current_offers") == [(at(0),)]
    assert query(db_path, "SELECT count(*) FROM price_history") == [(3,)]
    assert set(violations(db_path).values()) == {0}


def test_a_partial_run_moves_last_seen_of_what_it_saw_and_nothing_else(db_path: Path) -> None:
    run(db_path, 0, THREE)
    # eastus complete and seen; westeurope seen though incomplete; japaneast neither
    partial = [quote("eastus"), quote("westeurope")]
    run(db_path, 1, partial, RunStatus.PARTIAL, frozenset({"eastus", "japaneast|spot"}))
    assert last_seen(db_path) == {"eastus": at(1), "westeurope": at(1), "japaneast": at(0)}


def test_a_partial_run_covering_a_region_and_pricing_moves_last_seen_there(
    db_path: Path,
) -> None:
    run(db_path, 0, THREE)
    run(db_path, 1, THREE, RunStatus.PARTIAL, frozenset({"japaneast|on_demand"}))
    run(db_path, 2, THREE[2:], RunStatus.PARTIAL, frozenset({"japaneast|on_demand"}))
    assert last_seen(db_path) == {"eastus": at(1), "westeurope": at(1), "japaneast": at(2)}


def test_failed_and_superseded_runs_see_nothing(db_path: Path) -> None:
    run(db_path, 0, THREE)
    run(db_path, 2, THREE)
    assert run(db_path, 3, THREE, RunStatus.FAILED) is RunStatus.FAILED
    assert run(db_path, 1, THREE) is RunStatus.SUPERSEDED
    assert set(last_seen(db_path).values()) == {at(2)}


def test_a_closed_interval_keeps_the_last_sighting_before_it_closed(db_path: Path) -> None:
    run(db_path, 0, THREE)
    run(db_path, 1, THREE)
    run(db_path, 2, [quote("eastus", 4.0), quote("westeurope")])
    rows = query(
        db_path,
        "SELECT region, price_hour_usd, valid_from, valid_to, last_seen FROM price_history "
        "ORDER BY region, valid_from",
    )
    assert rows == [
        ("eastus", 3.0, at(0), at(2), at(1)),  # changed: the old price was last seen at 1
        ("eastus", 4.0, at(2), None, at(2)),
        ("japaneast", 3.0, at(0), at(2), at(1)),  # vanished from a complete run
        ("westeurope", 3.0, at(0), None, at(2)),
    ]
    assert set(violations(db_path).values()) == {0}


def test_an_attribute_change_updates_the_open_interval_in_place(db_path: Path) -> None:
    run(db_path, 0, [dataclasses.replace(quote("eastus"), interruption_rate=0.1)])
    run(db_path, 1, [dataclasses.replace(quote("eastus"), interruption_rate=0.2)])
    assert query(db_path, "SELECT interruption_rate, first_seen, last_seen FROM offers") == [
        (0.2, at(0), at(1))
    ]
    assert query(db_path, "SELECT count(*) FROM price_history") == [(1,)]


OFFERS_COLUMNS = [
    "provider", "region", "zone", "city", "country", "continent", "is_eu", "instance_type",
    "gpu_model", "gpu_name_raw", "gpu_count", "gpu_memory_gb", "vcpus", "ram_gb", "pricing",
    "term_months", "upfront_usd", "monthly_usd", "price_hour_usd", "price_gpu_hour_usd",
    "currency", "price_hour_original", "price_origin",
    "price_rule", "available", "stock", "interruption_rate", "disk_usd_gb_month", "egress_usd_gb",
    "offer_count", "price_hour_median_usd",
    "price_date", "first_seen", "last_seen", "source_url", "flag", "flag_reason",
]  # fmt: skip
HISTORY_COLUMNS = [
    "provider", "region", "zone", "instance_type", "pricing", "term_months", "upfront_usd",
    "monthly_usd", "gpu_model", "gpu_name_raw",
    "gpu_count", "price_hour_usd", "price_gpu_hour_usd", "currency", "price_hour_original",
    "price_date", "price_origin", "price_rule", "available", "stock", "valid_from", "valid_to",
    "last_seen", "flag", "flag_reason",
]  # fmt: skip


def test_public_views_keep_their_columns(migrated_db: Path) -> None:
    for view, expected in (("offers", OFFERS_COLUMNS), ("price_history", HISTORY_COLUMNS)):
        described = query(migrated_db, f"DESCRIBE {view}")
        assert [row[0] for row in described] == expected


# --- migration 0040 on a database written by the single-table schema ---------------------------

_OLD_ROWS = """
INSERT INTO core.price_intervals BY NAME
SELECT 'azure' AS provider, region, '' AS zone, ? AS instance_type, 'on_demand' AS pricing,
    'A100-PCIE-80GB' AS gpu_model, 'A100' AS gpu_name_raw, 1.0 AS gpu_count,
    80.0 AS gpu_memory_gb, 24.0 AS vcpus, 220.0 AS ram_gb, price AS price_hour_usd,
    price AS price_gpu_hour_usd, 'USD' AS currency, price AS price_hour_original,
    'node' AS price_basis, true AS available, NULL AS interruption_rate,
    'https://prices.azure.com' AS source_url, ?::TIMESTAMP AS first_seen,
    valid_from, valid_to, last_seen, run AS opened_run, run + 1 AS last_run,
    offer_count, NULL AS price_hour_median_usd, origin AS price_origin, rule AS price_rule,
    day AS price_date
FROM (VALUES
    ('eastus', 2.0, ?::TIMESTAMP, ?::TIMESTAMP, ?::TIMESTAMP, 1, NULL, 'published', NULL, NULL),
    ('eastus', 3.0, ?::TIMESTAMP, NULL, ?::TIMESTAMP, 2, 7, 'derived', 'a rule', DATE '2026-11-01'),
    ('westeurope', 5.0, ?::TIMESTAMP, ?::TIMESTAMP, ?::TIMESTAMP, 1, NULL, 'published', NULL,
     NULL)
) AS v(region, price, valid_from, valid_to, last_seen, run, offer_count, origin, rule, day)
"""
_OLD_PARAMS = [SKU, at(0), at(0), at(5), at(4), at(5), at(9), at(0), at(3), at(2)]


def old_database(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[str], list[tuple[object, ...]]]:
    """A file migrated only up to 0039 with a history in core.price_intervals: its columns
    and rows."""
    older = [(v, p) for v, p in schema.migrations() if v < 40]
    with monkeypatch.context() as patch:
        patch.setattr(schema, "migrations", lambda: older)
        con = duckdb.connect(str(path))
        try:
            schema.migrate(con)
            con.execute(_OLD_ROWS, _OLD_PARAMS)
            rows = con.execute("SELECT * FROM core.price_intervals ORDER BY ALL")
            return [d[0] for d in rows.description], rows.fetchall()
        finally:
            con.close()


def test_migration_0040_moves_every_interval_unchanged(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    columns, before = old_database(db_path, monkeypatch)
    with connections.writer(db_path) as con:
        after = con.execute(
            f"SELECT {', '.join(columns)} FROM core.price_intervals ORDER BY ALL"
        ).fetchall()
        split = con.execute(
            "SELECT (SELECT count(*) FROM core.current_offers), "
            "(SELECT count(*) FROM core.price_closed)"
        ).fetchone()
    assert len(before) == 3 and after == before
    assert split == (1, 2)
    assert set(violations(db_path).values()) == {0}


def test_ingest_continues_a_migrated_history(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old_database(db_path, monkeypatch)
    run(db_path, 10, [quote("eastus", 3.0, available=True)])  # the open interval, unchanged
    rows = query(
        db_path, "SELECT region, valid_from, valid_to, last_seen FROM price_history ORDER BY ALL"
    )
    assert rows == [
        ("eastus", at(0), at(5), at(4)),
        ("eastus", at(5), None, at(10)),
        ("westeurope", at(0), at(3), at(2)),
    ]
