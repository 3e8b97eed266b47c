"""An alert resolves when its condition stops holding: a provider that fetches again is no
longer failing (and a later failure is news again, not a repeat of a stale alert)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from priceadvisor.config import AlertRule, AlertSettings
from priceadvisor.notify import alerts
from priceadvisor.records import RawQuote, RunStatus, utcnow
from priceadvisor.store import connections
from tests.conftest import ingest_quotes
from tests.notify.test_alerts import H100, fetch

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


def test_a_message_says_which_of_its_alerts_resolved(db_path: Path) -> None:
    # Two rules on one GPU model share a message; in one evaluation the on-demand drop is over
    # (its price went back up) while the spot price drops.
    settings = AlertSettings(
        rules=[
            AlertRule(kind="price_drop", gpu_model="H100-SXM-80GB", pricing="on_demand"),
            AlertRule(kind="price_drop", gpu_model="H100-SXM-80GB", pricing="spot"),
        ],
        for_fetches=1,
        send_resolved=True,
    )

    def prices(on_demand: float, spot: float) -> list[alerts.Decision]:
        quotes = [
            RawQuote(
                region="eastus",
                instance_type=H100,
                pricing=pricing,
                price=price,
                gpu_name_raw="H100 SXM",
                gpu_count=8.0,
            )
            for pricing, price in (("on_demand", on_demand), ("spot", spot))
        ]
        ingest_quotes(db_path, "azure", quotes)
        with connections.writer(db_path) as con:
            return alerts.evaluate(con, settings, utcnow())

    assert prices(98.32, 40.0) == []
    assert [d.observation.labels["pricing"] for d in prices(80.0, 40.0)] == ["on_demand"]
    both = prices(98.32, 30.0)
    assert sorted((d.observation.labels["pricing"], d.resolved) for d in both) == [
        ("on_demand", True),
        ("spot", False),
    ]
    [message] = alerts.messages(both, utcnow())
    over = next(d for d in both if d.resolved).observation.lines
    assert all(f"- resolved: {line}" in message.text for line in over), message.text
    assert all(f"resolved: {line}" in message.html for line in over)
