"""`tco` against a market built here: the commitment that costs least over the years (not per
GPU-hour), spot priced at its measured interruption rate, and prices as fresh as `advise`'s
(stale only with --include-stale, older than a week never)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from priceadvisor.manifest import manifest
from priceadvisor.records import FetchResult, RawQuote, RunStatus, utcnow
from priceadvisor.sizing.advisor import CHECKPOINT_OVERHEAD, LOST_WORK_SHARE
from priceadvisor.store import connections as store
from priceadvisor.store.ingest import ingest
from priceadvisor.store.runs import start_run
from tests.conftest import cli


@pytest.fixture
def now() -> dt.datetime:
    return utcnow()


def l40s(pricing: str, price: float, term: int | None = None, key: str = "1") -> RawQuote:
    return RawQuote(
        region="global" if pricing == "reserved" else "ams",
        instance_type=f"L40S x1 {key}",
        pricing=pricing,
        price=price,
        gpu_name_raw="L40S",
        gpu_count=1.0,
        term_months=term,
    )


def rtx(key: int, pricing: str = "spot", price: float = 0.40) -> RawQuote:
    return RawQuote(
        region="US",
        instance_type=f"RTX 4090 x1 host{key}",
        pricing=pricing,
        price=price,
        gpu_name_raw="RTX 4090",
        gpu_count=1.0,
        available=True,
        source_url="https://vast.example/bundles",
    )


def run(db: Path, provider: str, at: dt.datetime, quotes: list[RawQuote]) -> None:
    with store.writer(db) as con:
        run_id = start_run(con, provider)
        ingest(
            con,
            run_id,
            FetchResult(provider, RunStatus.OK, quotes, finished_at=at),
            manifest(provider),
        )


def tco(capsys: pytest.CaptureFixture[str], db: Path, *args: str) -> dict[str, Any]:
    code, out, err = cli(capsys, "--db", str(db), "tco", *args, "--format", "json")
    assert code == 0, err
    return {e["against"]: e for e in json.loads(out)["break_evens"]}


L40S = ("--gpu", "L40S-48GB", "--purchase-price", "8000")


def test_a_commitment_is_paid_over_the_years_whatever_the_use(
    capsys: pytest.CaptureFixture[str], db_path: Path, now: dt.datetime
) -> None:
    """The audit's case: an L40S bought at $8,000 and used 30 % of 3 years costs ~$12,400;
    committing at $0.78/GPU-h costs $20,498 whether used or not, so owning is cheaper, where
    the old break-even ("after 16,705 GPU-hours") priced the commitment per used hour."""
    run(db_path, "civo", now - dt.timedelta(minutes=10), [l40s("reserved", 0.78, 36)])
    commitment = tco(capsys, db_path, *L40S, "--utilisation", "0.3")["commitment"]
    assert commitment["cheaper"] == "buy"
    assert commitment["horizon_usd"] == pytest.approx(0.78 * 8760 * 3)
    assert commitment["rent_usd"] == pytest.approx(0.78 * 8760 * 3)
    assert (commitment["terms"], commitment["term_months"]) == (1, 36)
    assert commitment["buy_when"] == "below"
    # owning at 100 % ($13,684) still costs less: no use makes committing cheaper
    assert commitment["utilisation"] > 1
    assert "owning is cheaper at any use" in commitment["summary"]
    assert "paid whether used or not" in commitment["summary"]


def test_the_commitment_compared_is_the_cheapest_over_the_years(
    capsys: pytest.CaptureFixture[str], db_path: Path, now: dt.datetime
) -> None:
    """Over half a year a 6-month term at $1.19 ($5,212) beats a 36-month one at $0.89, which
    would be paid in full ($23,389); over 3 years the 36-month one is the cheaper."""
    quotes = [l40s("reserved", 0.89, 36), l40s("reserved", 1.19, 6)]
    run(db_path, "civo", now - dt.timedelta(minutes=10), quotes)
    half = tco(capsys, db_path, *L40S, "--years", "0.5")["commitment"]
    assert half["offer"]["term_months"] == 6 and half["terms"] == 1
    assert half["horizon_usd"] == pytest.approx(1.19 * 730 * 6)
    three = tco(capsys, db_path, *L40S)["commitment"]
    assert three["offer"]["term_months"] == 36
    assert three["horizon_usd"] == pytest.approx(0.89 * 730 * 36)


def test_a_term_that_outlasts_the_years_is_paid_in_full(
    capsys: pytest.CaptureFixture[str], db_path: Path, now: dt.datetime
) -> None:
    run(db_path, "civo", now - dt.timedelta(minutes=10), [l40s("reserved", 0.89, 36)])
    commitment = tco(capsys, db_path, *L40S, "--years", "4")["commitment"]
    assert commitment["terms"] == 2  # renewed once: 72 months paid for 48
    assert commitment["horizon_usd"] == pytest.approx(2 * 0.89 * 730 * 36)
    assert (
        "the last paid in full though it runs 24 months past the 4 years" in (commitment["summary"])
    )
    single = tco(capsys, db_path, *L40S, "--years", "2.5")["commitment"]
    assert single["terms"] == 1 and single["horizon_usd"] == pytest.approx(0.89 * 730 * 36)
    assert (
        "1 × 36-month term, paid in full though it runs 6 months past the 2.5 years"
        in (single["summary"])
    )


def test_the_terms_payments_are_its_cost_where_the_source_states_them(
    capsys: pytest.CaptureFixture[str], db_path: Path, now: dt.datetime
) -> None:
    """Civo states $649.70 a month for 36 months beside its $0.89 an hour: the cost is what is
    paid (36 x $649.70), per GPU."""
    quote = dataclasses.replace(l40s("reserved", 0.89, 36), monthly=649.70)
    run(db_path, "civo", now - dt.timedelta(minutes=10), [quote])
    commitment = tco(capsys, db_path, *L40S)["commitment"]
    assert commitment["horizon_usd"] == pytest.approx(36 * 649.70)


def test_an_upfront_payment_is_part_of_the_hourly_price_not_added_to_it(
    capsys: pytest.CaptureFixture[str], db_path: Path, now: dt.datetime
) -> None:
    """Azure's reservation: the whole term paid upfront, its hourly price that over the hours."""
    term = 0.89 * 730 * 36
    quote = dataclasses.replace(l40s("reserved", 0.89, 36), upfront=term)
    run(db_path, "civo", now - dt.timedelta(minutes=10), [quote])
    commitment = tco(capsys, db_path, *L40S)["commitment"]
    assert commitment["horizon_usd"] == pytest.approx(term)


