"""How a snapshot's keys are classified against their open intervals: a quote whose price and
attributes are all unchanged is not rewritten, and a change of any single attribute updates the
open interval in place (the attributes are compared as one hash per row, so every column type
must hash alike in the snapshot and in the table); the spot-below-on-demand check runs after
every other check."""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from priceadvisor.manifest import manifest
from priceadvisor.records import FetchResult, RawQuote, RunStatus
from priceadvisor.store import connections
from priceadvisor.store.ingest import ingest
from priceadvisor.store.runs import start_run
from tests.conftest import query

T0 = dt.datetime(2026, 11, 1, 12, 0)
# Every optional attribute unset: the snapshot hands DuckDB all-null columns (store.columns),
# which must hash like the table's nulls and, once set, like any other value of their type.
BARE = RawQuote(
    region="eastus",
    instance_type="Standard_NC24ads_A100_v4",
    pricing="on_demand",
    price=3.0,
    gpu_name_raw="A100 80GB",
    gpu_count=1.0,
)
# Every attribute of an open interval set, so that each column's type takes part in the hash.
FULL = dataclasses.replace(
    BARE,
    gpu_memory_gb=80.0,
    vcpus=24.0,
    ram_gb=220.0,
    available=True,
    stock="high",
    interruption_rate=0.05,
    source_url="https://example.invalid/a100",
    offer_count=3,
    price_median=3.2,
    price_date="2026-10-31",
    price_rule="on-demand list price",
    disk_usd_gb_month=0.2,
    egress_usd_gb=0.004,
)


def run(db: Path, hour: int, quotes: list[RawQuote]) -> Any:
    with connections.writer(db) as con:
        run_id = start_run(con, "azure")
        result = FetchResult(
            "azure", RunStatus.OK, quotes, finished_at=T0 + dt.timedelta(hours=hour)
        )
        return ingest(con, run_id, result, manifest("azure"))


def test_an_unchanged_quote_with_every_attribute_set_is_not_rewritten(db_path: Path) -> None:
    run(db_path, 0, [FULL])
    summary = run(db_path, 1, [FULL])
    assert (summary.offers_seen, summary.offers_changed, summary.offers_new) == (1, 0, 0)
    # the open row keeps the run that wrote it; the sighting is recorded per region and pricing
    assert query(db_path, "SELECT last_seen FROM core.current_offers") == [(T0,)]
    assert query(db_path, "SELECT last_seen FROM offers") == [(T0 + dt.timedelta(hours=1),)]


@pytest.mark.parametrize(
    ("field", "value", "column", "stored"),
    [
        ("interruption_rate", 0.2, "interruption_rate", 0.2),
        ("source_url", "https://example.invalid/b", "source_url", "https://example.invalid/b"),
        ("offer_count", 4, "offer_count", 4),
        ("price_median", 3.4, "price_hour_median_usd", 3.4),
        ("price_date", "2026-11-01", "price_date", dt.date(2026, 11, 1)),
        ("price_rule", None, "price_origin", "published"),
        ("vcpus", 32.0, "vcpus", 32.0),
        ("disk_usd_gb_month", 0.3, "disk_usd_gb_month", 0.3),
        ("egress_usd_gb", 0.01, "egress_usd_gb", 0.01),
        ("gpu_name_raw", "A100-SXM4-80GB", "gpu_name_raw", "A100-SXM4-80GB"),
    ],
)
def test_one_attribute_change_updates_the_open_interval_in_place(
    db_path: Path, field: str, value: object, column: str, stored: object
) -> None:
    run(db_path, 0, [FULL])
    summary = run(db_path, 1, [dataclasses.replace(FULL, **{field: value})])
    assert (summary.offers_changed, summary.offers_new) == (0, 0)
    assert query(db_path, f"SELECT {column}, first_seen FROM offers") == [(stored, T0)]
    assert query(db_path, "SELECT count(*) FROM price_history") == [(1,)]


@pytest.mark.parametrize(
    ("field", "value"), [("available", False), ("available", None), ("stock", "low")]
)
def test_an_availability_change_opens_a_new_interval(
    db_path: Path, field: str, value: object
) -> None:
    run(db_path, 0, [FULL])
    summary = run(db_path, 1, [dataclasses.replace(FULL, **{field: value})])
    assert (summary.offers_changed, summary.offers_new) == (1, 0)
    history = query(
        db_path, f"SELECT {field}, valid_from, valid_to FROM price_history ORDER BY valid_from"
    )
    later = T0 + dt.timedelta(hours=1)
    assert history == [(getattr(FULL, field), T0, later), (value, later, None)]
    # the offer is the same one: it keeps its first sighting
    assert query(db_path, "SELECT first_seen FROM offers") == [(T0,)]


