"""Migration 0119: `api_cheaper` states recorded per (workload, API) are dropped, so none is
left firing with nothing observing it; every other alert state is kept."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from priceadvisor.records import utcnow
from priceadvisor.store import connections, schema

STATES = [
    ("api_cheaper", {"workload": "chat", "api": "openrouter/llama-3.1-70b"}, True),
    ("api_cheaper", {"workload": "chat"}, False),
    ("price_drop", {"gpu_model": "H100-SXM-80GB", "pricing": "on_demand"}, True),
]


def test_api_cheaper_states_per_api_are_dropped(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    older = [(v, p) for v, p in schema.migrations() if v < 119]
    with monkeypatch.context() as patch:
        patch.setattr(schema, "migrations", lambda: older)
        with duckdb.connect(str(db_path)) as con:
            schema.migrate(con)
            for i, (rule, labels, firing) in enumerate(STATES):
                con.execute(
                    "INSERT INTO core.alert_state VALUES (?, ?, ?, 1, 1, 0, ?, 1, NULL, ?)",
                    [f"fp{i}", rule, json.dumps(labels), firing, utcnow()],
                )
    with connections.writer(db_path) as con:
        kept = con.execute("SELECT fingerprint FROM core.alert_state ORDER BY 1").fetchall()
    assert kept == [("fp1",), ("fp2",)]