def interrupted_history(db: Path, now: dt.datetime) -> None:
    """Twelve rentable spot offers fetched daily for eight days; three vanish half an hour
    after the fifth fetch: 105 judged sightings, 3 of them followed by a loss within the hour;
    a fetch ten minutes ago keeps the rest fresh (too recent to be judged)."""
    first = now - dt.timedelta(days=8, hours=2)
    for day in range(9):
        at = first + dt.timedelta(days=day)
        keys = range(12) if day <= 4 else range(3, 12)
        run(db, "vast", at, [rtx(k) for k in keys])
        if day == 4:
            run(db, "vast", at + dt.timedelta(minutes=30), [rtx(k) for k in range(3, 12)])
    run(db, "vast", now - dt.timedelta(minutes=10), [rtx(k) for k in range(3, 12)])


def test_spot_is_priced_at_its_measured_interruption_rate(
    capsys: pytest.CaptureFixture[str], db_path: Path, now: dt.datetime
) -> None:
    interrupted_history(db_path, now)
    rtx4090 = ("--gpu", "RTX4090-24GB", "--purchase-price", "2000")
    spot = tco(capsys, db_path, *rtx4090)["spot"]["offer"]
    assert spot["overhead"] == pytest.approx(1 + CHECKPOINT_OVERHEAD + 3 / 105 * LOST_WORK_SHARE)
    assert spot["interruption_source"] == "measured"
    assert spot["interruption_rate"] == pytest.approx(3 / 105)
    code, out, _ = cli(capsys, "--db", str(db_path), "tco", *rtx4090)
    assert code == 0
    assert "interruption rate 2.9%/h, measured from the price history" in " ".join(out.split())


def test_spot_without_a_measurement_says_its_rate_is_assumed(
    capsys: pytest.CaptureFixture[str], db_path: Path, now: dt.datetime
) -> None:
    run(db_path, "vast", now - dt.timedelta(minutes=10), [rtx(1)])
    spot = tco(capsys, db_path, "--gpu", "RTX4090-24GB", "--purchase-price", "2000")["spot"]
    assert spot["offer"]["interruption_source"] == "assumed"
    assert "assumed: no usable measurement" in spot["summary"]


