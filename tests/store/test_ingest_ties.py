"""The snapshot's table (_snap) carries no gpu_name_raw or source_url: the duplicates' collapse
reads them again from the duplicates' quotes to break ties. A series of snapshots whose
duplicate keys are decided by those columns (in different batches) stores what the full-width
table did: the same survivors, history, samples and run summaries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from priceadvisor.records import RawQuote
from priceadvisor.store import ingest as ingest_module
from tests.conftest import query
from tests.store import test_ingest_batches as batches
from tests.store.test_ingest_batches import snapshot as varied_snapshot
from tests.store.test_ingest_batches import stored

SKU = "Standard_NC24ads_A100_v4"
URL = "https://prices.test/offer/"

# The full-width behaviour, as the ingest had it: _snap with both columns, the collapse over it.
_FULL_COLLAPSE_SQL = f"""
UPDATE _snap SET reject_reason = '{ingest_module.DUPLICATE_KEY}' WHERE rowid IN (
    SELECT rowid FROM _snap WHERE reject_reason IS NULL
    QUALIFY row_number() OVER (
        PARTITION BY region, zone, instance_type, pricing, term_months
        ORDER BY price_hour_usd, gpu_name_raw, available DESC NULLS LAST, stock, source_url
    ) > 1
)
"""


def _full_width(sql: str) -> str:
    return sql.replace("gpu_model, available,", "gpu_model, gpu_name_raw, source_url, available,")


def tied(step: int) -> list[RawQuote]:
    """The varied snapshot plus duplicate keys at one price, told apart only by the name
    (without one, the instance type stands in), the URL or none, spread over the snapshot."""
    quotes = varied_snapshot(step)
    price = 3.0 + step
    for i, (name, url) in enumerate(
        [("A100 80GB", URL + "z"), ("A100", URL + "y"), (None, URL + "x"), ("A100", URL + "a")]
    ):
        quotes.insert(3 * i, RawQuote("eastus", SKU, "spot", price, gpu_name_raw=name,
                                      source_url=url, zone="c"))  # fmt: skip
        quotes.append(RawQuote("westus", SKU, "spot", price, zone="c", source_url=URL + str(9 - i)))
    quotes.append(RawQuote("japaneast", SKU, "spot", price, zone="c", stock="low"))
    quotes.insert(1, RawQuote("japaneast", SKU, "spot", price, zone="c", stock="high"))
    return quotes


def ingest_series(db: Path, batch: int, monkeypatch: pytest.MonkeyPatch, staged: bool) -> list[Any]:
    return batches.ingest_series(db, batch, monkeypatch, staged, snapshots=tied)


@pytest.mark.parametrize(("batch", "staged"), [(1, False), (5, True), (10_000, False)])
def test_ties_read_again_store_what_the_full_width_snapshot_did(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch: int, staged: bool
) -> None:
    narrow = ingest_series(tmp_path / "narrow.duckdb", batch, monkeypatch, staged)
    for name in ("_NORMALISE_FIRST_SQL", "_NORMALISE_MORE_SQL"):
        monkeypatch.setattr(ingest_module, name, _full_width(getattr(ingest_module, name)))
    monkeypatch.setattr(
        ingest_module, "_collapse", lambda con, _staged: con.execute(_FULL_COLLAPSE_SQL)
    )
    full = ingest_series(tmp_path / "full.duckdb", batch, monkeypatch, staged)
    assert narrow == full
    assert all(s.offers_duplicate == 8 for s in narrow)  # tied: 3 + 3 + 1; 1 of the varied
    assert stored(tmp_path / "narrow.duckdb") == stored(tmp_path / "full.duckdb")
    survivors = query(
        tmp_path / "narrow.duckdb",
        "SELECT region, gpu_name_raw, source_url, stock FROM core.current_offers"
        " WHERE zone = 'c' ORDER BY region",
    )
    assert survivors == [
        ("eastus", "A100", URL + "a", None),
        ("japaneast", SKU, None, "high"),
        ("westus", SKU, URL + "6", None),
    ]


def without_duplicates(step: int) -> list[RawQuote]:
    unique: dict[tuple[Any, ...], RawQuote] = {}
    for q in varied_snapshot(step):
        unique.setdefault((q.region, q.zone, q.instance_type, q.pricing, q.term_months), q)
    return list(unique.values())


@pytest.mark.parametrize(("snapshots", "duplicates"), [(tied, 8), (without_duplicates, 0)])
def test_keys_whose_hashes_collide_are_counted_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, snapshots: Any, duplicates: int
) -> None:
    """The counts take the number of distinct key hashes, and count the keys themselves only
    when that finds duplicates: with every key's hash colliding, a series stores and counts
    what it does with real hashes."""
    hashed = batches.ingest_series(tmp_path / "hashed.duckdb", 7, monkeypatch, False, snapshots)
    key_hash = f"hash({ingest_module._KEYS})"
    assert key_hash in ingest_module._COUNTS_SQL
    colliding = ingest_module._COUNTS_SQL.replace(key_hash, "0")
    monkeypatch.setattr(ingest_module, "_COUNTS_SQL", colliding)
    collided = batches.ingest_series(tmp_path / "collided.duckdb", 7, monkeypatch, False, snapshots)
    assert collided == hashed
    assert all(s.offers_duplicate == duplicates for s in hashed)
    assert stored(tmp_path / "hashed.duckdb") == stored(tmp_path / "collided.duckdb")
