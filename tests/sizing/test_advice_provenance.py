"""Advice rows: the spot interruption rate's source (AWS's advisor, measured from the history,
or assumed), freshness tiers, `require_available`, and each row's price provenance."""

from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path
from typing import Any

import pytest

from priceadvisor.config import WorkloadProfile
from priceadvisor.manifest import manifest
from priceadvisor.records import FetchResult, RawQuote, RunStatus, utcnow
from priceadvisor.sizing.advisor import (
    DEFAULT_INTERRUPTION_RATE,
    Options,
    rank,
)
from priceadvisor.store import connections as store
from priceadvisor.store import interruption
from priceadvisor.store.ingest import ingest
from priceadvisor.store.runs import start_run


@pytest.fixture
def now() -> dt.datetime:
    """This test's now: the histories are built back from it (never from import time, which
    in a long run of the suite is long past)."""
    return utcnow()


LORA = WorkloadProfile(name="t", task="lora", model="llama-3.1-8b", train_tokens=1e8, spot_ok=True)


def spot(key: int, available: bool | None = True, price: float = 0.40) -> RawQuote:
    return RawQuote(
        region="US",
        instance_type=f"RTX 4090 x1 host{key}",
        pricing="spot",
        price=price,
        gpu_name_raw="RTX 4090",
        gpu_count=1.0,
        available=available,
        source_url="https://vast.example/bundles",
    )


def run(db: Path, provider: str, at: dt.datetime, quotes: list[RawQuote]) -> None:
    with store.writer(db) as con:
        run_id = start_run(con, provider)
        result = FetchResult(provider, RunStatus.OK, quotes, finished_at=at)
        ingest(con, run_id, result, manifest(provider))


def ranked(db: Path, profile: WorkloadProfile = LORA, **options: Any) -> list[dict[str, Any]]:
    with store.writer(db) as con:
        names, rows = rank(con, [profile], keep=50, options=Options(**options))
    return [dict(zip(names, row, strict=True)) for row in rows]


def interrupted_history(db: Path, now: dt.datetime) -> None:
    """Twelve rentable spot offers fetched daily for eight days; three vanish half an hour
    after the fifth fetch (a fetch then sees the rest): 9 x 10 + 3 x 5 = 105 sightings, 3 of
    them followed by a loss within the hour."""
    first = now - dt.timedelta(days=8, hours=2)
    for day in range(9):
        at = first + dt.timedelta(days=day)
        keys = range(12) if day <= 4 else range(3, 12)
        run(db, "vast", at, [spot(k) for k in keys])
        if day == 4:
            run(db, "vast", at + dt.timedelta(minutes=30), [spot(k) for k in range(3, 12)])


def test_a_rate_measured_from_the_history_prices_spot_offers(
    db_path: Path, now: dt.datetime
) -> None:
    interrupted_history(db_path, now)
    with store.writer(db_path) as con:
        interruption.measure(con, now)
        [row] = con.execute(
            "SELECT provider, gpu_model, sightings, interrupted, span_days "
            "FROM _measured_interruption"
        ).fetchall()
    assert row[:4] == ("vast", "RTX4090-24GB", 105, 3)
    assert row[4] == pytest.approx(8.0)
    rows = ranked(db_path, intervals={"vast": 86400})  # fetched daily here: still fresh
    assert {r["interruption_source"] for r in rows} == {"measured"}
    assert rows[0]["interruption_rate"] == pytest.approx(3 / 105)
    # training on spot: Young/Daly with the default 5-minute checkpoint and 10-minute restart
    rate_h = -math.log(1 - 3 / 105)  # a measured rate: the chance of a loss within an hour
    tau = math.sqrt(2 * (5 / 60) / rate_h) - 5 / 60
    expected = 1 + (5 / 60) / tau + rate_h * ((tau + 5 / 60) / 2 + 10 / 60)
    assert rows[0]["spot_overhead"] == pytest.approx(expected)


