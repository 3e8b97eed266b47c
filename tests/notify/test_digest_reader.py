"""The digest as a reader sees it: week one summarised, their GPUs charted, the preview complete,
and the HTML readable on a 390 px phone (headless Chromium)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from priceadvisor.config import Settings, load_settings
from priceadvisor.notify import digest as digests
from priceadvisor.records import utcnow
from priceadvisor.service.stores import configured_store
from priceadvisor.store import connections
from tests.conftest import cli
from tests.service import dashboard_data
from tests.service.browser import chromium


def build(db: Path, settings: Settings) -> digests.Digest:
    with connections.reader(db) as con:
        return digests.build(con, settings, utcnow())


def fresh_market(db: Path) -> Path:
    """One week-old market: every interval began yesterday."""
    dashboard_data.build(db)
    with connections.writer(db) as con:
        con.execute("DELETE FROM core.price_closed")
        con.execute("UPDATE core.current_offers SET valid_from = now()::TIMESTAMP - INTERVAL 1 DAY")
    return db


def test_week_one_is_summarised_not_listed(db_path: Path, settings: Settings) -> None:
    digest = build(fresh_market(db_path), settings)
    message = digests.render(digest)
    assert digest.first_week and digest.new_offers == [] and digest.movers == []
    offers = sum(len(quotes) for quotes in dashboard_data.OFFERS.values())
    providers = len(dashboard_data.OFFERS)
    assert message.subject.startswith(
        f"First GPU price digest: {offers} offers from {providers} providers"
    )
    assert "First week of data" in message.text and "NEW AND VANISHED" not in message.text
    assert "—" not in message.text.split("CHEAPEST")[1].split("DATA HEALTH")[0]
    assert digests.chart_rows(digest) == []  # nothing to draw yet: no chart
    assert len(digest.gpu_prices) <= digests.GPU_ROWS


def test_the_readers_gpus_come_first_and_are_charted(db_path: Path, tmp_path: Path) -> None:
    dashboard_data.build(db_path)
    config = tmp_path / "c.toml"
    config.write_text('[digest]\ngpus = ["A100-PCIE-80GB", "H100-SXM-80GB"]\n')
    settings = load_settings(config, db=db_path)
    digest = build(db_path, settings)
    assert not digest.first_week
    first = [(r["gpu_model"], r["pricing"]) for r in digest.gpu_prices[:4]]
    assert first == [
        ("A100-PCIE-80GB", "on_demand"),
        ("A100-PCIE-80GB", "spot"),
        ("H100-SXM-80GB", "on_demand"),
        ("H100-SXM-80GB", "spot"),
    ]
    h100 = digest.gpu_prices[3]
    assert (h100["provider"], h100["region"]) == ("vast", "US")  # every price says who, where
    charted = {(r["gpu_model"], r["pricing"]) for r in digests.chart_rows(digest)}
    assert charted == {("H100-SXM-80GB", "on_demand"), ("H100-SXM-80GB", "spot")}


def test_workloads_say_why_and_mark_marketplaces(db_path: Path, settings: Settings) -> None:
    digest = build(dashboard_data.build(db_path), settings)
    message = digests.render(digest)
    assert digest.reader_gpus == ["H100-SXM-80GB"]  # from the workloads' options
    assert "[marketplace, no SLA]" in message.text  # vast, rank 1
    assert "limited by bandwidth, 1,280 tokens/s" in message.text
    # nothing moved week over week in this data: the subject says so and names their GPU
    assert message.subject.startswith("No price changes; H100-SXM-80GB from $1.89/GPU-h (vast, US)")


def test_preview_writes_the_chart_it_references(
    capsys: pytest.CaptureFixture[str], db_path: Path, tmp_path: Path
) -> None:
    pytest.importorskip("matplotlib")
    dashboard_data.build(db_path)
    config = tmp_path / "c.toml"
    config.write_text(
        '[notify.email]\nhost = "127.0.0.1"\nsender = "a@example.com"\n'
        'recipients = ["b@example.com"]\nchart = true\n'
    )
    out = tmp_path / "preview"
    code, _, err = cli(
        capsys, "--config", str(config), "--db", str(db_path), "digest", "--preview", str(out)
    )
    assert code == 0, err
    html = (out / "digest.html").read_text()
    assert 'src="price-chart.png"' in html and "cid:" not in html
    assert (out / "price-chart.png").read_bytes().startswith(b"\x89PNG")


def test_email_html_fits_a_390_px_phone(db_path: Path, settings: Settings, tmp_path: Path) -> None:
    digest = digests.with_health(
        build(dashboard_data.build(db_path), settings), settings, configured_store(settings)
    )
    page = tmp_path / "digest.html"
    page.write_text(digests.render(digest).html, encoding="utf-8")
    with chromium(tmp_path, width=390, height=844) as driver:
        driver.get(page.as_uri())
        inner = driver.execute_script("return window.innerWidth")
        width = driver.execute_script("return document.documentElement.scrollWidth")
    assert inner == 390 and width <= inner


def test_timestamps_print_without_microseconds(settings: Settings) -> None:
    now = dt.datetime(2026, 11, 23, 8, 0, 12, 345678)
    digest = digests.Digest(now, now - dt.timedelta(days=7), first_week=True)
    digest.health = [
        {
            "provider": "aws",
            "state": "fresh",
            "last_success": now,
            "last_error": None,
            "not_rentable": None,
        }
    ]
    html = digests.render(digest).html
    assert "345678" not in html and "2026-11-23 08:00" in html


def test_a_flagged_offer_is_never_the_digests_cheapest(db_path: Path, tmp_path: Path) -> None:
    """The recorded RunPod price list: its MI300X Community $0.50 says communityCloud: false."""
    import json

    from priceadvisor.collect.adapters.runpod import parse_gpu_prices
    from priceadvisor.resources import recordings_dir
    from tests.conftest import ingest_quotes

    dashboard_data.build(db_path)
    document = json.loads((recordings_dir() / "runpod" / "gputypes.json").read_text())
    ingest_quotes(db_path, "runpod", parse_gpu_prices(document, "u"))
    config = tmp_path / "c.toml"
    config.write_text('[digest]\ngpus = ["MI300X-192GB"]\n')
    digest = build(db_path, load_settings(config, db=db_path))
    [mi300x] = [r for r in digest.gpu_prices if r["gpu_model"] == "MI300X-192GB"]
    assert (mi300x["now_price"], mi300x["region"]) == (2.39, "secure")
    assert not [r for r in digest.new_offers if r["cheapest"] == 0.5]
