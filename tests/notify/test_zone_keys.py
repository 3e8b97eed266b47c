"""An offer's key includes its zone (TensorDock prices each location of a country apart) and its
commitment term: every reader that looks an offer's history up by key matches on both, so one
offer never borrows another location's or another term's price."""

from __future__ import annotations

from pathlib import Path

from priceadvisor.config import load_settings
from priceadvisor.notify import digest
from priceadvisor.records import RawQuote, utcnow
from priceadvisor.sizing.advisor import store_advice
from priceadvisor.store import connections, dashboard_reads
from tests.conftest import ingest_quotes

CONFIG = """
[[workloads]]
name = "short"
task = "lora"
model = "llama-3.1-8b"
train_tokens = 1e7

[digest]
top = 10
"""
# Two TensorDock locations in one country: the same region, instance type and pricing.
ZONES = ("0b3a6f7e-1c2d-4e5f-8a9b-0c1d2e3f4a5b", "5d6e7f80-9a1b-4c2d-8e3f-4a5b6c7d8e9f")


def h100(zone: str, price: float) -> RawQuote:
    return RawQuote(
        region="US",
        zone=zone,
        instance_type="h100-sxm5-80gb x1",
        pricing="on_demand",
        price=price,
        gpu_name_raw="H100 SXM5 80GB",
        gpu_count=1.0,
        available=True,
    )


def backdate(db: Path, days: int) -> None:
    """Every interval so far starts `days` days ago (the history a week-old digest reads)."""
    with connections.writer(db) as con:
        con.execute(
            "UPDATE core.current_offers SET valid_from = valid_from - to_days(CAST($d AS INTEGER))",
            {"d": days},
        )
        con.execute(
            "UPDATE core.price_closed SET valid_from = valid_from - to_days(CAST($d AS INTEGER)),"
            " valid_to = valid_to - to_days(CAST($d AS INTEGER))",
            {"d": days},
        )


def test_the_digest_and_the_dashboard_read_each_zones_own_history(tmp_path: Path) -> None:
    config, db = tmp_path / "c.toml", tmp_path / "d.duckdb"
    config.write_text(CONFIG)
    settings = load_settings(config)
    ingest_quotes(db, "tensordock", [h100(ZONES[0], 2.00), h100(ZONES[1], 2.50)])
    backdate(db, 10)
    ingest_quotes(db, "tensordock", [h100(ZONES[0], 2.00), h100(ZONES[1], 3.00)])
    with connections.writer(db) as con:
        store_advice(con, settings.workloads)
        built = digest.build(con, settings, utcnow())
        shown = dashboard_reads.workloads(con)
    by_price = {r["price_hour_usd"]: r for r in built.workloads}
    assert len(built.workloads) == 2 and set(by_price) == {2.00, 3.00}
    assert by_price[2.00]["price_week_ago"] == 2.00  # its own zone a week ago, not the other's
    assert by_price[3.00]["price_week_ago"] == 2.50
    price, before = (shown.columns.index(c) for c in ("price_hour_usd", "previous_price_hour_usd"))
    previous = {row[price]: row[before] for row in shown.rows}
    assert previous == {2.00: None, 3.00: 2.50}


def test_an_offer_gone_from_one_location_is_gone_though_another_keeps_it(
    tmp_path: Path,
) -> None:
    config, db = tmp_path / "c.toml", tmp_path / "d.duckdb"
    config.write_text(CONFIG)
    ingest_quotes(db, "tensordock", [h100(ZONES[0], 2.00), h100(ZONES[1], 2.50)])
    backdate(db, 10)
    ingest_quotes(db, "tensordock", [h100(ZONES[0], 2.00)])
    with connections.reader(db) as con:
        built = digest.build(con, load_settings(config), utcnow())
    assert [(r["provider"], r["offers"], r["regions"]) for r in built.vanished] == [
        ("tensordock", 1, ["US"])
    ]