def test_stale_prices_are_compared_only_when_asked_and_week_old_ones_never(
    capsys: pytest.CaptureFixture[str], db_path: Path, now: dt.datetime
) -> None:
    """Vast fetches every 30 minutes: its offer seen 3 hours ago is stale; Civo's commitment
    seen 8 days ago is past the week's limit."""
    run(db_path, "vultr", now - dt.timedelta(minutes=10), [l40s("on_demand", 1.90)])
    run(db_path, "vast", now - dt.timedelta(hours=3), [l40s("on_demand", 0.50, key="2")])
    run(db_path, "civo", now - dt.timedelta(days=8), [l40s("reserved", 0.40, 36)])
    fresh = tco(capsys, db_path, *L40S)
    assert fresh["on_demand"]["offer"]["provider"] == "vultr"
    assert fresh["commitment"]["offer"] is None
    stale = tco(capsys, db_path, *L40S, "--include-stale")
    assert stale["on_demand"]["offer"]["provider"] == "vast"
    assert stale["on_demand"]["offer"]["freshness"] == "stale"
    assert stale["on_demand"]["summary"].endswith("(stale price)")
    assert stale["commitment"]["offer"] is None


def tco_table(capsys: pytest.CaptureFixture[str], db: Path, *args: str) -> str:
    code, out, err = cli(capsys, "--db", str(db), "tco", *args)
    assert code == 0, err
    return " ".join(out.split())  # the table wraps its value column: words, not lines


def test_a_missing_rental_says_when_only_stale_prices_are_stored(
    capsys: pytest.CaptureFixture[str], db_path: Path, now: dt.datetime
) -> None:
    """Civo fetches every 12 hours: its commitment seen 3 days ago is stale (past 24 hours), so
    it is not compared; that is no missing data, and the line says which price and how old."""
    run(db_path, "vultr", now - dt.timedelta(minutes=10), [l40s("on_demand", 1.90)])
    run(db_path, "civo", now - dt.timedelta(days=3), [l40s("reserved", 0.40, 36)])
    commitment = tco(capsys, db_path, *L40S)["commitment"]
    assert commitment["offer"] is None
    assert commitment["missing"] == "stale"
    assert commitment["newest_stored"]["provider"] == "civo"
    assert commitment["newest_stored"]["age_hours"] == pytest.approx(72, abs=0.2)
    expected = (
        "only a stale commitment price stored (civo, 3 days old): --include-stale compares it"
    )
    assert commitment["summary"] == expected
    assert expected in tco_table(capsys, db_path, *L40S)
    assert "no commitment price stored" not in tco_table(capsys, db_path, *L40S)
    asked = tco(capsys, db_path, *L40S, "--include-stale")["commitment"]
    assert asked["offer"]["provider"] == "civo"
    assert asked["missing"] is None


def test_a_missing_rental_says_when_every_price_is_older_than_a_week(
    capsys: pytest.CaptureFixture[str], db_path: Path, now: dt.datetime
) -> None:
    """Vast's on-demand and spot offers seen 12 days ago are never compared, --include-stale or
    not; the newest is named with its age. A commitment that was never stored says so."""
    old = now - dt.timedelta(days=12)
    run(db_path, "vast", old, [l40s("on_demand", 0.50), l40s("spot", 0.30, key="2")])
    for args in (L40S, (*L40S, "--include-stale")):
        evens = tco(capsys, db_path, *args)
        for kind, label in (("on_demand", "on-demand"), ("spot", "spot")):
            assert evens[kind]["offer"] is None
            assert evens[kind]["missing"] == "older_than_a_week"
            assert evens[kind]["summary"] == (
                f"no {label} price from the last week (newest: vast, 12 days old)"
            )
        assert evens["commitment"]["missing"] == "none"
        assert evens["commitment"]["newest_stored"] is None
        assert evens["commitment"]["summary"] == "no commitment price stored"


def test_a_rental_compared_has_no_missing_reason(
    capsys: pytest.CaptureFixture[str], db_path: Path, now: dt.datetime
) -> None:
    run(db_path, "vultr", now - dt.timedelta(minutes=10), [l40s("on_demand", 1.90)])
    on_demand = tco(capsys, db_path, *L40S)["on_demand"]
    assert on_demand["offer"]["provider"] == "vultr"
    assert (on_demand["missing"], on_demand["newest_stored"]) == (None, None)
