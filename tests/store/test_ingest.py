from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

from priceadvisor.collect.fetch import run_cycle
from priceadvisor.config import Settings
from priceadvisor.manifest import manifest
from priceadvisor.records import FetchResult, RawQuote, RunStatus
from priceadvisor.service.stores import configured_store
from priceadvisor.store import connections
from priceadvisor.store.ingest import ingest
from priceadvisor.store.reads import recent_rejections
from priceadvisor.store.runs import start_run
from tests.conftest import azure_pages, query, with_price
from tests.conftest import serve_azure as serve


def cycle(settings: Settings, pages: list[Any]) -> Any:
    with respx.mock:
        serve(pages)
        [summary] = run_cycle(
            settings, configured_store(settings), ["azure"], False, lambda *_: None
        )
    return summary


def test_same_recording_twice_adds_no_history(settings: Settings, db_path: Path) -> None:
    first = cycle(settings, azure_pages())
    # 3 rejected: one zero price, and the H200 and GB200 "Spot" meters that equal on-demand;
    # 57 stored: 56 on-demand and spot offers and one 1-year reservation
    assert (first.status, first.offers_new, first.offers_rejected) == (RunStatus.OK, 57, 3)
    second = cycle(settings, azure_pages())
    assert (second.offers_new, second.offers_changed, second.offers_closed) == (0, 0, 0)
    assert query(db_path, "SELECT count(*) FROM price_history") == [(57,)]
    [(seen, last)] = query(db_path, "SELECT min(last_seen), max(last_seen) FROM offers")
    assert seen == last  # every offer's last_seen moved to the second run


def test_azure_spot_meters_at_the_pay_as_you_go_price_are_not_spot_offers(
    settings: Settings, db_path: Path
) -> None:
    """Azure caps a Spot price at pay-as-you-go; a Spot meter equal to it is no discount."""
    cycle(settings, azure_pages())
    spot = query(
        db_path,
        "SELECT instance_type FROM offers WHERE region = 'eastus2' AND pricing = 'spot' "
        "AND instance_type IN ('Standard_ND96isr_H200_v5', 'Standard_ND128isr_NDR_GB200_v6', "
        "'Standard_ND96isr_H100_v5')",
    )
    rejected = query(
        db_path,
        "SELECT instance_type FROM core.rejected_quotes WHERE pricing = 'spot' ORDER BY 1",
    )
    assert spot == [("Standard_ND96isr_H100_v5",)]
    assert rejected == [("Standard_ND128isr_NDR_GB200_v6",), ("Standard_ND96isr_H200_v5",)]


def test_one_changed_price_closes_one_interval_and_opens_one(
    settings: Settings, db_path: Path
) -> None:
    cycle(settings, azure_pages())
    changed = with_price(azure_pages(), "eastus", "Standard_NC24ads_A100_v4", False, 3.4)
    summary = cycle(settings, changed)
    assert (summary.offers_changed, summary.offers_new, summary.offers_closed) == (1, 0, 0)
    rows = query(
        db_path,
        """
        SELECT price_hour_usd, valid_to IS NULL FROM price_history
        WHERE region = 'eastus' AND instance_type = 'Standard_NC24ads_A100_v4'
          AND pricing = 'on_demand' ORDER BY valid_from""",
    )
    assert rows == [(3.673, False), (3.4, True)]
    assert query(db_path, "SELECT count(*) FROM price_history") == [(58,)]
    [(first_seen, valid_from)] = query(
        db_path,
        """
        SELECT o.first_seen, h.valid_from FROM offers o JOIN price_history h USING
            (provider, region, instance_type, pricing)
        WHERE o.region = 'eastus' AND o.instance_type = 'Standard_NC24ads_A100_v4'
          AND o.pricing = 'on_demand' AND h.valid_to IS NULL""",
    )
    assert first_seen < valid_from  # the offer is as old as its first sighting