def test_too_short_a_history_falls_back_to_the_assumed_rate(
    db_path: Path, now: dt.datetime
) -> None:
    # hourly fetches of 13 offers: 8 x 13 = 104 sightings old enough to judge, but over 7 hours
    for hours in range(8, -1, -1):
        at = now - dt.timedelta(hours=hours, minutes=10)
        run(db_path, "vast", at, [spot(k) for k in range(13)])
    with store.writer(db_path) as con:
        # measured over the provider anyway: enough sightings, too short a span
        window = {"since": now - dt.timedelta(days=30), "now": now, "providers": ["vast"]}
        con.execute(interruption.MEASURED_SQL, window)
        [(sightings, span)] = con.execute(
            "SELECT sightings, span_days FROM _measured_interruption"
        ).fetchall()
        assert sightings >= interruption.MIN_SIGHTINGS and span < interruption.MIN_SPAN_DAYS
        # which is why measure leaves the provider out
        interruption.measure(con, now)
        assert con.execute("SELECT count(*) FROM _measured_interruption").fetchall() == [(0,)]
    [first, *_] = ranked(db_path)
    assert (first["interruption_source"], first["interruption_rate"]) == (
        "assumed",
        DEFAULT_INTERRUPTION_RATE,
    )


def test_aws_spot_uses_the_advisor_rate_and_on_demand_has_none(
    db_path: Path, now: dt.datetime
) -> None:
    base = {"region": "us-east-1", "instance_type": "g6e.xlarge", "gpu_count": 1.0}
    quotes = [
        RawQuote(pricing="on_demand", price=1.86, gpu_name_raw="L40S", **base),
        RawQuote(pricing="spot", price=0.70, gpu_name_raw="L40S", interruption_rate=0.075, **base),
    ]
    run(db_path, "aws", now - dt.timedelta(minutes=10), quotes)
    by_pricing = {r["pricing"]: r for r in ranked(db_path)}
    assert (by_pricing["spot"]["interruption_source"], by_pricing["spot"]["interruption_rate"]) == (
        "aws-advisor",
        0.075,
    )
    assert (
        by_pricing["on_demand"]["interruption_source"],
        by_pricing["on_demand"]["spot_overhead"],
    ) == (
        None,
        1.0,
    )


def test_stale_prices_rank_only_when_asked_and_excluded_ones_never(
    db_path: Path, now: dt.datetime
) -> None:
    # vast fetches every 30 minutes: 3 hours old is stale; 8 days old is past the limit
    run(db_path, "vast", now - dt.timedelta(hours=3), [spot(1)])
    assert ranked(db_path) == []
    [row] = ranked(db_path, include_stale=True)
    assert row["freshness"] == "stale"
    assert ranked(db_path, include_stale=True, intervals={"vast": 4 * 3600})[0]["freshness"] == (
        "fresh"
    )
    old = db_path.with_name("old.duckdb")
    run(old, "vast", now - dt.timedelta(days=8), [spot(1)])
    assert ranked(old, include_stale=True) == []


def test_each_row_says_where_its_price_came_from(db_path: Path, now: dt.datetime) -> None:
    seen = now - dt.timedelta(minutes=10)
    run(db_path, "vast", seen, [spot(1)])
    [row] = ranked(db_path)
    assert (row["source_url"], row["fetched_at"], row["price_origin"], row["freshness"]) == (
        "https://vast.example/bundles",
        seen,
        "published",
        "fresh",
    )


def test_a_workload_may_require_offers_rentable_now(db_path: Path, now: dt.datetime) -> None:
    quotes = [spot(1, True, 0.50), spot(2, False, 0.30), spot(3, None, 0.35)]
    run(db_path, "vast", now - dt.timedelta(minutes=10), quotes)
    strict = LORA.model_copy(update={"require_available": True})
    assert [r["instance_type"] for r in ranked(db_path, strict)] == ["RTX 4090 x1 host1"]
    assert len(ranked(db_path)) == 3  # by default availability does not filter


def test_include_flagged_keeps_include_stale(
    capsys: pytest.CaptureFixture[str], db_path: Path, tmp_path: Path, now: dt.datetime
) -> None:
    """`advise --include-flagged --include-stale` ranks the stale price as `advise
    --include-stale` does: the flagged ranking dropped --include-stale."""
    from tests.conftest import cli

    run(db_path, "vast", now - dt.timedelta(hours=3), [spot(1)])  # vast fetches every 30 min
    config = tmp_path / "priceadvisor.toml"
    config.write_text(
        '[[workloads]]\nname = "t"\ntask = "lora"\nmodel = "llama-3.1-8b"\n'
        "train_tokens = 1e8\nspot_ok = true\n"
    )
    args = ["--config", str(config), "--db", str(db_path), "advise", "-f", "json"]
    for extra in (["--include-stale"], ["--include-stale", "--include-flagged"]):
        code, out, err = cli(capsys, *args, *extra)
        assert code == 0, err
        assert [r["instance_type"] for r in json.loads(out)] == ["RTX 4090 x1 host1"], extra
    code, out, _ = cli(capsys, *args, "--include-flagged")
    assert code == 0 and json.loads(out) == []


