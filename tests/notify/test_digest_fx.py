"""A mover is an offer whose price moved, not an exchange rate: an offer priced in euros whose
euro price held is no mover, whether or not its history opened an interval in the week (a
stock change) before the rate moved."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from priceadvisor.config import Settings, WorkloadProfile
from priceadvisor.manifest import manifest
from priceadvisor.notify import digest
from priceadvisor.records import FetchResult, FxRate, RawQuote, RunStatus, utcnow
from priceadvisor.sizing.advisor import store_advice
from priceadvisor.store import connections
from priceadvisor.store.ingest import ingest
from priceadvisor.store.runs import start_run
from tests.conftest import ingest_quotes
from tests.notify.test_zone_keys import backdate

SHORT_LORA = WorkloadProfile(name="short", task="lora", model="llama-3.1-8b", train_tokens=1e7)


def usd_per_eur(db: Path, usd: float) -> None:
    """An ECB run: `usd` US dollars buy one euro."""
    with connections.writer(db) as con:
        run_id = start_run(con, "ecb")
        rates = [FxRate(dt.date(2026, 1, 1), "USD", usd)]
        result = FetchResult("ecb", RunStatus.OK, fx_rates=rates, finished_at=utcnow())
        ingest(con, run_id, result, manifest("ecb"))


def scaleway(stock: dict[str, str], price: float = 2.73) -> list[RawQuote]:
    return [
        RawQuote(
            region=region,
            instance_type="H100-1-80G",
            pricing="on_demand",
            price=price,
            currency="EUR",
            gpu_name_raw="H100 PCIe 80GB",
            gpu_count=1.0,
            available=True,
            stock=level,
        )
        for region, level in stock.items()
    ]


def test_an_exchange_rate_alone_moves_no_offer(db_path: Path) -> None:
    usd_per_eur(db_path, 1.10)
    ingest_quotes(db_path, "scaleway", scaleway({"fr-par-2": "available", "pl-waw-2": "available"}))
    backdate(db_path, 10)
    # four days ago Paris ran short: its interval closed (at that day's rate), another opened
    ingest_quotes(db_path, "scaleway", scaleway({"fr-par-2": "scarce", "pl-waw-2": "available"}))
    backdate(db_path, 4)
    usd_per_eur(db_path, 1.20)  # then the euro rose; the euro prices held
    ingest_quotes(db_path, "scaleway", scaleway({"fr-par-2": "scarce", "pl-waw-2": "available"}))
    settings = Settings(workloads=[SHORT_LORA])
    with connections.writer(db_path) as con:
        now = con.execute("SELECT region, price_hour_usd FROM offers ORDER BY 1").fetchall()
        store_advice(con, settings.workloads)
        built = digest.build(con, settings, utcnow())
    assert now == [("fr-par-2", 2.73 * 1.20), ("pl-waw-2", 2.73 * 1.20)]
    assert built.movers == []  # not "fr-par-2 $3.00 -> $3.28 +9.1%" (and Warsaw not at all)
    assert [(r["region"], r["change"]) for r in built.workloads] == [
        ("fr-par-2", 0.0),
        ("pl-waw-2", 0.0),
    ]
    [gpu] = built.gpu_prices  # a week ago Paris's closed interval was the cheapest, at 1.10
    assert (gpu["now_price"], gpu["week_ago"], gpu["change"]) == (2.73 * 1.20, 2.73 * 1.20, 0)


def test_a_euro_price_change_is_measured_at_one_rate(db_path: Path) -> None:
    usd_per_eur(db_path, 1.10)
    ingest_quotes(db_path, "scaleway", scaleway({"fr-par-2": "available", "pl-waw-2": "available"}))
    backdate(db_path, 10)
    usd_per_eur(db_path, 1.20)
    ingest_quotes(
        db_path,
        "scaleway",
        scaleway({"fr-par-2": "available"}, 2.46) + scaleway({"pl-waw-2": "available"}),
    )  # Paris -10 % in euros
    with connections.reader(db_path) as con:
        built = digest.build(con, Settings(), utcnow())
    [mover] = built.movers
    assert mover["region"] == "fr-par-2"
    assert round(mover["change"], 4) == round(2.46 / 2.73 - 1, 4)
    assert round(mover["before"], 6) == round(2.73 * 1.20, 6)  # at the rate of now
