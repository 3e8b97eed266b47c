"""The `api_cheaper` alert: a serve workload's rented offers against OpenRouter's recorded
listing, with the API's price moved up and down between evaluations."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from priceadvisor.collect.adapters.openrouter import parse_listing
from priceadvisor.collect.adapters.runpod import parse_lowest_prices
from priceadvisor.config import AlertRule, AlertSettings, WorkloadProfile
from priceadvisor.manifest import manifest
from priceadvisor.notify import alerts
from priceadvisor.records import FetchResult, RunStatus, utcnow
from priceadvisor.resources import recordings_dir
from priceadvisor.sizing.advisor import store_advice
from priceadvisor.store import connections as store
from priceadvisor.store.ingest import ingest
from priceadvisor.store.runs import start_run
from tests.conftest import ingest_quotes

WORKLOAD = WorkloadProfile(
    name="chat-8b",
    task="serve",
    model="llama-3.1-8b",
    providers=["runpod"],
    monthly_output_tokens=2e9,
)
RULES = AlertSettings(
    rules=[AlertRule(kind="api_cheaper", workload="chat-8b")], for_fetches=2, send_resolved=False
)
LLAMA_8B = 4  # its place in the recorded listing


def listing(output_per_token: str) -> Any:
    """The recorded listing with Llama 3.1 8B's prices set (input at the same price)."""
    path = recordings_dir() / "openrouter" / "models.json"
    document = copy.deepcopy(json.loads(path.read_text(encoding="utf-8")))
    entry = document["data"][LLAMA_8B]
    assert entry["id"] == "meta-llama/llama-3.1-8b-instruct"
    entry["pricing"]["prompt"] = entry["pricing"]["completion"] = output_per_token
    return document


def step(db: Path, api_price: str) -> list[alerts.Decision]:
    """A fetch of the API prices, the advice refresh, one alert evaluation."""
    with store.writer(db) as con:
        run_id = start_run(con, "openrouter")
        result = FetchResult(
            "openrouter",
            RunStatus.OK,
            api_prices=parse_listing(listing(api_price)),
            finished_at=utcnow(),
        )
        ingest(con, run_id, result, manifest("openrouter"))
        store_advice(con, [WORKLOAD])
        return alerts.evaluate(con, RULES, utcnow(), workloads=[WORKLOAD])


@pytest.fixture
def db(db_path: Path) -> Path:
    document = json.loads((recordings_dir() / "runpod" / "gputypes-EU-RO-1.json").read_text())
    url = "https://api.runpod.io/graphql"
    ingest_quotes(db_path, "runpod", parse_lowest_prices(document, "EU-RO-1", url))
    return db_path


CHEAP_API = "0.00000001"  # $0.01 per 1M tokens: no rented GPU beats it
DEAR_API = "0.00001"  # $10 per 1M tokens: every rented GPU beats it


def test_fires_after_the_hold_when_self_hosting_becomes_cheaper_and_back(db: Path) -> None:
    assert step(db, CHEAP_API) == []  # the API is cheaper: the state it may fire from
    assert step(db, DEAR_API) == []  # holds once: for_fetches = 2
    [fired] = step(db, DEAR_API)
    assert not fired.resolved
    assert fired.observation.title.startswith("self-hosting chat-8b is now cheaper than API")
    assert "openrouter meta-llama/llama-3.1-8b-instruct" in fired.observation.title
    assert "self-hosting wins at every volume above" in fired.observation.lines[1]
    assert step(db, DEAR_API) == []  # still firing: no repeat before repeat_interval
    [back] = step(db, CHEAP_API)  # the way back is always told, whatever send_resolved says
    assert back.resolved
    assert back.observation.lines[0].startswith("API openrouter meta-llama/llama-3.1-8b-instruct")
    assert "is cheaper than self-hosting chat-8b again" in back.observation.lines[0]
    [message] = alerts.messages([back], utcnow())
    assert message.subject.endswith("(resolved)")


def test_never_fires_when_self_hosting_was_always_cheaper(db: Path) -> None:
    assert [step(db, DEAR_API) for _ in range(4)] == [[], [], [], []]


def test_no_series_without_an_api_price_for_the_model(db: Path) -> None:
    other = WorkloadProfile(name="chat-8b", task="serve", model="qwen3-8b", providers=["runpod"])
    with store.writer(db) as con:
        store_advice(con, [other])
        assert alerts.observe(con, RULES.rules[0], [], [other]) == []


def test_the_rule_needs_a_workload() -> None:
    with pytest.raises(ValueError, match="needs workload"):
        AlertRule(kind="api_cheaper")


def test_the_digest_shows_the_api_beside_the_best_rented_option(db: Path, tmp_path: Path) -> None:
    from priceadvisor.config import load_settings
    from priceadvisor.notify import digest as digests

    step(db, DEAR_API)
    config = tmp_path / "c.toml"
    config.write_text(
        '[[workloads]]\nname = "chat-8b"\ntask = "serve"\nmodel = "llama-3.1-8b"\n'
        'providers = ["runpod"]\nmonthly_output_tokens = 2e9\n'
    )
    settings = load_settings(config, db=db)
    with store.reader(db) as con:
        message = digests.render(digests.build(con, settings, utcnow()))
    [line] = [
        x
        for x in message.text.splitlines()
        if x.strip().startswith("chat-8b: API for llama-3.1-8b")
    ]
    assert "openrouter meta-llama/llama-3.1-8b-instruct $50/1M output tokens" in line
    assert "self-hosting wins at every volume above" in line
    assert "Self-host or call an API" in message.html
    assert line.strip().split(";")[0] in message.html


def test_resolves_when_another_api_of_the_model_becomes_the_cheaper_one(db: Path) -> None:
    # OpenRouter lists variants of a model (":nitro", ":floor") at their own prices; the
    # cheapest API for the model can change from one to another. The workload's alert is one
    # state: "self-hosting is cheaper than the cheapest API" stops holding, whichever API it is.
    assert step(db, CHEAP_API) == []
    assert step(db, DEAR_API) == []
    assert [d.resolved for d in step(db, DEAR_API)] == [False]  # self-hosting is cheaper

    def with_cheap_variant(price: str) -> Any:
        document = listing(price)
        variant = copy.deepcopy(document["data"][LLAMA_8B])
        variant["id"] = "meta-llama/llama-3.1-8b-instruct:floor"
        variant["pricing"]["prompt"] = variant["pricing"]["completion"] = CHEAP_API
        document["data"].append(variant)
        return document

    with store.writer(db) as con:
        run_id = start_run(con, "openrouter")
        prices = parse_listing(with_cheap_variant(DEAR_API))
        result = FetchResult("openrouter", RunStatus.OK, api_prices=prices, finished_at=utcnow())
        ingest(con, run_id, result, manifest("openrouter"))
        store_advice(con, [WORKLOAD])
        [back] = alerts.evaluate(con, RULES, utcnow(), workloads=[WORKLOAD])
        firing = con.execute("SELECT count(*) FROM core.alert_state WHERE firing").fetchone()
    assert back.resolved
    assert back.observation.lines[0] == (
        "API openrouter meta-llama/llama-3.1-8b-instruct:floor is cheaper than self-hosting "
        "chat-8b again"
    )
    assert firing == (0,)