def l40s(pricing: str, price: float, term: int | None = None) -> RawQuote:
    """A one-GPU L40S quote: Vultr-like in Amsterdam, or a Civo-like global commitment."""
    return RawQuote(
        region="global" if pricing == "reserved" else "ams",
        instance_type="L40S x1",
        pricing=pricing,
        price=price,
        gpu_name_raw="L40S",
        gpu_count=1.0,
        term_months=term,
    )


def test_the_commitment_is_as_fresh_as_the_ranking(
    capsys: pytest.CaptureFixture[str], db_path: Path, tmp_path: Path, now: dt.datetime
) -> None:
    """A commitment last seen two days ago (Civo fetches every few hours) is stale: `advise`
    ranks no stale price unless asked, and "if you commit" named it all the same; one older
    than a week is never recommended."""
    from tests.conftest import cli

    run(db_path, "vultr", now - dt.timedelta(minutes=10), [l40s("on_demand", 1.90)])
    run(db_path, "civo", now - dt.timedelta(days=2), [l40s("reserved", 0.89, 36)])
    config = tmp_path / "priceadvisor.toml"
    config.write_text(
        '[[workloads]]\nname = "t"\ntask = "lora"\nmodel = "llama-3.1-8b"\ntrain_tokens = 1e8\n'
    )
    args = ["--config", str(config), "--db", str(db_path), "advise", "-f", "json"]

    def committed(*extra: str) -> Any:
        code, out, err = cli(capsys, *args, *extra)
        assert code == 0, err
        [row] = json.loads(out)
        assert row["provider"] == "vultr"
        return row["commitment"] and row["commitment"]["provider"]

    assert committed() is None
    assert committed("--include-stale") == "civo"
    old = db_path.with_name("old.duckdb")
    run(old, "vultr", now - dt.timedelta(minutes=10), [l40s("on_demand", 1.90)])
    run(old, "civo", now - dt.timedelta(days=8), [l40s("reserved", 0.89, 36)])
    args[3] = str(old)
    assert committed("--include-stale") is None


def test_if_you_commit_says_when_only_stale_or_week_old_commitments_fit(
    capsys: pytest.CaptureFixture[str], db_path: Path, tmp_path: Path, now: dt.datetime
) -> None:
    """No commitment compared is no missing data when a stale one fits (Civo fetches every 12
    hours: seen 2 days ago is stale) or every one is older than a week: the line says which
    and how old, and "no stored commitment" stays for a store without one."""
    from tests.conftest import cli

    config = tmp_path / "priceadvisor.toml"
    config.write_text(
        '[[workloads]]\nname = "t"\ntask = "lora"\nmodel = "llama-3.1-8b"\ntrain_tokens = 1e8\n'
    )

    def line(db: Path, *extra: str) -> str:
        code, out, err = cli(capsys, "--config", str(config), "--db", str(db), "advise", *extra)
        assert code == 0, err
        [said] = [x for x in out.splitlines() if x.startswith("if you commit")]
        return said

    for days, name in ((2, "stale"), (12, "old"), (None, "none")):
        db = db_path.with_name(f"{name}.duckdb")
        run(db, "vultr", now - dt.timedelta(minutes=10), [l40s("on_demand", 1.90)])
        if days is not None:
            run(db, "civo", now - dt.timedelta(days=days), [l40s("reserved", 0.89, 36)])
    assert line(db_path.with_name("stale.duckdb")) == (
        "if you commit: only a stale commitment for L40S-48GB fits this workload "
        "(civo, 2 days old): --include-stale shows it"
    )
    assert line(db_path.with_name("stale.duckdb"), "--include-stale").startswith(
        "if you commit for 36 months: civo · global"
    )
    for extra in ((), ("--include-stale",)):
        assert line(db_path.with_name("old.duckdb"), *extra) == (
            "if you commit: no commitment for L40S-48GB from the last week fits this workload "
            "(newest: civo, 12 days old)"
        )
    assert line(db_path.with_name("none.duckdb")) == (
        "if you commit: no stored commitment for L40S-48GB fits this workload"
    )