def test_http_500_on_page_two_changes_nothing(settings: Settings, db_path: Path) -> None:
    cycle(settings, azure_pages())
    before = query(db_path, "SELECT * FROM offers ORDER BY ALL")
    pages = azure_pages()
    pages[1] = httpx.Response(500, text="upstream error")
    summary = cycle(settings, pages)
    assert summary.status is RunStatus.FAILED
    assert "HTTP 500" in (summary.error or "")
    after = query(db_path, "SELECT * FROM offers ORDER BY ALL")
    assert len(after) == len(before) == 57
    assert [r[:-4] for r in after] == [r[:-4] for r in before]
    runs = query(db_path, "SELECT status, error FROM fetch_runs ORDER BY run_id")
    assert runs[-1][0] == "failed" and "HTTP 500" in runs[-1][1]
    assert query(db_path, "SELECT count(*) FROM offers WHERE last_seen > first_seen") == [(0,)]


def test_vanished_offer_is_closed_after_a_complete_run(settings: Settings, db_path: Path) -> None:
    cycle(settings, azure_pages())
    pages = azure_pages()
    pages[2]["Items"] = [i for i in pages[2]["Items"] if i["armRegionName"] != "japaneast"]
    gone = 66 - sum(len(p["Items"]) for p in pages)
    summary = cycle(settings, pages)
    assert gone > 0 and summary.offers_closed > 0
    assert query(db_path, "SELECT count(*) FROM price_history WHERE valid_to IS NOT NULL") == [
        (summary.offers_closed,)
    ]


# --- direct ingest: outcomes, validation, currency --------------------------------------------


def quote(
    region: str = "eastus",
    sku: str = "Standard_NC24ads_A100_v4",
    price: float | None = 3.0,
    **kw: Any,
) -> RawQuote:
    return RawQuote(
        region=region, instance_type=sku, pricing=kw.pop("pricing", "on_demand"), price=price, **kw
    )


def run(
    db: Path,
    quotes: list[RawQuote],
    status: RunStatus = RunStatus.OK,
    scopes: frozenset[str] = frozenset(),
    error: str | None = None,
) -> Any:
    with connections.writer(db) as con:
        run_id = start_run(con, "azure")
        result = FetchResult(
            "azure",
            status,
            quotes,
            scopes,
            error,
            finished_at=dt.datetime.now(dt.UTC).replace(tzinfo=None),
        )
        return ingest(con, run_id, result, manifest("azure"))


def open_keys(db: Path) -> set[tuple[str, str]]:
    return set(query(db, "SELECT region, instance_type FROM offers"))


def test_partial_run_closes_only_inside_complete_regions(db_path: Path) -> None:
    run(db_path, [quote("eastus"), quote("westeurope"), quote("japaneast")])
    summary = run(
        db_path,
        [quote("eastus")],
        RunStatus.PARTIAL,
        frozenset({"eastus", "westeurope"}),
        "japaneast: HTTP 503",
    )
    assert summary.status is RunStatus.PARTIAL and summary.offers_closed == 1
    assert {r for r, _ in open_keys(db_path)} == {"eastus", "japaneast"}


