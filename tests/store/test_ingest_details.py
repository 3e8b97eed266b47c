"""The offers an ingest writes take every column from their own quote: the snapshot kept for
the checks and the classification carries only some columns, and the offers to write are
normalised again from their quotes by position (store.ingest._CHANGES_SELECT)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from priceadvisor.manifest import manifest
from priceadvisor.records import FetchResult, RawQuote, RunStatus
from priceadvisor.store import connections
from priceadvisor.store import ingest as ingest_module
from priceadvisor.store.runs import start_run
from tests.conftest import query

START = dt.datetime(2026, 11, 1)


def quote(i: int, price: float) -> RawQuote:
    """A quote whose every written column says which quote it is."""
    return RawQuote(
        f"region-{i % 3}",
        f"type-{i}",
        "on_demand",
        price,
        gpu_name_raw="H100",
        gpu_count=float(1 + i % 4),
        vcpus=float(10 + i),
        ram_gb=float(100 + i),
        interruption_rate=i / 100,
        source_url=f"https://example.test/{i}",
        offer_count=i,
        price_median=price + 0.5,
        price_rule=f"rule {i}" if i % 2 else None,
        available=i % 3 != 0,
        stock=f"{i}",
    )


def snapshot(hour: int) -> list[RawQuote]:
    """Rejected quotes and a duplicate between the valid ones, so a quote's position in the
    snapshot is not its row in the snapshot's valid offers; prices move at the second hour."""
    quotes = []
    for i in range(12):
        quotes.append(quote(i, 1.0 + i + (0.25 if hour and i % 4 == 1 else 0.0)))
        if i % 5 == 0:
            quotes.append(RawQuote("region-0", f"bad-{i}", "on_demand", -1.0))
    quotes.insert(6, quote(2, 50.0))  # a dearer duplicate of quote 2: collapsed
    return quotes


def expected(quotes: list[RawQuote]) -> set[tuple[object, ...]]:
    return {
        (
            q.instance_type,
            q.vcpus,
            q.ram_gb,
            q.interruption_rate,
            q.source_url,
            q.offer_count,
            q.price_rule,
            q.available,
            q.stock,
            q.price,
        )
        for q in quotes
        if q.price is not None and 0 < q.price < 50
    }


@pytest.mark.parametrize("batch", [2, 5, 1000])
def test_written_offers_carry_their_own_quotes_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch: int
) -> None:
    monkeypatch.setattr(ingest_module, "HANDOFF_BATCH", batch)
    db = tmp_path / "details.duckdb"
    for hour in range(2):
        with connections.writer(db) as con:
            run_id = start_run(con, "azure")
            result = FetchResult(
                "azure", RunStatus.OK, snapshot(hour), finished_at=START + dt.timedelta(hours=hour)
            )
            summary = ingest_module.ingest(con, run_id, result, manifest("azure"))
        assert summary.offers_duplicate == 1 and summary.offers_rejected == 3
    stored = query(
        db,
        "SELECT instance_type, vcpus, ram_gb, interruption_rate, source_url, offer_count,"
        " price_rule, available, stock, price_hour_original FROM core.current_offers",
    )
    assert set(stored) == expected(snapshot(1))
    assert summary.offers_changed == 3  # quotes 1, 5 and 9 moved: their new intervals opened
