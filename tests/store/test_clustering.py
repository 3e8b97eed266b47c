"""core.current_offers is stored in GPU-model order, and that order never changes an answer:
ingests insert in it, the ingest session rewrites the table in it once appended rows call for
it, and prices read the same from clustered and shuffled storage."""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
import json
import random
import shutil
import threading
from pathlib import Path
from typing import Any

import duckdb
import pytest

from priceadvisor.collect.fetch import ingest_results
from priceadvisor.config import load_settings
from priceadvisor.manifest import manifest
from priceadvisor.records import FetchResult, RawQuote, RunStatus
from priceadvisor.store import clustering, connections, lake, reads, transactions
from priceadvisor.store.handle import Store
from priceadvisor.store.ingest import ingest
from priceadvisor.store.runs import start_run
from tests.conftest import query

T0 = dt.datetime(2026, 11, 20, 12, 0)
GPUS = ["H100 SXM 80GB", "H100 NVL", "A100 80GB PCIe", "L4", "T4", "B200", "Mystery X"]
REGIONS = ["eastus", "westeurope", "japaneast", "brazilsouth"]
STORED = "SELECT gpu_model, pricing, provider, region FROM core.current_offers ORDER BY rowid"


def snapshot(seed: int = 1) -> list[RawQuote]:
    """Every GPU (one unmapped) in every region, on demand and spot, in a shuffled order."""
    rng = random.Random(seed)
    quotes = []
    for gpu, region, count, flavour in itertools.product(GPUS, REGIONS, (1, 8), range(3)):
        price = rng.uniform(1.0, 9.0)
        for pricing, factor in (("on_demand", 1.0), ("spot", 0.4)):
            quotes.append(
                RawQuote(
                    region=region,
                    instance_type=f"{gpu.replace(' ', '-')}.{count}x.{flavour}",
                    pricing=pricing,
                    price=round(price * factor, 4),
                    price_basis="gpu",
                    gpu_name_raw=gpu,
                    gpu_count=float(count),
                )
            )
    rng.shuffle(quotes)
    return quotes


def changed(quotes: list[RawQuote], share: float, seed: int) -> list[RawQuote]:
    rng = random.Random(seed)
    return [
        dataclasses.replace(q, price=round((q.price or 1) * 0.9, 4)) if rng.random() < share else q
        for q in quotes
    ]


def merge(con: duckdb.DuckDBPyConnection, quotes: list[RawQuote], hours: int) -> None:
    run_id = start_run(con, "azure")
    result = FetchResult("azure", RunStatus.OK, quotes, finished_at=T0 + dt.timedelta(hours=hours))
    ingest(con, run_id, result, manifest("azure"))


def in_order(rows: list[tuple[Any, ...]]) -> bool:
    """Rows in CLUSTER_ORDER (NULL GPU models last, as DuckDB sorts them)."""
    keys = [(row[0] is None, row[0] or "", *row[1:]) for row in rows]
    return keys == sorted(keys)


