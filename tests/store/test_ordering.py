"""Snapshots merge in observation order: a late, older snapshot never rewrites newer history."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from priceadvisor.manifest import manifest
from priceadvisor.records import FetchResult, RawQuote, RunStatus
from priceadvisor.store import connections, schema
from priceadvisor.store.ingest import ingest
from priceadvisor.store.runs import start_run
from tests.conftest import query
from tests.history import INVARIANTS, violations

T0 = dt.datetime(2026, 11, 20, 12, 0)
SOUND = dict.fromkeys(INVARIANTS, 0)


def quote(region: str, price: float) -> RawQuote:
    return RawQuote(
        region=region, instance_type="Standard_NC24ads_A100_v4", pricing="on_demand", price=price
    )


def started(db: Path) -> int:
    with connections.writer(db) as con:
        return start_run(con, "azure")


def merge(db: Path, run_id: int, observed: dt.datetime, quotes: list[RawQuote], **kw: Any) -> Any:
    """Ingest a snapshot observed at `observed` (its fetch's finish time)."""
    result = FetchResult(
        "azure", kw.pop("status", RunStatus.OK), quotes, finished_at=observed, **kw
    )
    with connections.writer(db) as con:
        return ingest(con, run_id, result, manifest("azure"))


def history(db: Path) -> list[tuple[Any, ...]]:
    return query(
        db,
        "SELECT region, price_hour_usd, valid_from, valid_to FROM price_history ORDER BY ALL",
    )


def test_a_late_older_snapshot_is_superseded_and_changes_nothing(db_path: Path) -> None:
    early, late = started(db_path), started(db_path)  # two fetches in flight at once
    merge(db_path, late, T0 + dt.timedelta(minutes=2), [quote("eastus", 4.0)])
    before = history(db_path)
    summary = merge(db_path, early, T0 + dt.timedelta(minutes=1), [quote("eastus", 3.0)])
    assert summary.status is RunStatus.SUPERSEDED
    assert "2026-11-20 12:02:00" in (summary.error or "")
    assert history(db_path) == before == [("eastus", 4.0, T0 + dt.timedelta(minutes=2), None)]
    assert query(db_path, "SELECT status, observed_at FROM fetch_runs ORDER BY run_id") == [
        ("superseded", T0 + dt.timedelta(minutes=1)),
        ("ok", T0 + dt.timedelta(minutes=2)),
    ]
    assert violations(db_path) == SOUND


def test_an_older_snapshot_cannot_reopen_an_offer_a_newer_one_closed(db_path: Path) -> None:
    merge(db_path, started(db_path), T0, [quote("eastus", 3.0), quote("westeurope", 3.5)])
    stale = started(db_path)
    merge(db_path, started(db_path), T0 + dt.timedelta(minutes=2), [quote("westeurope", 3.5)])
    merge(
        db_path,
        stale,
        T0 + dt.timedelta(minutes=1),
        [quote("eastus", 2.0), quote("westeurope", 3.1)],
    )
    assert history(db_path) == [
        ("eastus", 3.0, T0, T0 + dt.timedelta(minutes=2)),
        ("westeurope", 3.5, T0, None),
    ]
    assert violations(db_path) == SOUND


def test_snapshots_in_order_close_at_the_observation_time_not_the_ingest_time(
    db_path: Path,
) -> None:
    first, second = started(db_path), started(db_path)
    merge(db_path, first, T0, [quote("eastus", 3.0)])
    merge(db_path, second, T0 + dt.timedelta(minutes=1), [quote("eastus", 3.2)])
    assert history(db_path) == [
        ("eastus", 3.0, T0, T0 + dt.timedelta(minutes=1)),
        ("eastus", 3.2, T0 + dt.timedelta(minutes=1), None),
    ]
    [(finished, observed)] = query(
        db_path, "SELECT finished_at, observed_at FROM fetch_runs WHERE run_id = ?", [second]
    )
    assert observed == T0 + dt.timedelta(minutes=1) and finished > observed  # ingested later


def test_a_snapshot_observed_at_the_same_moment_is_superseded(db_path: Path) -> None:
    merge(db_path, started(db_path), T0, [quote("eastus", 3.0)])
    summary = merge(db_path, started(db_path), T0, [quote("eastus", 3.3)])
    assert summary.status is RunStatus.SUPERSEDED
    assert history(db_path) == [("eastus", 3.0, T0, None)]


def test_a_late_failed_fetch_is_recorded_as_failed(db_path: Path) -> None:
    stale = started(db_path)
    merge(db_path, started(db_path), T0 + dt.timedelta(minutes=2), [quote("eastus", 3.0)])
    summary = merge(
        db_path, stale, T0, [], status=RunStatus.FAILED, error="HTTP 503 from the source"
    )
    assert (summary.status, summary.error) == (RunStatus.FAILED, "HTTP 503 from the source")
    assert violations(db_path) == SOUND


def test_an_upgraded_database_orders_new_snapshots_after_its_old_runs(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before_0005 = [m for m in schema.migrations() if m[0] < 5]
    monkeypatch.setattr(schema, "migrations", lambda: before_0005)
    monkeypatch.setattr(schema, "create_views", lambda con: None)  # today's views need 0005
    with connections.writer(db_path) as con:  # a database written before observation times
        con.execute(
            "INSERT INTO core.fetch_runs (provider, started_at, finished_at, status) "
            "VALUES ('azure', ?, ?, 'ok'), ('azure', ?, NULL, 'failed')",
            [T0, T0 + dt.timedelta(minutes=1), T0],
        )
    monkeypatch.undo()
    connections._prepared.clear()  # a new process: the upgrade runs at its first write
    summary = merge(db_path, started(db_path), T0, [quote("eastus", 3.0)])
    assert summary.status is RunStatus.SUPERSEDED  # observed before the old run finished
    assert query(db_path, "SELECT status, observed_at FROM fetch_runs ORDER BY run_id") == [
        ("ok", T0 + dt.timedelta(minutes=1)),
        ("failed", None),
        ("superseded", T0),
    ]