def test_stock_is_stored_as_the_source_words_it_in_lower_case(db_path: Path) -> None:
    run(db_path, 0, [dataclasses.replace(FULL, stock=" High ")])
    run(db_path, 1, [dataclasses.replace(FULL, stock="HIGH")])
    assert query(db_path, "SELECT stock FROM price_history") == [("high",)]


def test_a_spot_quote_failing_an_earlier_check_keeps_that_reason(db_path: Path) -> None:
    on_demand = dataclasses.replace(FULL, interruption_rate=None)
    spot = dataclasses.replace(on_demand, pricing="spot", price=4.0, interruption_rate=1.5)
    summary = run(db_path, 0, [on_demand, spot, dataclasses.replace(on_demand, region="westus3")])
    assert (summary.offers_seen, summary.offers_rejected) == (2, 1)
    assert query(db_path, "SELECT reason FROM core.rejected_quotes") == [
        ("interruption rate outside 0..1",)
    ]


def test_tied_duplicates_collapse_into_one_offer_the_same_way_every_run(db_path: Path) -> None:
    twins = [FULL, dataclasses.replace(FULL, available=False, source_url=None)]
    first = run(db_path, 0, twins)
    second = run(db_path, 1, twins)
    assert (first.offers_seen, first.offers_duplicate, second.offers_changed) == (1, 1, 0)
    assert query(db_path, "SELECT count(*) FROM price_history") == [(1,)]
    assert query(db_path, "SELECT reason, count(*) FROM core.rejected_quotes GROUP BY ALL") == [
        ("duplicate key in the snapshot (collapsed into the cheapest)", 2)
    ]
    # the open row is one of the twins, whole: not columns of one and attributes of the other
    [(available, url)] = query(db_path, "SELECT available, source_url FROM offers")
    assert (available, url) in {(True, FULL.source_url), (False, None)}


def test_an_unchanged_quote_with_no_optional_attribute_is_not_rewritten(db_path: Path) -> None:
    run(db_path, 0, [BARE])
    summary = run(db_path, 1, [BARE])
    assert (summary.offers_seen, summary.offers_changed, summary.offers_new) == (1, 0, 0)
    assert query(db_path, "SELECT last_seen FROM core.current_offers") == [(T0,)]


@pytest.mark.parametrize(
    ("field", "value", "column", "stored"),
    [
        ("interruption_rate", 0.2, "interruption_rate", 0.2),
        ("source_url", "https://example.invalid/b", "source_url", "https://example.invalid/b"),
        ("offer_count", 4, "offer_count", 4),
        ("price_date", "2026-11-01", "price_date", dt.date(2026, 11, 1)),
        ("price_rule", "50 % of on-demand", "price_origin", "derived"),
    ],
)
def test_an_attribute_set_after_runs_without_it_updates_the_open_interval(
    db_path: Path, field: str, value: object, column: str, stored: object
) -> None:
    run(db_path, 0, [BARE])
    run(db_path, 1, [BARE])
    summary = run(db_path, 2, [dataclasses.replace(BARE, **{field: value})])
    assert (summary.offers_changed, summary.offers_new) == (0, 0)
    assert query(db_path, f"SELECT {column}, first_seen FROM offers") == [(stored, T0)]
    assert query(db_path, "SELECT count(*) FROM price_history") == [(1,)]


def test_keys_match_by_each_name_in_its_own_column(db_path: Path) -> None:
    """The classification joins on numbered names (one numbering for regions, zones and
    instance types alike): a name is matched only in its own column, and a stored key with a
    name the snapshot lacks matches nothing and closes."""
    crossed = [
        dataclasses.replace(BARE, region="eastus", zone="westus"),
        dataclasses.replace(BARE, region="westus", zone="eastus", price=4.0),
        dataclasses.replace(BARE, region="japaneast", instance_type="eastus", price=5.0),
    ]
    run(db_path, 0, crossed)
    later = [
        dataclasses.replace(crossed[0], price=3.5),  # changed
        crossed[1],  # same
        dataclasses.replace(BARE, region="eastus", instance_type="westus", price=6.0),  # new
    ]  # crossed[2] vanished: its region is a name the new snapshot has nowhere
    summary = run(db_path, 1, later)
    assert (summary.offers_changed, summary.offers_new, summary.offers_closed) == (1, 1, 1)
    assert query(
        db_path,
        "SELECT region, zone, instance_type, price_hour_original FROM core.current_offers"
        " ORDER BY ALL",
    ) == [
        ("eastus", "", "westus", 6.0),
        ("eastus", "westus", BARE.instance_type, 3.5),
        ("westus", "eastus", BARE.instance_type, 4.0),
    ]
