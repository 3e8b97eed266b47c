"""Availability as history: the documented "rentable hours" query, offers never available in N
days, and each provider's listed-but-not-rentable share, on a history built by real ingests."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest

from priceadvisor.manifest import manifest
from priceadvisor.records import FetchResult, RawQuote, RunStatus, utcnow
from priceadvisor.store import connections as store
from priceadvisor.store.availability import listed_not_rentable, never_available
from priceadvisor.store.ingest import ingest
from priceadvisor.store.runs import start_run
from tests.conftest import query

NOW = utcnow()
H100 = "NVIDIA H100 80GB HBM3"


def days_ago(days: float) -> dt.datetime:
    return NOW - dt.timedelta(days=days)


def quote(
    region: str, available: bool | None, gpu: str = H100, stock: str | None = None
) -> RawQuote:
    return RawQuote(
        region=region,
        instance_type=gpu,
        pricing="on_demand",
        price=2.69,
        price_basis="gpu",
        gpu_name_raw=gpu,
        gpu_count=1.0,
        available=available,
        stock=stock,
    )


def run(db: Path, at: dt.datetime, quotes: list[RawQuote]) -> None:
    with store.writer(db) as con:
        run_id = start_run(con, "runpod")
        ingest(
            con,
            run_id,
            FetchResult("runpod", RunStatus.OK, quotes, finished_at=at),
            manifest("runpod"),
        )


# Per key, the availability at each fetch (days ago): A rentable but for [-20, -10) days;
# B for [-15, -12); C for [-5, -3), inside one of A's rentable stretches (not counted twice);
# D never; E says nothing; F (an A100) is rentable throughout but is no H100.
FETCHES = {
    40: {"A": True, "B": False, "C": False, "D": False, "E": None, "F": True},
    20: {"A": False, "B": False, "C": False, "D": False, "E": None, "F": True},
    15: {"A": False, "B": True, "C": False, "D": False, "E": None, "F": True},
    12: {"A": False, "B": False, "C": False, "D": False, "E": None, "F": True},
    10: {"A": True, "B": False, "C": False, "D": False, "E": None, "F": True},
    5: {"A": True, "B": False, "C": True, "D": False, "E": None, "F": True},
    3: {"A": True, "B": False, "C": False, "D": False, "E": None, "F": True},
    1 / 24: {"A": True, "B": False, "C": False, "D": False, "E": None, "F": True},
}


def build_history(db: Path) -> None:
    for ago, states in FETCHES.items():
        quotes = [
            quote(key, state, "NVIDIA A100-SXM4-80GB" if key == "F" else H100)
            for key, state in states.items()
        ]
        if ago <= 5:
            quotes.append(quote("G", False))  # listed only for the last 5 days
        run(db, days_ago(ago), quotes)


def documented_query() -> str:
    text = (Path(__file__).parents[2] / "docs" / "sql.md").read_text()
    found = re.search(r"<!-- rentable-hours -->\n```sql\n(.*?)```", text, re.DOTALL)
    assert found, "docs/sql.md lost its rentable-hours query"
    return found.group(1)


def test_the_documented_query_counts_the_hours_an_h100_was_rentable(db_path: Path) -> None:
    build_history(db_path)
    with store.reader(db_path) as con:
        before = utcnow()
        [(hours,)] = con.execute(documented_query()).fetchall()
        after = utcnow()
    # A: [-30, -20) and [-10, -1 h); B: [-15, -12); C lies inside A's; F is an A100. The query's
    # 30 days end at its own now(), later than NOW by however long the test took to get here.
    expected = 10 * 24 + (10 * 24 - 1) + 3 * 24
    late = [(t - NOW).total_seconds() / 3600 for t in (before, after)]
    assert expected - late[1] - 1e-6 <= hours <= expected - late[0] + 1e-6


def test_an_availability_change_is_an_interval_of_its_own(db_path: Path) -> None:
    build_history(db_path)
    rows = query(
        db_path,
        "SELECT available, valid_from, valid_to FROM price_history WHERE region = 'A' "
        "ORDER BY valid_from",
    )
    assert rows == [
        (True, days_ago(40), days_ago(20)),
        (False, days_ago(20), days_ago(10)),
        (True, days_ago(10), None),
    ]


def test_offers_never_available_in_n_days(db_path: Path) -> None:
    build_history(db_path)
    with store.reader(db_path) as con:
        found = never_available(con, 30, NOW)
        shorter = never_available(con, 2, NOW)
    # D: false at every fetch; B was rentable 12-15 days ago; E says nothing; G is too new.
    assert [(f.region, f.pricing) for f in found] == [("D", "on_demand")]
    assert found[0].reason.startswith("never available in 30 days: listed since ")
    # in the last 2 days: C's rentable stretch ended 3 days ago; G is listed long enough now
    assert [f.region for f in shorter] == ["B", "C", "D", "G"]


def test_listed_but_not_rentable_share_per_provider(db_path: Path) -> None:
    build_history(db_path)
    with store.reader(db_path) as con:
        [share] = listed_not_rentable(con)
    # now: A and F rentable; B, C, D, G not; E unknown.
    assert (share.provider, share.listed, share.not_rentable, share.unknown) == ("runpod", 7, 4, 1)
    assert share.not_rentable_share == pytest.approx(4 / 7)


def test_the_guard_flags_an_offer_never_available_in_its_window(db_path: Path) -> None:
    """After a cycle, an offer whose source said "not rentable" at every fetch for the guard's
    window (14 days) is flagged and so left out of every cheapest answer; the rest are not."""
    from priceadvisor.store import guard

    build_history(db_path)
    with store.writer(db_path) as con:
        guard.reconfirm_after_cycle(con, NOW)
    flagged = query(db_path, "SELECT region, flag, flag_reason FROM offers WHERE flag IS NOT NULL")
    # B was rentable 12-15 days ago and C 3-5 days ago (both inside 14 days); G is too new
    assert [(r, f) for r, f, _ in flagged] == [("D", "never_available")]
    assert flagged[0][2].startswith("never available in 14 days")
    run(db_path, NOW, [quote("D", True)])  # the source says it can be rented now
    assert query(db_path, "SELECT flag FROM offers WHERE region = 'D'") == [(None,)]


def test_each_commitment_term_is_judged_as_its_own_offer(db_path: Path) -> None:
    """`term_months` is part of an offer's key: a 12-month commitment never rentable is found
    (and flagged) though the 36-month one of the same instance was rentable all along."""
    from dataclasses import replace

    from priceadvisor.store import guard

    def terms() -> list[RawQuote]:
        base = replace(quote("R", True), pricing="reserved")
        return [replace(base, term_months=12, available=False), replace(base, term_months=36)]

    for ago in (40, 20, 1):
        run(db_path, days_ago(ago), terms())
    with store.writer(db_path) as con:
        found = never_available(con, 30, NOW)
        guard.reconfirm_after_cycle(con, NOW)
    assert [(f.region, f.pricing, f.term_months) for f in found] == [("R", "reserved", 12)]
    flagged = "SELECT term_months, flag FROM offers WHERE region = 'R' ORDER BY term_months"
    assert query(db_path, flagged) == [(12, "never_available"), (36, None)]
