"""Alert rules and their Alertmanager semantics, on a real DuckDB file with scripted prices."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from priceadvisor.config import AlertRule, AlertSettings, ConfigError, load_settings
from priceadvisor.gpu_specs import region_catalog
from priceadvisor.notify import alerts
from priceadvisor.records import RawQuote, RunStatus, utcnow
from priceadvisor.store import connections, leases
from tests.conftest import cli, ingest_quotes, query
from tests.notify.test_notify import SECRET, Inbox, Webhook, free_port, smtp_server, webhook_server

H100 = "Standard_ND96isr_H100_v5"


def fetch(
    db: Path, prices: dict[str, float], provider: str = "azure", status: RunStatus = RunStatus.OK
) -> None:
    """A fetch run of `provider` with one 8x H100 offer per region at the given node price."""
    quotes = [
        RawQuote(
            region=r,
            instance_type=H100,
            pricing="on_demand",
            price=p,
            gpu_name_raw="H100 SXM",
            gpu_count=8.0,
        )
        for r, p in prices.items()
    ]
    failed = status is not RunStatus.OK
    ingest_quotes(db, provider, [] if failed else quotes, status, "HTTP 500" if failed else None)


def evaluate(
    db: Path, settings: AlertSettings, now: dt.datetime | None = None
) -> list[alerts.Decision]:
    with connections.writer(db) as con:
        return alerts.evaluate(con, settings, now or utcnow())


DROP = AlertSettings(rules=[AlertRule(kind="price_drop", gpu_model="H100-SXM-80GB")], for_fetches=2)


def test_price_drop_holds_for_k_fetches_then_fires_once(db_path: Path) -> None:
    fetch(db_path, {"eastus": 98.32})
    assert evaluate(db_path, DROP) == []  # the first observation is the reference
    fetch(db_path, {"eastus": 80.0})
    assert evaluate(db_path, DROP) == []  # 1 of 2
    fetch(db_path, {"eastus": 80.0})
    [fired] = evaluate(db_path, DROP)
    assert fired.observation.value == 10.0 and "eastus" in fired.observation.lines[0]
    assert evaluate(db_path, DROP) == []  # firing: no repeat before repeat_interval
    later = utcnow() + dt.timedelta(days=2)
    # two days on, the price is stale (Azure is fetched every 6 h): not observed by default
    assert evaluate(db_path, DROP, later) == []
    stale_too = DROP.model_copy(update={"include_stale": True})
    assert len(evaluate(db_path, stale_too, later)) == 1  # repeat interval elapsed


def test_market_averages_never_count_as_a_cheaper_price(db_path: Path) -> None:
    fetch(db_path, {"eastus": 98.32})
    assert evaluate(db_path, DROP) == []
    market = RawQuote(
        region="global",
        instance_type="H100",
        pricing="market",
        price=2.12,
        price_basis="gpu",
        gpu_name_raw="H100",
        gpu_count=1,
        price_date="2026-07-15",
    )
    for _ in range(3):
        ingest_quotes(db_path, "sfcompute", [market])
        fetch(db_path, {"eastus": 98.32})
        assert evaluate(db_path, DROP) == []


def test_a_price_jump_alerts_only_once_a_later_fetch_confirms_it(db_path: Path) -> None:
    """The offer guard flags a 4.9x drop between two fetches (store/guard.py): no alert, even
    with a one-fetch hold, until the next fetch sees the same price."""
    once = AlertSettings(rules=DROP.rules, for_fetches=1)
    fetch(db_path, {"eastus": 98.32})
    assert evaluate(db_path, once) == []
    fetch(db_path, {"eastus": 20.0})
    [(flag,)] = query(db_path, "SELECT flag FROM offers")
    assert flag == "price_jump" and evaluate(db_path, once) == []
    fetch(db_path, {"eastus": 20.0})
    [fired] = evaluate(db_path, once)
    assert "eastus" in fired.observation.lines[0]


def test_hysteresis_against_a_flapping_price(db_path: Path) -> None:
    fetch(db_path, {"eastus": 98.32})
    evaluate(db_path, DROP)
    for _ in range(2):
        fetch(db_path, {"eastus": 80.0})
        fired = evaluate(db_path, DROP)
    assert len(fired) == 1
    notifications = 0
    for price in (98.32, 80.0, 80.0, 98.32, 80.0, 80.0):  # flaps back to the notified level
        fetch(db_path, {"eastus": price})
        notifications += len(evaluate(db_path, DROP))
    assert notifications == 0
    for _ in range(2):  # a further 10 % drop alerts again
        fetch(db_path, {"eastus": 70.0})
        fired = evaluate(db_path, DROP)
    assert len(fired) == 1


def test_silence_suppresses_then_expires(db_path: Path) -> None:
    fetch(db_path, {"eastus": 98.32})
    evaluate(db_path, DROP)
    now = utcnow()
    with connections.writer(db_path) as con:
        alerts.silence(
            con, {"gpu_model": "H100-SXM-80GB"}, now + dt.timedelta(hours=1), "maintenance", now
        )
    for _ in range(3):
        fetch(db_path, {"eastus": 80.0})
        assert evaluate(db_path, DROP) == []
    assert len(evaluate(db_path, DROP, now + dt.timedelta(hours=2))) == 1  # expired


def test_failing_provider_inhibits_its_price_alerts(db_path: Path) -> None:
    settings = AlertSettings(
        rules=[*DROP.rules, AlertRule(kind="provider_failing")], for_fetches=1, failing_after=2
    )
    fetch(db_path, {"eastus": 98.32})
    fetch(db_path, {"westeurope": 99.0}, provider="lambda")
    evaluate(db_path, settings)
    fetch(db_path, {"westus3": 40.0}, provider="lambda")  # lambda's offer drops...
    for _ in range(2):
        fetch(db_path, {}, provider="lambda", status=RunStatus.FAILED)  # ...then lambda fails
    fired = evaluate(db_path, settings)
    rules = sorted(d.observation.rule for d in fired)
    assert rules == ["provider_failing"]  # the drop seen only at the failing provider is held
    assert fired[0].observation.labels == {"provider": "lambda"}


def test_new_offers_are_seeded_then_grouped_per_gpu(db_path: Path) -> None:
    settings = AlertSettings(
        rules=[AlertRule(kind="new_offer", gpu_model="H100-SXM-80GB")], for_fetches=1
    )
    fetch(db_path, {"eastus": 98.32})
    assert evaluate(db_path, settings) == []  # what exists when the rule starts is not new
    fetch(db_path, {"eastus": 98.32, "westus3": 98.32, "swedencentral": 101.0})
    fired = evaluate(db_path, settings)
    assert sorted(d.observation.labels["region"] for d in fired) == ["swedencentral", "westus3"]
    [message] = alerts.messages(fired, utcnow())  # one message for the GPU model
    assert "westus3" in message.text and "swedencentral" in message.text
    assert evaluate(db_path, settings) == []  # not repeated


def test_bad_rules_are_config_errors(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('[[alerts.rules]]\nkind = "price_drop"\n')
    with pytest.raises(ConfigError, match="needs gpu_model"):
        load_settings(config)
    config.write_text('[[alerts.rules]]\nkind = "louder"\n')
    with pytest.raises(ConfigError, match=r"alerts\.rules\.0\.kind"):
        load_settings(config)


def test_scripted_drop_raises_one_grouped_alert_through_both_channels(
    capsys: pytest.CaptureFixture[str],
    db_path: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PRICEADVISOR_SMTP_PASSWORD", SECRET)
    port, inbox, hook = free_port(), Inbox(), Webhook(fail_first=0)
    with smtp_server(port, inbox), webhook_server(hook) as url:
        config = tmp_path / "alerts.toml"
        config.write_text(f"""