def test_failed_run_changes_nothing_even_with_quotes(db_path: Path) -> None:
    run(db_path, [quote("eastus"), quote("westeurope")])
    summary = run(db_path, [quote("eastus", price=1.0)], RunStatus.FAILED, error="boom")
    assert summary.status is RunStatus.FAILED and summary.error == "boom"
    assert query(db_path, "SELECT region, price_hour_usd FROM offers ORDER BY 1") == [
        ("eastus", 3.0),
        ("westeurope", 3.0),
    ]


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (quote(price=0.0), "price not positive"),
        (quote(price=-2.0), "price not positive"),
        (quote(price=None), "price missing or not a number"),
        (quote(price=float("nan")), "price missing or not a number"),
        (quote(price=1e6), "implausible price"),
        (quote(price=0.001), "implausible price"),
        (quote(pricing="preemptible"), "unknown pricing kind"),
        (quote(pricing="market"), "market average without a date"),
        (quote(region=""), "region missing"),
        (quote(gpu_count=0.0), "implausible GPU count"),
        (quote(currency="XYZ"), "no FX rate for XYZ"),
        (
            quote(price_basis="gpu", sku="Standard_Unknown", gpu_name_raw="H100"),
            "per-GPU price without a GPU count",
        ),
        (quote(interruption_rate=3.0), "interruption rate outside 0..1"),
        (quote(disk_usd_gb_month=-0.2), "disk or egress price negative or not a number"),
        (quote(egress_usd_gb=float("nan")), "disk or egress price negative or not a number"),
    ],
)
def test_absurd_quotes_are_rejected_and_counted(db_path: Path, bad: RawQuote, reason: str) -> None:
    good = [quote(r) for r in ("eastus", "westus3", "uksouth")]
    summary = run(db_path, [*good, bad])
    assert summary.status is RunStatus.OK
    assert summary.offers_rejected == 1 and summary.offers_seen == 3
    [(stored_reason,)] = query(db_path, "SELECT reason FROM core.rejected_quotes")
    assert stored_reason.startswith(reason)
    assert query(db_path, "SELECT count(*) FROM offers") == [(3,)]


def test_a_market_average_keeps_its_day_and_updates_it_in_place(db_path: Path) -> None:
    run(db_path, [quote(pricing="market", price_date="2026-07-14")])
    run(db_path, [quote(pricing="market", price_date="2026-07-15")])  # same average, next day
    rows = query(db_path, "SELECT pricing, CAST(price_date AS VARCHAR) FROM price_history")
    assert rows == [("market", "2026-07-15")]


def test_mostly_rejected_snapshot_is_a_failed_run(db_path: Path) -> None:
    run(db_path, [quote("eastus"), quote("westus3")])
    drifted = [quote("eastus", price=None), quote("westus3", price=None), quote("uksouth")]
    summary = run(db_path, drifted)
    assert summary.status is RunStatus.FAILED
    assert "2 of 3 quotes rejected" in (summary.error or "")
    assert open_keys(db_path) == {
        ("eastus", "Standard_NC24ads_A100_v4"),
        ("westus3", "Standard_NC24ads_A100_v4"),
    }


def test_empty_snapshot_never_wipes_offers(db_path: Path) -> None:
    run(db_path, [quote("eastus")])
    summary = run(db_path, [])
    assert summary.status is RunStatus.FAILED and len(open_keys(db_path)) == 1


def test_duplicate_keys_keep_the_lowest_price_and_are_counted(db_path: Path) -> None:
    summary = run(db_path, [quote(price=4.0), quote(price=3.5), quote(price=3.9)])
    assert (summary.offers_seen, summary.offers_duplicate, summary.offers_rejected) == (1, 2, 0)
    assert query(db_path, "SELECT price_hour_usd FROM offers") == [(3.5,)]
    assert query(db_path, "SELECT offers_duplicate FROM fetch_runs") == [(2,)]
    with connections.reader(db_path) as con:
        shown = recent_rejections(con).rows  # what doctor lists
    assert shown == [("azure", "duplicate key in the snapshot (collapsed into the cheapest)", 2)]


@pytest.mark.parametrize("spot_price", [3.0, 3.5])
def test_spot_not_below_on_demand_is_rejected_and_counted(db_path: Path, spot_price: float) -> None:
    quotes = [
        quote("eastus", price=3.0),
        quote("eastus", price=spot_price, pricing="spot"),
        quote("westus3", price=3.0),
        quote("westus3", price=1.0, pricing="spot"),
    ]
    summary = run(db_path, quotes)
    assert (summary.offers_seen, summary.offers_rejected) == (3, 1)
    assert query(db_path, "SELECT region FROM offers WHERE pricing = 'spot'") == [("westus3",)]
    [(reason,)] = query(db_path, "SELECT reason FROM core.rejected_quotes")
    assert reason == "spot price not below the on-demand price of the same offer"


