"""Commitment prices (pricing `reserved`) in the history: the term is part of an offer's key,
a commitment needs a term and nothing else may carry one, and the payment split follows the
snapshot like any other attribute."""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path
from typing import Any

from priceadvisor.manifest import manifest
from priceadvisor.records import FetchResult, Pricing, RawQuote, RunStatus
from priceadvisor.store import connections
from priceadvisor.store.ingest import ingest
from priceadvisor.store.runs import start_run
from tests.conftest import query

T0 = dt.datetime(2026, 11, 1, 12, 0)
ON_DEMAND = RawQuote(
    region="eastus",
    instance_type="Standard_NC24ads_A100_v4",
    pricing=Pricing.ON_DEMAND,
    price=3.673,
    gpu_name_raw="A100 80GB",
    gpu_count=1.0,
)
ONE_YEAR = dataclasses.replace(
    ON_DEMAND, pricing=Pricing.RESERVED, price=2.5, term_months=12, upfront=21900.0
)
THREE_YEARS = dataclasses.replace(ONE_YEAR, price=1.6, term_months=36, upfront=None)


def run(db: Path, hour: int, quotes: list[RawQuote]) -> Any:
    with connections.writer(db) as con:
        run_id = start_run(con, "azure")
        result = FetchResult(
            "azure", RunStatus.OK, quotes, finished_at=T0 + dt.timedelta(hours=hour)
        )
        return ingest(con, run_id, result, manifest("azure"))


def test_two_terms_of_one_instance_are_two_offers(db_path: Path) -> None:
    summary = run(db_path, 0, [ON_DEMAND, ONE_YEAR, THREE_YEARS])
    assert (summary.offers_new, summary.offers_duplicate, summary.offers_rejected) == (3, 0, 0)
    assert query(
        db_path, "SELECT pricing, term_months, price_hour_usd, upfront_usd FROM offers ORDER BY 2"
    ) == [
        ("reserved", 12, 2.5, 21900.0),
        ("reserved", 36, 1.6, None),
        ("on_demand", None, 3.673, None),
    ]


def test_a_term_price_change_closes_only_that_term(db_path: Path) -> None:
    run(db_path, 0, [ON_DEMAND, ONE_YEAR, THREE_YEARS])
    summary = run(db_path, 1, [ON_DEMAND, ONE_YEAR, dataclasses.replace(THREE_YEARS, price=1.5)])
    assert (summary.offers_changed, summary.offers_new, summary.offers_closed) == (1, 0, 0)
    assert query(
        db_path,
        "SELECT term_months, price_hour_usd FROM price_history WHERE valid_to IS NOT NULL",
    ) == [(36, 1.6)]


def test_a_term_that_vanishes_is_closed(db_path: Path) -> None:
    run(db_path, 0, [ON_DEMAND, ONE_YEAR, THREE_YEARS])
    summary = run(db_path, 1, [ON_DEMAND, ONE_YEAR])
    assert summary.offers_closed == 1
    assert query(db_path, "SELECT term_months FROM offers WHERE pricing = 'reserved'") == [(12,)]


def test_a_commitment_without_a_term_and_a_term_without_a_commitment_are_rejected(
    db_path: Path,
) -> None:
    no_term = dataclasses.replace(ONE_YEAR, term_months=None)
    stray_term = dataclasses.replace(ON_DEMAND, instance_type="other", term_months=12)
    summary = run(db_path, 0, [ON_DEMAND, no_term, stray_term])
    assert summary.offers_rejected == 2
    assert query(db_path, "SELECT reason FROM core.rejected_quotes ORDER BY 1") == [
        ("commitment without a term",),
        ("term on a price that is no commitment",),
    ]


def test_the_upfront_payment_updates_the_open_interval_in_place(db_path: Path) -> None:
    run(db_path, 0, [ONE_YEAR])
    summary = run(db_path, 1, [dataclasses.replace(ONE_YEAR, upfront=20000.0)])
    assert (summary.offers_changed, summary.offers_new) == (0, 0)
    assert query(db_path, "SELECT upfront_usd FROM offers") == [(20000.0,)]


def test_a_per_gpu_monthly_payment_is_stored_for_the_node(db_path: Path) -> None:
    per_gpu = dataclasses.replace(
        ONE_YEAR, price_basis="gpu", gpu_count=8.0, price=2.0, upfront=None, monthly=1460.0
    )
    run(db_path, 0, [per_gpu])
    assert query(db_path, "SELECT price_hour_usd, monthly_usd FROM offers") == [(16.0, 11680.0)]


def test_a_cheaper_commitment_is_never_the_cheapest_on_demand_price(db_path: Path) -> None:
    """The 1-year price (2.50) is below on-demand (3.673): only asked-for reads list it."""
    from priceadvisor.store import dashboard_reads, reads

    run(db_path, 0, [ON_DEMAND, ONE_YEAR, THREE_YEARS])
    with connections.reader(db_path) as con:
        listed = reads.prices(con, reads.OfferFilter(), "gpu-hour", None)
        asked = reads.prices(con, reads.OfferFilter(pricing="reserved"), "gpu-hour", None)
        cheapest = dashboard_reads.cheapest_per_model(con, dashboard_reads.OfferQuery())
        history = dashboard_reads.gpu_daily_cheapest(con, "A100-PCIE-80GB", days=3650)
        gpu_page = dashboard_reads.gpu_offers(con, "A100-PCIE-80GB")
    pricing = listed.columns.index("pricing")
    assert [row[pricing] for row in listed.rows] == ["on_demand"]
    assert sorted(row[asked.columns.index("term_months")] for row in asked.rows) == [12, 36]
    assert [row[cheapest.columns.index("price_gpu_hour_usd")] for row in cheapest.rows] == [3.673]
    assert {row[history.columns.index("pricing")] for row in history.rows} == {"on_demand"}
    assert {row[gpu_page.columns.index("pricing")] for row in gpu_page.rows} == {"on_demand"}
