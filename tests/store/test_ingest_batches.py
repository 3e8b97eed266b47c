"""A snapshot handed to DuckDB in batches (store.ingest.HANDOFF_BATCH) merges exactly as in one
go: same history, same rejections and duplicates, same run summaries; and so does one whose
quotes were staged up front (store.ingest.stage_quotes, the fetch path's way)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest

from priceadvisor.manifest import manifest
from priceadvisor.records import FetchResult, RawQuote, RunStatus
from priceadvisor.store import columns, connections
from priceadvisor.store import ingest as ingest_module
from priceadvisor.store.runs import start_run
from tests.conftest import query

START = dt.datetime(2026, 11, 1)
SKUS = ("Standard_NC24ads_A100_v4", "Standard_ND96isr_H100_v5", "Standard_NC4as_T4_v3")
# Every table an ingest writes, in a fixed order (fetch_runs without its wall-clock columns).
TABLES = {
    "core.current_offers": "SELECT * FROM core.current_offers",
    "core.price_closed": "SELECT * FROM core.price_closed",
    "core.provider_coverage": "SELECT * FROM core.provider_coverage",
    "core.rejected_quotes": "SELECT * FROM core.rejected_quotes",
    "core.fetch_runs": "SELECT * EXCLUDE (started_at, finished_at, pid) FROM core.fetch_runs",
}


def snapshot(step: int) -> list[RawQuote]:
    """Quotes whose duplicates, rejections and unmapped names fall in different batches."""
    quotes = []
    for i, (region, sku) in enumerate(
        (r, s) for r in ("eastus", "westus", "japaneast") for s in SKUS
    ):
        price = 2.0 + i + (0.5 if (i + step) % 4 == 0 else 0.0)
        quotes.append(RawQuote(region, sku, "on_demand", price, available=i % 2 == 0))
        quotes.append(RawQuote(region, sku, "spot", price * (0.4 if i % 3 else 1.2)))
    quotes.append(dataclasses.replace(quotes[0], price=quotes[0].price + 1))  # a duplicate key
    quotes.append(RawQuote("eastus", "Unknown_GPU_v1", "on_demand", 5.0, gpu_name_raw="Z9"))
    quotes.append(RawQuote("westus", SKUS[0], "on_demand", -1.0, zone="b"))  # rejected
    quotes.append(RawQuote("westus", SKUS[1], "on_demand", 9.0, currency="XYZ"))  # no rate
    quotes.append(RawQuote("japaneast", "x", "spot", 1.0, gpu_memory_gb=math.nan))
    if step == 1:
        del quotes[4:6]  # a vanished key
    return quotes


def ingest_series(
    db: Path,
    batch: int,
    monkeypatch: pytest.MonkeyPatch,
    staged: bool = False,
    snapshots: Callable[[int], list[RawQuote]] = snapshot,
) -> list[Any]:
    monkeypatch.setattr(ingest_module, "HANDOFF_BATCH", batch)
    summaries = []
    for step in range(3):
        with connections.writer(db) as con:
            run_id = start_run(con, "azure")
            result = FetchResult(
                "azure", RunStatus.OK, snapshots(step), finished_at=START + dt.timedelta(hours=step)
            )
            staging = ingest_module.stage_quotes(result.quotes) if staged else None
            summary = ingest_module.ingest(con, run_id, result, manifest("azure"), staged=staging)
        summaries.append(dataclasses.replace(summary, duration_s=0.0))
    return summaries


def stored(db: Path) -> dict[str, list[str]]:
    """Each table's rows as text, sorted: a NaN compares equal to itself only that way."""
    return {name: sorted(map(repr, query(db, sql))) for name, sql in TABLES.items()}


@pytest.mark.parametrize("batch", [1, 4, 7])
def test_batched_hand_off_stores_the_same_history_as_one_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch: int
) -> None:
    whole = ingest_series(tmp_path / "whole.duckdb", 10_000, monkeypatch)
    batched = ingest_series(tmp_path / "batched.duckdb", batch, monkeypatch)
    assert batched == whole
    assert whole[0].offers_duplicate == 1 and whole[0].offers_rejected >= 3
    assert whole[1].offers_closed == 2  # the vanished key was closed
    assert stored(tmp_path / "batched.duckdb") == stored(tmp_path / "whole.duckdb")


