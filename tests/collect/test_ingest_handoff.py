"""The fetch path hands each result's quotes to the store (store.ingest.stage_quotes) instead of
holding them through the ingest and the session's checkpoint."""

from __future__ import annotations

import datetime as dt
import threading
from pathlib import Path

from priceadvisor.collect.fetch import ingest_results
from priceadvisor.config import load_settings
from priceadvisor.records import FetchResult, RawQuote, RunStatus
from priceadvisor.store import connections
from priceadvisor.store.handle import Store
from priceadvisor.store.runs import start_run
from tests.conftest import query

T0 = dt.datetime(2026, 11, 20, 12, 0)


def test_a_merged_result_no_longer_holds_its_quotes(db_path: Path) -> None:
    quotes = [
        RawQuote(region, f"Standard_NC{i}as_T4_v3", "on_demand", 0.5 + i, gpu_name_raw="T4")
        for region in ("eastus", "westus")
        for i in range(1, 6)
    ]
    with connections.writer(db_path) as con:
        run_id = start_run(con, "azure")
    result = FetchResult("azure", RunStatus.OK, quotes, finished_at=T0)
    [summary] = ingest_results(
        load_settings(db=db_path), Store(db_path), [run_id], [result], threading.Event()
    )
    assert summary.status is RunStatus.OK and summary.offers_new == 10
    assert query(db_path, "SELECT count(*) FROM core.current_offers") == [(10,)]
    assert result.quotes == []  # handed over: nothing of the fetch path keeps them alive
