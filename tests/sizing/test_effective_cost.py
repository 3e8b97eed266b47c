"""The effective cost of a run on constructed offers: each billing term, unknown terms named
and never priced as 0, Young/Daly's spot overhead against a hand computation, and `sla`."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from priceadvisor.config import WorkloadProfile
from priceadvisor.records import RawQuote
from priceadvisor.sizing.advisor import rank
from priceadvisor.sizing.effective import daly_interval, hourly_rate, restart_overhead
from priceadvisor.store import connections
from tests.conftest import ingest_quotes

# A LoRA run short enough (well under an hour on one H100) for a per-hour bill to round it up.
SHORT_LORA = WorkloadProfile(
    name="short", task="lora", model="llama-3.1-8b", train_tokens=1e7, spot_ok=True
)


def quote(
    region: str,
    price: float,
    pricing: str = "on_demand",
    key: str = "a",
    gpus: int = 1,
    disk: float | None = None,
    egress: float | None = None,
) -> RawQuote:
    return RawQuote(
        region=region,
        instance_type=f"H100 x{gpus} {key}",
        pricing=pricing,
        price=price,
        gpu_name_raw="H100 SXM",
        gpu_count=float(gpus),
        available=True,
        source_url="https://example.test/prices",
        disk_usd_gb_month=disk,
        egress_usd_gb=egress,
    )


def per_second(hours: float) -> float:
    """Hours billed by the second."""
    return math.ceil(hours * 3600 - 1e-6) / 3600


def ranked(db: Path, profile: WorkloadProfile) -> list[dict[str, Any]]:
    with connections.writer(db) as con:
        names, rows = rank(con, [profile], keep=20)
    return [dict(zip(names, row, strict=True)) for row in rows]


def by_provider(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["provider"]: r for r in rows}


def test_young_daly_against_a_hand_computation() -> None:
    # The assumed rate 0.15: a 15 % chance of losing the offer within an hour.
    rate_h = hourly_rate(0.15, "assumed")
    assert rate_h == pytest.approx(0.1625189, rel=1e-6)  # -ln(0.85)
    # δ = 5 min, M = 1/λ = 6.1531 h: τ = sqrt(2 × 0.08333 × 6.1531) − 0.08333 = 0.92935 h
    assert daly_interval(5 / 60, rate_h) == pytest.approx(0.9293471, rel=1e-6)
    # 1 + δ/τ + λ((τ + δ)/2 + R) = 1 + 0.089669 + 0.162519 × (0.506340 + 0.166667)
    assert restart_overhead(5 / 60, 10 / 60, rate_h) == pytest.approx(1.1990450, rel=1e-6)
    # AWS's bucket is a monthly share: 5 % a month is λ = −ln(0.95)/730 per hour
    aws = hourly_rate(0.05, "aws-advisor")
    assert aws == pytest.approx(7.026479e-5, rel=1e-6)
    assert daly_interval(5 / 60, aws) == pytest.approx(48.61964, rel=1e-6)
    assert restart_overhead(5 / 60, 10 / 60, aws) == pytest.approx(1.0034367, rel=1e-6)
    # Daly: where the checkpoint takes at least 2M, checkpoint every M
    assert daly_interval(3.0, 1.0) == pytest.approx(1.0)
    assert restart_overhead(5 / 60, 10 / 60, 0.0) == 1.0


def test_a_per_hour_bill_rounds_a_short_run_up_and_moves_its_rank(db_path: Path) -> None:
    ingest_quotes(db_path, "vultr", [quote("ams", 2.00)])  # per hour, at least 60 min
    ingest_quotes(db_path, "runpod", [quote("secure", 2.50)])  # per second
    rows = by_provider(ranked(db_path, SHORT_LORA))
    vultr, runpod = rows["vultr"], rows["runpod"]
    hours = vultr["hours"]
    assert hours < 0.8  # the premise: a run far shorter than the hour billed
    assert vultr["list_cost_usd"] == pytest.approx(2.00 * hours)
    assert vultr["effective_cost_usd"] == pytest.approx(2.00)  # one whole hour
    assert vultr["cost_usd"] == vultr["effective_cost_usd"]
    assert f"billed per hour, at least 60 min: {hours:.4g} h → 1 h" in vultr["terms_applied"]
    # per-second billing rounds nothing worth a line; RunPod states no minimum: said so
    assert runpod["effective_cost_usd"] == pytest.approx(2.50 * per_second(hours))
    assert runpod["terms_applied"] == ["billed per second; minimum per start unknown"]
    # cheaper by list, dearer billed: the rank moves and the row says why
    assert (vultr["list_rank"], vultr["rank"]) == (1, 2)
    assert (runpod["list_rank"], runpod["rank"]) == (2, 1)


def test_unknown_terms_are_reported_never_priced_as_zero(db_path: Path) -> None:
    ingest_quotes(db_path, "azure", [quote("eastus", 3.00)])  # every term unknown
    ingest_quotes(db_path, "runpod", [quote("secure", 3.00)])  # disk $0.10/GB-month, free egress
    profile = SHORT_LORA.model_copy(update={"storage_gb": 400.0, "egress_gb_per_month": 500.0})
    rows = by_provider(ranked(db_path, profile))
    azure, runpod = rows["azure"], rows["runpod"]
    assert azure["effective_cost_usd"] == azure["list_cost_usd"]
    assert azure["terms_applied"] == [
        f"billing granularity unknown: {azure['hours']:.2f} h not rounded",
        "storage 400 GB: disk price unknown, not counted",
        "egress 500 GB/month: price unknown, not counted",
    ]
    billed = per_second(runpod["hours"])
    storage = 400 * 0.10 * billed / 730  # pro rata for the hours billed
    assert runpod["effective_cost_usd"] == pytest.approx(3.00 * billed + storage)
    assert runpod["effective_cost_usd"] > runpod["list_cost_usd"] + 0.9 * storage
    assert (
        f"storage 400 GB × $0.1/GB-month for {billed:.4g} h: +${storage:.2f} (minimum disk unknown)"
        in runpod["terms_applied"]
    )
    assert (
        "egress 500 GB/month × $0 (free allowance unknown: none assumed)"
        in (runpod["terms_applied"])
    )


def test_spot_training_pays_young_daly_restarts(db_path: Path) -> None:
    ingest_quotes(db_path, "vast", [quote("US", 1.00, "spot")])  # no AWS figure, no history
    profile = SHORT_LORA.model_copy(update={"checkpoint_minutes": 5.0, "restart_minutes": 10.0})
    [row] = ranked(db_path, profile)
    assert row["interruption_source"] == "assumed"
    assert row["spot_overhead"] == pytest.approx(1.1990450, rel=1e-6)
    billed = per_second(row["hours"] * row["spot_overhead"])
    assert row["effective_cost_usd"] == pytest.approx(1.00 * billed)
    assert (
        "spot restarts +19.9 % (Young/Daly, τ = 56 min, assumed interruption rate)"
        in (row["terms_applied"])
    )


SERVE = WorkloadProfile(name="api", task="serve", model="llama-3.1-8b", spot_ok=True)


@pytest.mark.parametrize(
    ("sla", "allow", "expected"),
    [
        (
            False,
            [],
            {
                "runpod/secure/on_demand",
                "runpod/secure/spot",
                "runpod/community/on_demand",
                "vast/US/on_demand",
            },
        ),
        (True, [], {"runpod/secure/on_demand"}),
        (True, ["spot"], {"runpod/secure/on_demand", "runpod/secure/spot"}),
        (
            True,
            ["marketplace"],
            {"runpod/secure/on_demand", "runpod/community/on_demand", "vast/US/on_demand"},
        ),
    ],
)
def test_sla_keeps_spot_and_no_sla_hosts_out_unless_allowed(
    db_path: Path, sla: bool, allow: list[str], expected: set[str]
) -> None:
    ingest_quotes(
        db_path,
        "runpod",
        [quote("secure", 2.0), quote("secure", 1.0, "spot"), quote("community", 1.5)],
    )
    ingest_quotes(db_path, "vast", [quote("US", 1.2)])
    profile = SERVE.model_copy(update={"sla": sla, "sla_allow": allow})
    rows = ranked(db_path, profile)
    assert {f"{r['provider']}/{r['region']}/{r['pricing']}" for r in rows} == expected


def test_the_candidate_pool_grows_until_the_effective_top_is_certain(db_path: Path) -> None:
    """Keep 1 from a first pool of 2 by list cost: both are per-hour offers whose short run
    bills a whole hour, dearer than the per-second offer fourth by list; the pool must grow."""
    ingest_quotes(db_path, "vultr", [quote("ams", p, key=str(p)) for p in (2.00, 2.01, 2.02)])
    ingest_quotes(db_path, "runpod", [quote("secure", 2.50)])
    with connections.writer(db_path) as con:
        names, rows = rank(con, [SHORT_LORA], keep=1)
    [best] = [dict(zip(names, row, strict=True)) for row in rows]
    assert (best["provider"], best["rank"], best["list_rank"]) == ("runpod", 1, 4)


# A fine-tune long enough for its disk to matter: ~19 h on one H100, half that on two.
LONG_LORA = SHORT_LORA.model_copy(update={"train_tokens": 4e8, "storage_gb": 2000.0})


def test_a_hosts_own_disk_price_is_counted_where_the_manifest_has_none(db_path: Path) -> None:
    """Vast's manifest states no disk price (each host sets its own): an offer carrying its
    host's price is charged at it, one without says unknown and is charged nothing."""
    ingest_quotes(db_path, "vast", [quote("US", 2.0, disk=0.2), quote("DE", 2.0, key="b")])
    rows = {r["region"]: r for r in ranked(db_path, LONG_LORA)}
    priced, unpriced = rows["US"], rows["DE"]
    billed = per_second(priced["hours"])
    storage = 2000 * 0.2 * billed / 730
    assert priced["effective_cost_usd"] == pytest.approx(2.0 * billed + storage)
    assert (
        f"storage 2000 GB × $0.2/GB-month (this host's price) for {billed:.4g} h: "
        f"+${storage:.2f} (minimum disk unknown)" in priced["terms_applied"]
    )
    assert unpriced["effective_cost_usd"] == pytest.approx(2.0 * per_second(unpriced["hours"]))
    assert "storage 2000 GB: disk price unknown, not counted" in unpriced["terms_applied"]


