"""What an alert's lines say is what the offers are: costs in dollars and cents whatever their
size, and the price a new offer is "from" is one its provider publishes."""

from __future__ import annotations

from pathlib import Path

import pytest

from priceadvisor.cli.app import main
from priceadvisor.config import AlertRule, AlertSettings, WorkloadProfile
from priceadvisor.notify import alerts
from priceadvisor.records import RawQuote, utcnow
from priceadvisor.sizing.advisor import store_advice
from priceadvisor.store import connections
from tests.conftest import ingest_quotes


def fetch_offline(db: Path, *providers: str) -> None:
    with pytest.raises(SystemExit):
        main(["--db", str(db), "fetch", "--offline", *(a for p in providers for a in ("-p", p))])


def test_a_cheaper_alert_gives_a_large_run_cost_in_dollars(db_path: Path) -> None:
    # Pre-training a 70B model on 200B tokens costs six figures on any of Lambda's offers.
    fetch_offline(db_path, "lambda")
    run = WorkloadProfile(name="big", task="pretrain", model="llama-3.1-70b", train_tokens=2e11)
    rule = AlertRule(kind="cheaper", workload="big", baseline=1e9)  # fires at once
    with connections.writer(db_path) as con:
        store_advice(con, [run])
        [best] = con.execute(
            "SELECT cost_usd FROM advice WHERE workload = 'big' AND rank = 1"
        ).fetchone() or [None]
        [fired] = alerts.evaluate(con, AlertSettings(rules=[rule], for_fetches=1), utcnow())
    assert best is not None and best > 10_000
    first = fired.observation.lines[0]
    assert first.startswith(f"${best:,.2f} per run"), first  # not "$1.06e+05 per run"


def test_a_new_offer_is_from_its_cheapest_published_price(db_path: Path) -> None:
    # Oracle publishes on-demand prices; its preemptible prices are derived from them (a
    # documented 50 % discount), which is no price Oracle lists.
    settings = AlertSettings(rules=[AlertRule(kind="new_offer")], for_fetches=1)
    fetch_offline(db_path, "gcp")
    with connections.writer(db_path) as con:
        assert alerts.evaluate(con, settings, utcnow()) == []  # what is there is not new
    fetch_offline(db_path, "oracle")
    with connections.writer(db_path) as con:
        fired = alerts.evaluate(con, settings, utcnow())
        published = dict(
            con.execute(
                "SELECT gpu_model, min(price_gpu_hour_usd) FROM offers WHERE provider = 'oracle'"
                " AND price_origin = 'published' AND pricing IN ('on_demand', 'spot')"
                " GROUP BY ALL"
            ).fetchall()
        )
    oracle = [d.observation for d in fired if d.observation.labels["provider"] == "oracle"]
    assert oracle and {o.labels["gpu_model"] for o in oracle} == set(published)
    for o in oracle:
        assert f"from ${published[o.labels['gpu_model']]:.3f}/GPU-h" in o.lines[0], o.lines


def test_a_new_offer_without_a_gpu_count_gives_its_own_price_not_zero(db_path: Path) -> None:
    def quote(region: str, count: float | None) -> RawQuote:
        return RawQuote(
            region=region,
            instance_type="gpu-h100-unknown-count" if count is None else "gpu-h100-8x",
            pricing="on_demand",
            price=98.32,
            gpu_name_raw="H100 SXM",
            gpu_count=count,
        )

    settings = AlertSettings(rules=[AlertRule(kind="new_offer")], for_fetches=1)
    ingest_quotes(db_path, "azure", [quote("eastus", 8.0)])
    with connections.writer(db_path) as con:
        assert alerts.evaluate(con, settings, utcnow()) == []
    ingest_quotes(db_path, "azure", [quote("eastus", 8.0), quote("westus3", None)])
    with connections.writer(db_path) as con:
        [fired] = alerts.evaluate(con, settings, utcnow())
    assert "from $98.320/h per offer (GPU count unknown)" in fired.observation.lines[0]
