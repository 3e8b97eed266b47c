"""The layout-drift guard: a much smaller snapshot than the last good run closes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import respx

from priceadvisor.collect.fetch import run_cycle
from priceadvisor.config import Settings, load_settings
from priceadvisor.manifest import manifest
from priceadvisor.records import FetchResult, IngestSummary, RawQuote, RunStatus, utcnow
from priceadvisor.service.stores import configured_store
from priceadvisor.store import connections
from priceadvisor.store.drift import drift_reason
from priceadvisor.store.ingest import ingest
from priceadvisor.store.runs import start_run
from tests.conftest import azure_pages, ingest_quotes, query
from tests.conftest import serve_azure as serve


def quotes(count: int, price: float = 2.0) -> list[RawQuote]:
    return [
        RawQuote(f"region-{n}", "Standard_NC24ads_A100_v4", "on_demand", price)
        for n in range(count)
    ]


def open_offers(db: Path) -> int:
    [(count,)] = query(db, "SELECT count(*) FROM offers WHERE provider = 'azure'")
    return int(count)


def test_a_snapshot_under_half_the_last_good_run_closes_nothing(db_path: Path) -> None:
    ingest_quotes(db_path, "azure", quotes(10))
    shrunk = ingest_quotes(db_path, "azure", quotes(4, price=2.5))
    assert shrunk.status is RunStatus.PARTIAL and shrunk.offers_closed == 0
    assert "only 4 offers against 10" in (shrunk.error or "")
    assert shrunk.offers_changed == 4  # what was seen is still updated
    assert open_offers(db_path) == 10
    [(status, error)] = query(
        db_path, "SELECT status, error FROM fetch_runs ORDER BY run_id DESC LIMIT 1"
    )
    assert (status, error) == ("partial", shrunk.error)


def test_a_drifted_run_records_no_complete_scope(db_path: Path) -> None:
    ingest_quotes(db_path, "azure", quotes(10))
    with connections.writer(db_path) as con:
        run_id = start_run(con, "azure")
        result = FetchResult(
            "azure", RunStatus.OK, quotes(2), frozenset({"region-0"}), finished_at=utcnow()
        )
        summary = ingest(con, run_id, result, manifest("azure"))
    assert summary.status is RunStatus.PARTIAL and summary.offers_closed == 0
    assert query(
        db_path, "SELECT complete_scopes FROM core.fetch_runs WHERE run_id = ?", [run_id]
    ) == [(None,)]


def test_the_baseline_stays_the_last_ok_run_so_drift_cannot_creep_in(db_path: Path) -> None:
    ingest_quotes(db_path, "azure", quotes(10))
    assert ingest_quotes(db_path, "azure", quotes(4)).status is RunStatus.PARTIAL
    again = ingest_quotes(db_path, "azure", quotes(4))
    assert again.status is RunStatus.PARTIAL and again.offers_closed == 0
    assert open_offers(db_path) == 10


def test_a_moderate_shrink_is_an_ordinary_ok_run(db_path: Path) -> None:
    ingest_quotes(db_path, "azure", quotes(10))
    fewer = ingest_quotes(db_path, "azure", quotes(5))
    assert fewer.status is RunStatus.OK and fewer.offers_closed == 5


def test_threshold_is_configurable_and_zero_turns_it_off(db_path: Path) -> None:
    ingest_quotes(db_path, "azure", quotes(10))
    with connections.writer(db_path) as con:
        assert drift_reason(con, "azure", 2, 0.0) is None
        assert drift_reason(con, "azure", 8, 0.9) is not None
        assert drift_reason(con, "azure", 9, 0.9) is None
        assert drift_reason(con, "lambda", 1, 0.5) is None  # no earlier good run


def test_fetch_cycle_applies_the_configured_share(db_path: Path) -> None:
    def cycle(settings: Settings, pages: list[Any]) -> IngestSummary:
        with respx.mock:
            serve(pages)
            [summary] = run_cycle(
                settings, configured_store(settings), ["azure"], False, lambda *_: None
            )
        return summary

    pages = azure_pages()
    first_page_only = [{**pages[0], "NextPageLink": None}]
    guarded = load_settings(db=db_path)
    assert cycle(guarded, pages).status is RunStatus.OK
    before = open_offers(db_path)
    shrunk = cycle(guarded, first_page_only)
    assert shrunk.status is RunStatus.PARTIAL and shrunk.offers_closed == 0
    assert open_offers(db_path) == before
    off = load_settings(db=db_path, providers={"azure": {"min_offer_share": 0}})
    accepted = cycle(off, first_page_only)
    assert accepted.status is RunStatus.OK and accepted.offers_closed > 0