def test_the_row_a_term_moved_names_that_term_and_the_row_it_passed(db_path: Path) -> None:
    """Disk is held for the whole run: one GPU takes about twice as long as two, so its disk
    costs about twice as much; a little cheaper by list, it ends dearer."""
    ingest_quotes(
        db_path,
        "vast",
        [quote("US", 2.00, gpus=1, disk=0.2), quote("JP", 4.10, gpus=2, key="b", disk=0.2)],
    )
    one, two = sorted(ranked(db_path, LONG_LORA), key=lambda r: r["gpu_count"])
    assert one["list_cost_usd"] < two["list_cost_usd"]  # the premise: one GPU is cheaper by list
    assert (one["list_rank"], one["rank"], two["list_rank"], two["rank"]) == (1, 2, 2, 1)
    storage = {r["gpu_count"]: 2000 * 0.2 * per_second(r["hours"]) / 730 for r in (one, two)}
    assert two["rank_reason"] == (
        f"list #2 → #1: storage +${storage[2]:.4g} here vs +${storage[1]:.4g} on "
        "vast US 1× H100-SXM-80GB on_demand (list #1)"
    )
    assert one["rank_reason"] == (
        f"list #1 → #2: storage +${storage[1]:.4g} here vs +${storage[2]:.4g} on "
        "vast JP 2× H100-SXM-80GB on_demand (list #2)"
    )


