"""What `history` (and the Python API's history()) lists: every interval of every offer, each
row carrying the offer's whole key, flagged intervals included and marked."""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path
from typing import Any

from priceadvisor.collect.adapters.runpod import parse_gpu_prices
from priceadvisor.manifest import manifest
from priceadvisor.records import FetchResult, RawQuote, RunStatus
from priceadvisor.store import connections, reads
from priceadvisor.store.ingest import ingest
from priceadvisor.store.runs import start_run
from tests.store.test_guard import URL, ingest_as, runpod_list

H100 = "NVIDIA H100 80GB HBM3"


def history_rows(db: Path, flt: reads.OfferFilter, **where: str) -> list[dict[str, Any]]:
    with connections.reader(db) as con:
        table = reads.history(con, flt, where.get("region"), where.get("instance_type"), 100)
    return [dict(zip(table.columns, row, strict=True)) for row in table.rows]


def test_a_flagged_interval_stays_in_the_history_marked(tmp_path: Path) -> None:
    """A one-fetch price jump is flagged (price_jump); the log keeps it, and so does `history`:
    leaving it out would show a gap where the price was 0.99."""
    db = tmp_path / "a.duckdb"
    for document in (runpod_list(), runpod_list(**{H100: {"securePrice": 0.99}}), runpod_list()):
        ingest_as(db, "runpod", parse_gpu_prices(document, URL))
    flt = reads.OfferFilter(providers=["runpod"], pricing="on_demand", include_derived=True)
    rows = history_rows(db, flt, region="secure", instance_type=H100)
    assert [(r["price_gpu_hour_usd"], r["flag"]) for r in rows] == [
        (3.29, None),
        (0.99, "price_jump"),
        (3.29, None),
    ]


def _quote(zone: str, pricing: str, price: float, term: int | None = None) -> RawQuote:
    return RawQuote(
        region="eastus",
        zone=zone,
        instance_type="Standard_NC24ads_A100_v4",
        pricing=pricing,
        price=price,
        gpu_name_raw="A100 80GB PCIe",
        gpu_count=1.0,
        term_months=term,
    )


def _fetched(db: Path, quotes: list[RawQuote], day: int) -> None:
    with connections.writer(db) as con:
        run_id = start_run(con, "azure")
        done = dt.datetime(2026, 11, day)
        ingest(
            con,
            run_id,
            FetchResult("azure", RunStatus.OK, quotes, finished_at=done),
            manifest("azure"),
        )


def test_zones_and_terms_of_one_instance_are_told_apart(tmp_path: Path) -> None:
    """Two zones of one instance and two commitment terms are four offers: each row names its
    zone and term, and each offer's intervals come together, newest first."""
    db = tmp_path / "a.duckdb"
    first = [_quote("1", "on_demand", 3.6), _quote("2", "on_demand", 3.7)]
    first += [_quote("", "reserved", 2.0, 12), _quote("", "reserved", 1.5, 36)]
    second = [_quote("1", "on_demand", 3.5), _quote("2", "on_demand", 3.8)]
    second += [_quote("", "reserved", 1.9, 12), _quote("", "reserved", 1.4, 36)]
    _fetched(db, first, 20)
    _fetched(db, second, 21)
    on_demand = reads.OfferFilter(pricing="on_demand", include_derived=True)
    assert [(r["zone"], r["price_hour_usd"]) for r in history_rows(db, on_demand)] == [
        ("1", 3.5),
        ("1", 3.6),
        ("2", 3.8),
        ("2", 3.7),
    ]
    reserved = reads.OfferFilter(pricing="reserved", include_derived=True)
    assert [(r["term_months"], r["price_hour_usd"]) for r in history_rows(db, reserved)] == [
        (12, 1.9),
        (12, 2.0),
        (36, 1.4),
        (36, 1.5),
    ]


def test_flagged_offers_in_two_zones_are_listed_with_their_zone(tmp_path: Path) -> None:
    """`doctor`'s flagged offers: two zones of one instance, both flagged, are told apart."""
    db = tmp_path / "a.duckdb"
    denied = [
        dataclasses.replace(_quote(zone, "on_demand", 3.6), not_offered_reason="sold out")
        for zone in ("1", "2")
    ]
    _fetched(db, denied, 20)
    with connections.reader(db) as con:
        table = reads.flagged_offers(con)
    rows = [dict(zip(table.columns, row, strict=True)) for row in table.rows]
    assert [(r["zone"], r["term_months"], r["flag"]) for r in rows] == [
        ("1", None, "not_offered"),
        ("2", None, "not_offered"),
    ]