@pytest.fixture
def small_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rewrite tables of any size (the threshold spares real ones below two row groups)."""
    monkeypatch.setattr(clustering, "MIN_ROWS", 0)


def test_a_first_load_is_stored_in_gpu_model_order(db_path: Path) -> None:
    with connections.writer(db_path) as con:
        merge(con, snapshot(), 0)
        rows = con.execute(STORED).fetchall()
    assert len(rows) == len(snapshot())
    assert in_order(rows)
    assert rows[-1][0] is None  # the unmapped GPU last


def test_a_first_load_larger_than_a_row_group_is_sorted_by_the_fetch_session(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch of a row group or more is inserted unsorted (sorting ~1M rows inside the ingest
    ran out of the daemon's 128 MB) and counts as appended, so the fetch session that stored it
    rewrites the table in order. Row groups shrunk here so that a small snapshot is "large"."""
    quotes = snapshot()
    monkeypatch.setattr(clustering, "ROW_GROUP_ROWS", len(quotes) // 2)
    monkeypatch.setattr(clustering, "MIN_ROWS", 0)
    with connections.writer(db_path) as con:
        merge(con, quotes, 0)
        assert not in_order(con.execute(STORED).fetchall())  # as the snapshot came
        assert clustering.appended_rows(con)[0] == len(quotes)
    with connections.writer(db_path) as con:
        run_id = start_run(con, "azure")
    result = FetchResult("azure", RunStatus.OK, changed(quotes, 0.6, seed=4), finished_at=T0)
    ingest_results(load_settings(db=db_path), Store(db_path), [run_id], [result], threading.Event())
    assert in_order(query(db_path, STORED))


@pytest.mark.usefixtures("small_tables")
def test_the_ingest_session_restores_the_order_once_enough_rows_were_appended(
    db_path: Path,
) -> None:
    quotes = snapshot()
    with connections.writer(db_path) as con:
        merge(con, quotes, 0)
        assert clustering.keep_clustered(con)  # a batch under a row group counts as appended
        quotes = changed(quotes, 0.1, seed=2)  # ~10 % appended: under CLUSTER_SHARE
        merge(con, quotes, 1)
        assert not clustering.keep_clustered(con)
        assert not in_order(con.execute(STORED).fetchall())  # a sorted batch at the end
        quotes = changed(quotes, 0.15, seed=3)  # ~25 % appended in all
        merge(con, quotes, 2)
        before = query_offers(con)
        assert clustering.keep_clustered(con)
        assert in_order(con.execute(STORED).fetchall())
        assert query_offers(con) == before
        assert not clustering.keep_clustered(con)  # nothing appended since
        assert clustering.appended_rows(con)[0] == 0


def query_offers(con: duckdb.DuckDBPyConnection) -> list[tuple[Any, ...]]:
    return con.execute("SELECT * FROM core.current_intervals ORDER BY ALL").fetchall()


@pytest.mark.usefixtures("small_tables")
def test_a_fetch_cycle_keeps_the_table_clustered(db_path: Path) -> None:
    """Through the fetch path (collect.fetch.ingest_results), over hours of changes."""
    settings = load_settings(db=db_path)
    quotes = snapshot()
    for hour in range(6):
        with connections.writer(db_path) as con:
            run_id = start_run(con, "azure")
        result = FetchResult(
            "azure", RunStatus.OK, quotes, finished_at=T0 + dt.timedelta(hours=hour)
        )
        ingest_results(settings, Store(db_path), [run_id], [result], threading.Event())
        quotes = changed(quotes, 0.3, seed=hour)
        assert in_order(query(db_path, STORED))


def test_a_database_from_before_the_layout_is_rewritten_at_its_next_ingest(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with connections.writer(db_path) as con:
        merge(con, snapshot(), 0)
        shuffle(con)  # as an older version stored it
        con.execute("UPDATE core.table_layout SET clustered_run = NULL")  # as 0100 leaves it
        assert clustering.appended_rows(con)[0] == len(snapshot())
        assert not clustering.keep_clustered(con)  # a small table is left as it is
        monkeypatch.setattr(clustering, "MIN_ROWS", 0)
        assert clustering.keep_clustered(con)
        assert in_order(con.execute(STORED).fetchall())


def shuffle(con: duckdb.DuckDBPyConnection) -> None:
    """Rewrite core.current_offers in a random order (no order at all)."""
    con.execute("SELECT setseed(0.5)")
    con.execute(
        "CREATE TEMP TABLE _shuffled AS SELECT * FROM core.current_offers ORDER BY random()"
    )
    con.execute("DELETE FROM core.current_offers")
    con.execute("INSERT INTO core.current_offers SELECT * FROM _shuffled")
    con.execute("DROP TABLE _shuffled")
    assert not in_order(con.execute(STORED).fetchall())


FILTERS = {
    "H100 family, spot": reads.OfferFilter(
        gpu_models=["H100-NVL-94GB", "H100-SXM-80GB"], pricing="spot"
    ),
    "one model": reads.OfferFilter(gpu_models=["L4-24GB"]),
    "no match": reads.OfferFilter(gpu_models=["GH200-96GB"]),
    "every offer": reads.OfferFilter(mapped_only=False),
    "EU on demand": reads.OfferFilter(eu=True, pricing="on_demand"),
}


@pytest.mark.parametrize("sort", sorted(reads.PRICE_SORTS))
def test_prices_read_the_same_from_clustered_and_shuffled_storage(
    db_path: Path, tmp_path: Path, sort: str
) -> None:
    with connections.writer(db_path) as con:
        merge(con, snapshot(), 0)
        merge(con, changed(snapshot(), 0.3, seed=4), 1)
    shuffled = tmp_path / "shuffled.duckdb"
    shutil.copy(db_path, shuffled)
    with connections.writer(shuffled) as con:
        shuffle(con)
    with connections.writer(db_path) as con:
        clustering.cluster(con, 0)
        assert in_order(con.execute(STORED).fetchall())
    for name, flt in FILTERS.items():
        for limit in (None, 5):
            with connections.reader(db_path) as con:
                clustered = reads.prices(con, flt, sort, limit)
            with connections.reader(shuffled) as con:
                unclustered = reads.prices(con, flt, sort, limit)
            assert clustered == unclustered, name
            assert flt.gpu_models != ["L4-24GB"] or {r[4] for r in clustered.rows} == {"L4-24GB"}


def test_a_gpu_filter_skips_the_row_groups_of_other_models(db_path: Path) -> None:
    """The point of the order: DuckDB's zone maps let `--gpu H100` read only the row groups
    holding H100s (EXPLAIN ANALYZE's rows scanned), here 3 of 4 row groups skipped."""
    rows = 4 * clustering.ROW_GROUP_ROWS
    with connections.writer(db_path) as con:
        merge(con, snapshot(), 0)
        con.execute(  # many more offers, copies of the ingested ones under other keys
            "INSERT INTO core.current_offers SELECT o.* REPLACE (o.instance_type || '.' || i AS "
            f"instance_type) FROM core.current_offers AS o, range({rows // len(snapshot())}) t(i)"
        )
        clustering.cluster(con, 0)
        total = con.execute("SELECT count(*) FROM core.current_offers").fetchone()
    flt = reads.OfferFilter(gpu_models=["H100-NVL-94GB", "H100-SXM-80GB"], pricing="spot")
    with duckdb.connect(str(db_path), read_only=True) as con:  # connections.reader locks profiling
        con.execute("PRAGMA enable_profiling = 'json'")
        con.execute(f"PRAGMA profiling_output = '{db_path.with_suffix('.json')}'")
        found = reads.prices(con, flt, "gpu-hour", 50)
        con.execute("PRAGMA disable_profiling")
    profile = json.loads(db_path.with_suffix(".json").read_text())
    assert found.total is not None and found.total > 0
    assert total is not None
    assert 0 < scanned(profile, "current_offers") <= total[0] // 2


def scanned(node: dict[str, Any], table: str) -> int:
    """Rows the scans of `table` read, over a DuckDB JSON profile."""
    own = 0
    if table in str(node.get("extra_info", {}).get("Table", "")):
        own = int(node.get("operator_rows_scanned", 0))
    return own + sum(scanned(child, table) for child in node.get("children", []))


@pytest.mark.usefixtures("small_tables")
def test_a_lake_is_rewritten_in_order_too(tmp_path: Path) -> None:
    """The same rewrite in one DuckLake transaction: rows in order, the offers unchanged."""
    target = lake.Lake(catalog=str(tmp_path / "catalog.ducklake"), data_path=str(tmp_path / "data"))
    with connections.writer(target) as con:
        merge(con, snapshot(), 0)
        shuffle(con)
        con.execute("UPDATE core.table_layout SET clustered_run = NULL")
        before = query_offers(con)
        assert transactions.retry_conflicts(clustering.keep_clustered)(con)
        assert query_offers(con) == before
    with connections.reader(target) as con:
        assert in_order(con.execute(STORED).fetchall())
        assert query_offers(con) == before


@pytest.mark.usefixtures("small_tables")
def test_a_failed_rewrite_leaves_the_fetch_stored_and_ok(
    db_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def disk_full(con: duckdb.DuckDBPyConnection, latest_run: int) -> None:
        raise duckdb.IOException("could not write file: No space left on device")

    monkeypatch.setattr(clustering, "cluster", disk_full)
    with connections.writer(db_path) as con:
        run_id = start_run(con, "azure")
    result = FetchResult("azure", RunStatus.OK, snapshot(), finished_at=T0)
    settings = load_settings(db=db_path)
    [summary] = ingest_results(settings, Store(db_path), [run_id], [result], threading.Event())
    assert summary.status is RunStatus.OK and summary.offers_new == len(snapshot())
    assert query(db_path, "SELECT count(*) FROM core.current_offers") == [(len(snapshot()),)]
    assert "not rewritten in storage order: could not write file" in caplog.text