[alerts]
for_fetches = 2
[[alerts.rules]]
kind = "price_drop"
gpu_model = "H100-SXM-80GB"
threshold_pct = 10
[notify.email]
host = "127.0.0.1"
port = {port}
security = "none"
username = "alerts"
sender = "priceadvisor@example.com"
recipients = ["ml-infra@example.com"]
[notify.slack]
webhook_url = "{url}"
""")
        base = ["--config", str(config), "--db", str(db_path)]
        for prices in (
            {"eastus": 98.32, "westus3": 98.32},
            {"eastus": 60.0, "westus3": 62.0},
            {"eastus": 60.0, "westus3": 62.0},
            {"eastus": 60.0, "westus3": 62.0},
        ):
            fetch(db_path, prices)
            code, _, err = cli(capsys, *base, "alerts", "evaluate")
            assert code == 0, err
        code, out, _ = cli(capsys, *base, "alerts", "list", "--format", "json")
    assert len(inbox.messages) == 1 and len(hook.posts) == 1
    [(_, mail, raw)] = inbox.messages
    assert "price drop" in mail["Subject"] and b"eastus" in raw and b"westus3" in raw
    assert SECRET.encode() not in raw
    [state] = json.loads(out)
    assert state["firing"] is True and state["value"] == 7.5


def test_resolved_message_when_asked_for(db_path: Path) -> None:
    settings = DROP.model_copy(update={"send_resolved": True})
    fetch(db_path, {"eastus": 98.32})
    evaluate(db_path, settings)
    for _ in range(2):
        fetch(db_path, {"eastus": 80.0})
        fired = evaluate(db_path, settings)
    assert len(fired) == 1 and not fired[0].resolved
    fetch(db_path, {"eastus": 98.32})  # recovered past half the threshold
    [resolved] = evaluate(db_path, settings)
    assert resolved.resolved
    [message] = alerts.messages([resolved], utcnow())
    assert message.subject.endswith("(resolved)")


def test_silence_cli_add_list_rm(capsys: pytest.CaptureFixture[str], db_path: Path) -> None:
    fetch(db_path, {"eastus": 98.32})
    base = ["--db", str(db_path), "alerts", "silence"]
    code, out, _ = cli(
        capsys,
        *base,
        "add",
        "--match",
        "gpu_model=H100-SXM-80GB",
        "--duration",
        "2h",
        "--comment",
        "tender",
    )
    assert code == 0 and out.startswith("silence 1 until")
    code, out, _ = cli(capsys, *base, "list", "--format", "json")
    [row] = json.loads(out)
    assert json.loads(row["matchers"]) == {"gpu_model": "H100-SXM-80GB"} and row["active"]
    assert cli(capsys, *base, "add", "--match", "nolabel")[0] == 2  # usage errors
    assert cli(capsys, *base, "add", "--match", "a=b", "--duration", "soon")[0] == 2
    assert cli(capsys, *base, "rm", "1")[0] == 0
    code, _, err = cli(capsys, *base, "rm", "1")
    assert code == 1 and "no silence 1" in err


SCALE_GPUS = ["H100 SXM", "H200", "B200", "A100-SXM4-80GB", "L40S", "L4", "A10G", "T4", "MI300X"]


def snapshot(provider: str, regions: list[str]) -> list[RawQuote]:
    return [
        RawQuote(
            region=r,
            instance_type=f"{gpu.replace(' ', '-')}-x1",
            pricing="on_demand",
            price=2.0,
            gpu_name_raw=gpu,
            gpu_count=1.0,
        )
        for r in regions
        for gpu in SCALE_GPUS
    ]


def test_new_offer_rule_over_a_thousand_combinations_fires_within_the_daemons_memory(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in {"memory_limit": "128MB", "threads": 1}.items():  # as the daemon runs
        monkeypatch.setitem(connections.CONNECTION_CONFIG, key, value)
    settings = AlertSettings(rules=[AlertRule(kind="new_offer")], for_fetches=1)
    regions = {p: sorted(r for q, r in region_catalog() if q == p) for p in ("vast", "azure")}
    for provider, names in regions.items():  # what exists when the rule starts
        ingest_quotes(db_path, provider, snapshot(provider, names[:1]))
    assert evaluate(db_path, settings) == []
    for provider, names in regions.items():  # then every region gets every GPU model
        ingest_quotes(db_path, provider, snapshot(provider, names))
    [(combinations,)] = query(
        db_path, "SELECT count(DISTINCT (gpu_model, provider, region)) FROM offers"
    )
    assert combinations >= 1000 + 2 * len(SCALE_GPUS)
    with connections.writer(db_path) as con:
        queued = alerts.evaluate_and_queue(con, settings, ["email"], utcnow())
        fired = con.execute("SELECT count(*) FROM core.alert_state WHERE firing").fetchone()
    assert fired == (combinations - 2 * len(SCALE_GPUS),)  # all but the seeded ones
    assert queued == len(SCALE_GPUS)  # one message per GPU model
    assert evaluate(db_path, settings) == []  # and not again


def test_manual_evaluation_takes_its_turn_behind_a_daemons_alerts_lease(
    capsys: pytest.CaptureFixture[str], db_path: Path, tmp_path: Path
) -> None:
    """On a lake two evaluations at once could queue one notification twice: `alerts evaluate`
    holds the same lease as the daemons, refuses while another holder has it, gives it back."""
    hook = Webhook(fail_first=0)
    fetch(db_path, {"eastus": 98.32})
    with webhook_server(hook) as url:
        config = tmp_path / "alerts.toml"
        config.write_text(
            f'lock_timeout = "1s"\n[[alerts.rules]]\nkind = "price_drop"\n'
            f'gpu_model = "H100-SXM-80GB"\nthreshold_pct = 10\n'
            f'[notify.slack]\nwebhook_url = "{url}"\n'
        )
        base = ["--config", str(config), "--db", str(db_path)]
        with connections.writer(db_path) as con:
            assert leases.acquire(con, "alerts", "other-host:42:abc", 600, utcnow())
        code, _, err = cli(capsys, *base, "alerts", "evaluate")
        assert code == 1 and "other-host:42:abc is evaluating alerts" in err
        assert len(err.strip().splitlines()) == 1
        with connections.writer(db_path) as con:
            assert leases.release(con, "alerts", "other-host:42:abc", utcnow())
        code, _, err = cli(capsys, *base, "alerts", "evaluate")
        assert code == 0, err
    with connections.reader(db_path) as con:
        assert leases.current(con, "alerts")[0] is None
