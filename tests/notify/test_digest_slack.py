"""The digest's Slack summary keeps every line it has: a section longer than Slack's 3000
characters goes on in the next section, never cut off."""

from __future__ import annotations

from pathlib import Path

import pytest

from priceadvisor.cli.app import main
from priceadvisor.config import load_settings
from priceadvisor.notify import digest
from priceadvisor.notify.render import figure, money
from priceadvisor.notify.slack import MAX_SECTION_CHARS
from priceadvisor.records import utcnow
from priceadvisor.sizing.advisor import store_advice
from priceadvisor.store import connections

# Pre-training runs on Vast.ai's spot market: each best option's line says its billing, spot
# restart and storage terms and the rank it moved from, ~600 characters.
WORKLOAD = """
[[workloads]]
name = "pretrain-{n}"
task = "pretrain"
model = "llama-3.1-8b"
train_tokens = {tokens}
spot_ok = true
storage_gb = 400
"""


def test_every_workload_reaches_slack(db_path: Path, tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        main(["--db", str(db_path), "fetch", "--offline", "-p", "vast"])
    config = tmp_path / "c.toml"
    config.write_text("".join(WORKLOAD.format(n=n, tokens=n * 1e9) for n in range(1, 9)))
    settings = load_settings(config)
    with connections.writer(db_path) as con:
        store_advice(con, settings.workloads)
        built = digest.build(con, settings, utcnow())
    payloads = digest.render(built).slack
    texts = [b["text"]["text"] for p in payloads for b in p["blocks"] if b["type"] == "section"]
    [shown] = [r for r in built.workloads if r["workload"] == "pretrain-8" and r["rank"] == 1]
    assert all(len(t) <= MAX_SECTION_CHARS for t in texts)
    slack = "\n".join(texts)
    assert [n for n in range(1, 9) if f"\npretrain-{n}: $" not in slack] == []
    assert len([t for t in texts if "pretrain-" in t]) > 1  # more than one section's worth
    assert f"pretrain-8: ${shown['cost']:,.2f} per run" in slack


def test_slack_gives_the_figures_the_email_gives(db_path: Path, tmp_path: Path) -> None:
    # Serving an 8B model on Vast.ai's cheapest consumer GPUs costs cents per 1M tokens: cut
    # to whole cents it would read $0.15 in Slack against $0.155 in the email (and $0.155 in
    # Slack's own "self-host or call an API" line).
    with pytest.raises(SystemExit):
        main(["--db", str(db_path), "fetch", "--offline", "-p", "vast"])
    config = tmp_path / "c.toml"
    config.write_text(
        '[[workloads]]\nname = "chat"\ntask = "serve"\nmodel = "llama-3.1-8b"\n'
        "monthly_output_tokens = 1e8\n"
    )
    settings = load_settings(config)
    with connections.writer(db_path) as con:
        store_advice(con, settings.workloads)
        built = digest.build(con, settings, utcnow())
    message = digest.render(built)
    slack = "\n".join(
        b["text"]["text"] for p in message.slack for b in p["blocks"] if b["type"] == "section"
    )
    [best] = [r for r in built.workloads if r["rank"] == 1]
    assert best["cost"] < 1
    assert f"chat: {money(best['cost'])} per 1M output tokens" in slack
    assert f"{money(best['cost'])}" in message.text
    mine = [r for r in built.gpu_prices if r["gpu_model"] in built.reader_gpus]
    assert mine and all(r["now_price"] < 1 for r in mine)
    for r in mine:
        assert f"{money(r['now_price'])}/GPU-h at {r['provider']}" in slack


def test_a_single_provider_market_is_one_provider(db_path: Path) -> None:
    with pytest.raises(SystemExit):
        main(["--db", str(db_path), "fetch", "--offline", "-p", "lambda"])
    with connections.reader(db_path) as con:
        built = digest.build(con, load_settings(None), utcnow())
    message = digest.render(built)
    assert built.first_week and built.market["providers"] == 1
    assert message.subject.startswith(f"First GPU price digest: {built.market['offers']} offers")
    for text in (message.subject, message.text, message.html, str(message.slack)):
        assert "from 1 provider" in text and "1 providers" not in text


def test_a_short_run_s_hours_are_not_zero_in_slack(db_path: Path, tmp_path: Path) -> None:
    # A LoRA pass over 2M tokens takes a few minutes on an H100: "0.0 h" to one decimal.
    with pytest.raises(SystemExit):
        main(["--db", str(db_path), "fetch", "--offline", "-p", "lambda"])
    config = tmp_path / "c.toml"
    config.write_text(
        '[[workloads]]\nname = "tiny"\ntask = "lora"\nmodel = "llama-3.1-8b"\ntrain_tokens = 2e6\n'
    )
    settings = load_settings(config)
    with connections.writer(db_path) as con:
        store_advice(con, settings.workloads)
        built = digest.build(con, settings, utcnow())
    message = digest.render(built)
    [best] = [r for r in built.workloads if r["rank"] == 1]
    assert 0 < best["hours"] < 0.05
    slack = str(message.slack)
    assert f"{figure(best['hours'])} h" in slack and " 0.0 h" not in slack
    assert f"{figure(best['hours'])} h" in message.text


def test_a_list_cost_under_a_dollar_reads_as_the_cost_does(db_path: Path, tmp_path: Path) -> None:
    # Serving an 8B model at 100M tokens a month with 200 GB of disk: the disk costs more per
    # 1M tokens than the GPU, whose list cost is cents.
    with pytest.raises(SystemExit):
        main(["--db", str(db_path), "fetch", "--offline", "-p", "vast"])
    config = tmp_path / "c.toml"
    config.write_text(
        '[[workloads]]\nname = "chat"\ntask = "serve"\nmodel = "llama-3.1-8b"\n'
        "monthly_output_tokens = 1e8\nstorage_gb = 200\n"
    )
    settings = load_settings(config)
    with connections.writer(db_path) as con:
        store_advice(con, settings.workloads)
        built = digest.build(con, settings, utcnow())
    [best] = [r for r in built.workloads if r["rank"] == 1]
    assert best["list_cost"] < 1 < best["cost"] - best["list_cost"] + 1
    assert f"effective (list {money(best['list_cost'])}: " in best["effective_note"]