def test_rows_whose_ranks_agree_have_no_reason(db_path: Path) -> None:
    ingest_quotes(
        db_path, "vast", [quote("US", 2.0, disk=0.2), quote("DE", 2.5, key="b", disk=0.2)]
    )
    rows = ranked(db_path, LONG_LORA)
    assert [r["rank"] for r in rows] == [r["list_rank"] for r in rows] == [1, 2]
    assert [r["rank_reason"] for r in rows] == [None, None]


def test_a_rank_an_unknown_term_moved_says_it_is_unknown_never_plus_0(db_path: Path) -> None:
    """An unknown disk price adds nothing (never priced as 0, but not counted either): the
    offer with a known price can fall behind one without, and the reason says so."""
    ingest_quotes(db_path, "vast", [quote("US", 2.0, disk=0.2), quote("DE", 2.05, key="b")])
    known, unknown = sorted(ranked(db_path, LONG_LORA), key=lambda r: r["list_rank"])
    assert (known["rank"], unknown["rank"]) == (2, 1)
    storage = 2000 * 0.2 * per_second(known["hours"]) / 730
    assert unknown["rank_reason"] == (
        f"list #2 → #1: storage unknown (not counted) here vs +${storage:.4g} on "
        "vast US 1× H100-SXM-80GB on_demand (list #1)"
    )


def test_a_served_workload_pays_its_hosts_own_egress_price(db_path: Path) -> None:
    """1 TB a month streamed out at the host's $0.004/GB: $4 a month, spread over the tokens
    the workload's replicas serve in that month."""
    ingest_quotes(db_path, "vast", [quote("US", 2.0, egress=0.004)])
    profile = SERVE.model_copy(update={"egress_gb_per_month": 1000.0})
    [row] = ranked(db_path, profile)
    per_mtok = 1e6 / (3600 * row["tokens_per_s"])  # hours one offer takes for 1M tokens
    egress = 1000 * 0.004 / (730 * row["replicas"]) * per_mtok
    assert row["effective_cost_usd"] == pytest.approx(row["list_cost_usd"] + egress)
    assert row["terms_applied"] == [
        "egress 1000 GB/month × $0.004 (this host's price) (free allowance unknown: none assumed)"
    ]


def test_a_storage_cost_below_a_cent_is_never_said_as_zero(db_path: Path) -> None:
    """20 GB at RunPod's $0.10/GB-month for a run of well under an hour adds about $0.002:
    the term said "+$0.00" while the cost counted it."""
    ingest_quotes(db_path, "runpod", [quote("secure", 3.00)])
    [row] = ranked(db_path, SHORT_LORA.model_copy(update={"storage_gb": 20.0}))
    billed = per_second(row["hours"])
    storage = 20 * 0.10 * billed / 730
    assert 0 < storage < 0.005
    assert (
        f"storage 20 GB × $0.1/GB-month for {billed:.4g} h: +${storage:.2g} (minimum disk unknown)"
        in row["terms_applied"]
    )
