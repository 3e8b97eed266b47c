"""An alert resolves when its condition stops holding: a provider that fetches again is no
longer failing (and a later failure is news again, not a repeat of a stale alert)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from priceadvisor.config import AlertRule, AlertSettings
from priceadvisor.notify import alerts
from priceadvisor.records import RunStatus, utcnow
from priceadvisor.store import connections
from tests.notify.test_alerts import fetch

FAILING = AlertSettings(
    rules=[AlertRule(kind="provider_failing")], for_fetches=1, failing_after=2, send_resolved=True
)


def evaluate(db: Path, now: dt.datetime) -> list[tuple[str, bool]]:
    with connections.writer(db) as con:
        decisions = alerts.evaluate(con, FAILING, now)
    return [(d.observation.labels["provider"], d.resolved) for d in decisions]


def firing(db: Path) -> list[str]:
    with connections.reader(db) as con:
        rows = con.execute("SELECT labels FROM core.alert_state WHERE firing").fetchall()
    return [str(r[0]) for r in rows]


def test_a_provider_fetching_again_resolves_its_failing_alert(db_path: Path) -> None:
    now = utcnow()
    fetch(db_path, {"eastus": 98.32})
    assert evaluate(db_path, now) == []
    for _ in range(2):
        fetch(db_path, {}, status=RunStatus.FAILED)
    assert evaluate(db_path, now) == [("azure", False)]
    fetch(db_path, {"eastus": 98.32})  # back
    assert evaluate(db_path, now + dt.timedelta(hours=1)) == [("azure", True)]
    assert firing(db_path) == []
    for _ in range(2):  # failing again, an hour later: a new alert, not a silent state
        fetch(db_path, {}, status=RunStatus.FAILED)
    assert evaluate(db_path, now + dt.timedelta(hours=2)) == [("azure", False)]
