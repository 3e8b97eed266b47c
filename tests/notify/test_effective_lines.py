"""The `cheaper` alert and the digest's workload lines read the effective cost and say list
vs effective, with the terms that make the difference."""

from __future__ import annotations

import json
from pathlib import Path

from priceadvisor.config import load_settings
from priceadvisor.notify import alerts, digest
from priceadvisor.notify.render import money
from priceadvisor.records import RawQuote, utcnow
from priceadvisor.sizing.advisor import store_advice
from priceadvisor.store import connections
from tests.conftest import ingest_quotes

CONFIG = """
[[workloads]]
name = "short"
task = "lora"
model = "llama-3.1-8b"
train_tokens = 1e7

[[alerts.rules]]
kind = "cheaper"
workload = "short"
"""


def test_alert_and_digest_say_list_and_effective(tmp_path: Path) -> None:
    config, db = tmp_path / "c.toml", tmp_path / "d.duckdb"
    config.write_text(CONFIG)
    settings = load_settings(config)
    h100 = RawQuote(
        region="ams",
        instance_type="H100 x1",
        pricing="on_demand",
        price=2.00,
        gpu_name_raw="H100 SXM",
        gpu_count=1.0,
        available=True,
    )
    ingest_quotes(db, "vultr", [h100])  # billed per hour: a run under an hour costs one hour
    with connections.writer(db) as con:
        store_advice(con, settings.workloads)
        [[listed, hours]] = con.execute("SELECT list_cost_usd, hours FROM advice").fetchall()
        alerts._prepare_offers(con, settings.alerts, utcnow(), None)  # as evaluate() does
        [observed] = alerts.observe(con, settings.alerts.rules[0], [])
        built = digest.build(con, settings, utcnow())
    said = (
        f"effective (list {money(listed)}: billed per hour, at least 60 min: {hours:.4g} h → 1 h)"
    )
    assert observed.value == 2.00  # ranked and alerted at the hour billed
    assert observed.lines[0].startswith(f"$2.00 per run {said}: vultr ams H100 x1")
    [row] = built.workloads
    assert row["cost"] == 2.00 and row["effective_note"] == f" {said}"
    message = digest.render(built)
    assert said in message.text
    assert said in message.html
    assert any(said in json.dumps(p, ensure_ascii=False) for p in message.slack)


def test_the_digest_names_the_term_that_moved_a_rank(tmp_path: Path) -> None:
    """Two hosts, one cheaper by list but with a whole hour billed for a short run: the
    digest's line for the row that rose says which term moved it."""
    config, db = tmp_path / "c.toml", tmp_path / "d.duckdb"
    config.write_text(CONFIG.split("[[alerts.rules]]", maxsplit=1)[0] + "[digest]\ntop = 2\n")
    settings = load_settings(config)

    def h100(price: float) -> RawQuote:
        return RawQuote(region="ams", instance_type="H100 x1", pricing="on_demand", price=price,
                        gpu_name_raw="H100 SXM", gpu_count=1.0, available=True)  # fmt: skip

    ingest_quotes(db, "vultr", [h100(2.00)])  # per hour, at least 60 min
    ingest_quotes(db, "runpod", [h100(2.50)])  # per second
    with connections.writer(db) as con:
        store_advice(con, settings.workloads)
        [(reason,)] = con.execute("SELECT rank_reason FROM advice WHERE rank = 1").fetchall()
        built = digest.build(con, settings, utcnow())
    assert reason.startswith("list #2 → #1: billing unit +$")
    assert reason.endswith("on vultr ams 1× H100-SXM-80GB on_demand (list #1)")
    message = digest.render(built)
    for text in (message.text, message.html):
        assert f"rank moved: {reason}".replace(">", "&gt;" if text is message.html else ">") in text
