"""The `available` alert on RunPod's recorded stock answer: a workload's GPUs sold out, then in
stock, then sold out again fires once after the hold and resolves once."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from priceadvisor.collect.adapters.runpod import parse_lowest_prices
from priceadvisor.config import (
    AlertRule,
    AlertSettings,
    ConfigError,
    WorkloadProfile,
    load_settings,
)
from priceadvisor.notify import alerts
from priceadvisor.records import utcnow
from priceadvisor.resources import recordings_dir
from priceadvisor.sizing.advisor import store_advice
from priceadvisor.store import connections as store
from tests.conftest import ingest_quotes

URL = "https://api.runpod.io/graphql"
WORKLOAD = WorkloadProfile(
    name="lora-8b", task="lora", model="llama-3.1-8b", train_tokens=2e8, providers=["runpod"]
)
RULES = AlertSettings(
    rules=[AlertRule(kind="available", workload="lora-8b")], for_fetches=2, send_resolved=True
)


def recorded() -> Any:
    return json.loads((recordings_dir() / "runpod" / "gputypes-EU-RO-1.json").read_text())


def sold_out() -> Any:
    """The same answer with every GPU's stock gone (RunPod then gives no stockStatus)."""
    document = copy.deepcopy(recorded())
    for gpu in document["data"]["gpuTypes"]:
        if isinstance(gpu.get("lowestPrice"), dict):
            gpu["lowestPrice"]["stockStatus"] = None
    return document


def step(db: Path, document: Any) -> list[alerts.Decision]:
    """One fetch of the data centre, the advice refresh after it, one alert evaluation."""
    ingest_quotes(db, "runpod", parse_lowest_prices(document, "EU-RO-1", URL))
    with store.writer(db) as con:
        store_advice(con, [WORKLOAD])
        return alerts.evaluate(con, RULES, utcnow())


def test_stock_flipping_fires_once_after_the_hold_and_resolves(db_path: Path) -> None:
    assert any(
        isinstance(g.get("lowestPrice"), dict) and g["lowestPrice"].get("stockStatus")
        for g in recorded()["data"]["gpuTypes"]
    ), "the recording must have GPUs in stock"
    outcomes = [
        step(db_path, document)
        for document in (sold_out(), sold_out(), recorded(), recorded(), recorded(), sold_out())
    ]
    fired = [(i, d) for i, found in enumerate(outcomes) for d in found if not d.resolved]
    resolved = [(i, d) for i, found in enumerate(outcomes) for d in found if d.resolved]
    assert [i for i, _ in fired] == [3]  # in stock at fetch 2, held at 3: fires once
    assert [i for i, _ in resolved] == [5]  # the last rentable one went away
    lines = fired[0][1].observation.lines
    assert lines[0].startswith("rentable now: runpod EU-RO-1 ")
    assert "stock " in lines[0] and URL in lines[0] and "fetched " in lines[0]
    assert resolved[0][1].observation.lines == ["lora-8b: no suitable offer is rentable now"]


def test_a_workload_rentable_from_the_start_does_not_alert(db_path: Path) -> None:
    assert [step(db_path, recorded()) for _ in range(3)] == [[], [], []]


def test_an_available_rule_needs_a_workload(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[[alerts.rules]]\nkind = "available"\n')
    with pytest.raises(ConfigError, match="'available' rule needs workload"):
        load_settings(path)
