"""Every ordered listing is a total order: offers with equal prices come back in the same order
whatever order they were stored in (the CLI's reads and the dashboard's queries alike)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest

from priceadvisor.manifest import manifest
from priceadvisor.records import FetchResult, RawQuote, RunStatus
from priceadvisor.store import connections, reads
from priceadvisor.store import dashboard_reads as dashboard
from priceadvisor.store.ingest import ingest
from priceadvisor.store.runs import start_run

# Six offers at one price per GPU-hour: only their keys tell them apart.
KEYS = [
    (region, zone, instance_type, pricing)
    for region, zone in (("eastus", "1"), ("eastus", "2"), ("westeurope", ""))
    for instance_type, pricing in (("Standard_ND_H100_v5", "spot"), ("Standard_NC_H100", "spot"))
]


def equal_priced(keys: list[tuple[str, str, str, str]]) -> list[RawQuote]:
    return [
        RawQuote(
            region=region,
            zone=zone,
            instance_type=instance_type,
            pricing=pricing,
            price=2.5,
            price_basis="gpu",
            gpu_name_raw="H100 SXM 80GB",
            gpu_count=1.0,
        )
        for region, zone, instance_type, pricing in keys
    ]


def stored(path: Path, keys: list[tuple[str, str, str, str]]) -> Path:
    with connections.writer(path) as con:
        run_id = start_run(con, "azure")
        result = FetchResult(
            "azure", RunStatus.OK, equal_priced(keys), finished_at=dt.datetime(2026, 11, 20)
        )
        ingest(con, run_id, result, manifest("azure"))
    return path


LISTINGS: dict[str, Callable[[duckdb.DuckDBPyConnection], list[tuple[Any, ...]]]] = {
    "prices": lambda con: reads.prices(con, reads.OfferFilter(), "gpu-hour", None).rows,
    "prices by provider": lambda con: reads.prices(con, reads.OfferFilter(), "provider", 3).rows,
    "history": lambda con: reads.history(con, reads.OfferFilter(), None, None, 100).rows,
    "dashboard offers": lambda con: dashboard.offers_page(con, dashboard.OfferQuery())[0].rows,
    "dashboard GPU offers": lambda con: dashboard.gpu_offers(con, "H100-SXM-80GB").rows,
    "dashboard cheapest": lambda con: (
        dashboard.cheapest_per_model(con, dashboard.OfferQuery()).rows
    ),
}


@pytest.mark.parametrize("listing", list(LISTINGS))
def test_equal_prices_come_back_in_one_order_whatever_the_insertion_order(
    tmp_path: Path, listing: str
) -> None:
    forward = stored(tmp_path / "forward.duckdb", KEYS)
    backward = stored(tmp_path / "backward.duckdb", KEYS[::-1])
    with connections.reader(forward) as con:
        rows_forward = LISTINGS[listing](con)
    with connections.reader(backward) as con:
        rows_backward = LISTINGS[listing](con)
    assert rows_forward, "the listing must have offers to order"
    assert rows_forward == rows_backward