def test_spot_without_an_on_demand_price_is_kept(db_path: Path) -> None:
    summary = run(db_path, [quote("eastus", price=9.0, pricing="spot"), quote("westus3")])
    assert (summary.offers_seen, summary.offers_rejected) == (2, 0)


def test_price_origin_says_published_or_derived_by_which_rule(db_path: Path) -> None:
    rule = "OCI preemptible = 50 % of on-demand"
    run(db_path, [quote("eastus"), quote("eastus", price=1.5, pricing="spot", price_rule=rule)])
    rows = query(db_path, "SELECT pricing, price_origin, price_rule FROM offers ORDER BY pricing")
    assert rows == [("on_demand", "published", None), ("spot", "derived", rule)]
    history = query(db_path, "SELECT DISTINCT price_origin FROM price_history ORDER BY 1")
    assert history == [("derived",), ("published",)]


def test_instance_type_table_gives_gpu_model_count_and_per_gpu_price(db_path: Path) -> None:
    run(
        db_path,
        [
            quote(sku="Standard_ND96isr_H100_v5", price=98.32),
            quote(sku="Standard_NV6ads_A10_v5", price=0.454),
            quote(sku="Standard_NV999x_v9", price=1.14),
        ],
    )
    rows = dict(
        (r[0], r[1:])
        for r in query(
            db_path,
            """
        SELECT instance_type, gpu_model, gpu_count, price_gpu_hour_usd, vcpus, gpu_name_raw
        FROM offers""",
        )
    )
    assert rows["Standard_ND96isr_H100_v5"][:4] == ("H100-SXM-80GB", 8, 12.29, 96)
    model, _count, per_gpu, _, _ = rows["Standard_NV6ads_A10_v5"]
    assert model == "A10-24GB" and per_gpu == pytest.approx(0.454 / 0.1667)
    assert rows["Standard_NV999x_v9"] == (None, None, None, None, "Standard_NV999x_v9")


def test_per_gpu_prices_become_node_prices(db_path: Path) -> None:
    run(
        db_path,
        [
            quote(
                sku="gpu_8x_h100",
                price=2.5,
                price_basis="gpu",
                gpu_count=8.0,
                gpu_name_raw="H100 (80 GB SXM5)",
            )
        ],
    )
    assert query(db_path, "SELECT gpu_model, price_hour_usd, price_gpu_hour_usd FROM offers") == [
        ("H100-SXM-80GB", 20.0, 2.5)
    ]


def test_non_usd_prices_convert_at_the_latest_rate_on_or_before(db_path: Path) -> None:
    with connections.writer(db_path) as con:
        con.executemany(
            "INSERT INTO core.fx_rates VALUES (?, ?, ?, 'test', now())",
            [
                ("2026-11-18", "USD", 1.10),
                ("2026-11-18", "EUR", 1.0),
                ("2026-11-19", "USD", 1.20),
                ("2026-11-19", "EUR", 1.0),
                ("2099-01-01", "USD", 9.99),
                ("2099-01-01", "EUR", 1.0),  # future: must be ignored
            ],
        )
    run(db_path, [quote(price=2.0, currency="EUR")])
    [(usd, original, currency)] = query(
        db_path, "SELECT price_hour_usd, price_hour_original, currency FROM offers"
    )
    assert (original, currency) == (2.0, "EUR")
    assert usd == pytest.approx(2.4)


def test_a_crashed_ingest_leaves_nothing_half_written(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run(db_path, [quote("eastus")])
    import priceadvisor.store.ingest as module

    def explode(*_: Any, **__: Any) -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr(module, "_finish_run", explode)
    with pytest.raises(RuntimeError):
        run(db_path, [quote("eastus", price=9.0), quote("westus3")])
    assert query(db_path, "SELECT region, price_hour_usd FROM offers") == [("eastus", 3.0)]
    assert query(db_path, "SELECT count(*) FROM price_history") == [(1,)]
