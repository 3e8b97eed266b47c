"""Alerts and the outbox on a lake: the same code as on a file, without the constraints a lake
lacks (alert state replaced by MERGE, notification ids from the counter, claims by row count)."""

from __future__ import annotations

from pathlib import Path

from priceadvisor.notify import alerts, outbox
from priceadvisor.records import utcnow
from priceadvisor.store import connections, lake
from tests.notify.test_alerts import DROP, fetch


def test_a_drop_fires_once_and_is_claimed_once(tmp_path: Path) -> None:
    target = lake.Lake(catalog=str(tmp_path / "c.ducklake"), data_path=f"{tmp_path / 'd'}/")
    now = utcnow()
    queued = []
    for price in (98.32, 80.0, 80.0, 80.0):
        fetch(target, {"eastus": price})  # a lake is a store too
        with connections.writer(target) as con:
            queued.append(alerts.evaluate_and_queue(con, DROP, ["email", "slack"], now))
    assert queued == [0, 0, 2, 0]  # reference, 1 of 2, fires on both channels, no repeat
    with connections.writer(target) as con:
        states = con.execute("SELECT count(*), count(DISTINCT fingerprint) FROM core.alert_state")
        assert states.fetchone() == (1, 1)
        later = utcnow()  # queued rows are due from the moment they were queued
        due = outbox.due(con, later)
        assert [channel for _, channel in due] == ["email", "slack"]
        assert len({row_id for row_id, _ in due}) == 2
        row_id = due[0][0]
        assert outbox.claim(con, row_id, later, lease=60) is not None
        assert outbox.claim(con, row_id, later, lease=60) is None  # taken: not due any more