@pytest.mark.parametrize("batch", [1, 4, 10_000])
def test_staged_quotes_store_the_same_history_as_quotes_read_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch: int
) -> None:
    in_place = ingest_series(tmp_path / "in_place.duckdb", batch, monkeypatch)
    staged = ingest_series(tmp_path / "staged.duckdb", batch, monkeypatch, staged=True)
    assert staged == in_place
    assert stored(tmp_path / "staged.duckdb") == stored(tmp_path / "in_place.duckdb")


def test_staging_takes_the_quotes_out_of_their_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ingest_module, "HANDOFF_BATCH", 4)
    quotes = snapshot(0)
    count = len(quotes)
    staged = ingest_module.stage_quotes(quotes)
    assert quotes == []  # the caller's list no longer keeps a quote alive
    assert staged.count == count and len(staged.tables) == -(-count // 4)


def test_dictionary_encoded_quotes_store_the_same_history_as_plain_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    encoded = ingest_series(tmp_path / "encoded.duckdb", 4, monkeypatch, staged=True)
    monkeypatch.setattr(columns, "_ENCODED", frozenset())  # every column a plain array
    plain = ingest_series(tmp_path / "plain.duckdb", 4, monkeypatch, staged=True)
    assert encoded == plain
    assert stored(tmp_path / "encoded.duckdb") == stored(tmp_path / "plain.duckdb")


def _same(read: object, given: object) -> bool:
    return read == given or (read != read and given != given)  # NaN is NaN


def test_a_staged_table_reads_back_every_field_of_every_quote() -> None:
    quotes = snapshot(0)
    quotes.append(
        RawQuote(
            "eu-north",
            "gpu-8x",
            "reserved",
            9.5,
            "gpu",
            "EUR",
            "b",
            "H100",
            8.0,
            80.0,
            96.0,
            1024.0,
            True,
            "high",
            0.05,
            "https://x.test/o/1",
            3,
            9.0,
            "2026-11-01",
            12,
            100.0,
            8.0,
            0.1,
            0.02,
            "50 % of on-demand",
            "not in stock",
        )
    )
    given = [[getattr(q, name) for name in ingest_module._QUOTE_SCHEMA] for q in quotes]
    staged = ingest_module.stage_quotes(quotes)
    con = duckdb.connect()
    rows = []
    for start in staged.starts():
        _staged = staged.table(start)  # read by the query below (a replacement scan)
        rows += con.execute("SELECT * EXCLUDE (quote_index) FROM _staged").fetchall()
    assert len(rows) == len(given)
    for read, values in zip(rows, given, strict=True):
        assert all(map(_same, read, values)), (read, values)


def in_currencies(step: int) -> list[RawQuote]:
    """The varied snapshot with quotes in euros and pounds coming only in later batches, and
    one currency no rate is known for."""
    quotes = snapshot(step)
    for i, currency in enumerate(("EUR", "GBP", "XYZ", "EUR")):
        quotes.insert(5 + 3 * i, RawQuote("uksouth", SKUS[i % 3], "on_demand", 2.0 + step + i,
                                          currency=currency, zone=str(i)))  # fmt: skip
    return quotes


@pytest.mark.parametrize("batch", [1, 6])
def test_batches_in_new_currencies_are_converted_at_their_rates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch: int
) -> None:
    """Each batch looks its currencies' rates up again only when one is new to the snapshot
    (store.ingest._Lookups): a currency first met in a later batch is converted as in one go."""
    for name in ("batched", "whole"):
        with connections.writer(tmp_path / f"{name}.duckdb") as con:
            con.executemany(
                "INSERT INTO core.fx_rates VALUES (?, ?, ?, 'test', now())",
                [(START.date(), c, rate) for c, rate in (("USD", 1.1), ("EUR", 1.0), ("GBP", 0.8))],
            )
    batched = ingest_series(tmp_path / "batched.duckdb", batch, monkeypatch, False, in_currencies)
    whole = ingest_series(tmp_path / "whole.duckdb", 10_000, monkeypatch, False, in_currencies)
    assert batched == whole
    assert stored(tmp_path / "batched.duckdb") == stored(tmp_path / "whole.duckdb")
    converted = query(
        tmp_path / "batched.duckdb",
        "SELECT currency, count(*) FROM core.current_offers WHERE region = 'uksouth' GROUP BY 1",
    )
    assert sorted(converted) == [("EUR", 2), ("GBP", 1)]  # XYZ rejected: no rate
