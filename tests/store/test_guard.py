"""The offer guard (store/guard.py) on real-shaped payloads: each rule, confirmation, the
allow-list, and that a flagged offer never reaches advice."""

from __future__ import annotations

import copy
import datetime as dt
import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from priceadvisor.cli.app import main
from priceadvisor.collect.adapters.runpod import parse_gpu_prices
from priceadvisor.collect.adapters.vast import aggregate, parse_offers
from priceadvisor.config import WorkloadProfile
from priceadvisor.manifest import manifest
from priceadvisor.records import FetchResult, IngestSummary, RawQuote, RunStatus, utcnow
from priceadvisor.resources import recordings_dir
from priceadvisor.sizing.advisor import Options, rank
from priceadvisor.store import connections as store
from priceadvisor.store import guard as guard_module
from priceadvisor.store.ingest import ingest
from priceadvisor.store.runs import start_run
from tests.conftest import query

RUNPOD = recordings_dir() / "runpod" / "gputypes.json"
VAST = recordings_dir() / "vast"
URL = "https://api.runpod.io/graphql"
MI300X = "AMD Instinct MI300X OAM"


@pytest.fixture(scope="module")
def recorded_market(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every provider's recording, fetched offline: the market the guard compares with."""
    db = tmp_path_factory.mktemp("guard") / "market.duckdb"
    with pytest.raises(SystemExit):
        main(["--db", str(db), "fetch", "--offline"])
    return db


@pytest.fixture
def market(recorded_market: Path, tmp_path: Path) -> Path:
    copied = tmp_path / "market.duckdb"
    shutil.copy(recorded_market, copied)
    return copied


def test_on_the_recordings_only_offers_the_source_denies_are_flagged(
    recorded_market: Path,
) -> None:
    """25 providers' recorded answers: real marketplace asks 3-5x below the market are
    confirmed by each other and stay ordinary offers; RunPod's placeholder and OVHcloud's
    coming-soon flavour are what their sources say is no offer."""
    flagged = query(
        recorded_market,
        "SELECT provider, region, instance_type, flag FROM offers WHERE flag IS NOT NULL",
    )
    assert sorted(flagged) == [
        ("ovh", "global", "a10-45", "not_offered"),
        ("runpod", "community", MI300X, "not_offered"),
    ]


def runpod_list(**edits: dict[str, Any]) -> dict[str, Any]:
    """The recorded price list (the real answer's shape), with some GPU items edited."""
    document = json.loads(RUNPOD.read_text())
    for gpu in document["data"]["gpuTypes"]:
        gpu.update(edits.get(gpu["id"], {}))
    return document


def captured_shape(document: dict[str, Any]) -> dict[str, Any]:
    """The same list as the older captured query answers it: no cloud flags."""
    bare = copy.deepcopy(document)
    for gpu in bare["data"]["gpuTypes"]:
        gpu.pop("secureCloud"), gpu.pop("communityCloud")
    return bare


def ingest_as(
    db: Path, provider: str, quotes: list[RawQuote], allow: Sequence[str] = ()
) -> IngestSummary:
    with store.writer(db) as con:
        run_id = start_run(con, provider)
        result = FetchResult(provider, RunStatus.OK, quotes, finished_at=utcnow())
        return ingest(con, run_id, result, manifest(provider), allow_flagged=allow)


def flags(db: Path, provider: str) -> dict[tuple[str, str, str], tuple[str | None, str | None]]:
    rows = query(
        db,
        "SELECT region, instance_type, pricing, flag, flag_reason FROM offers "
        "WHERE provider = ? AND flag_reason IS NOT NULL",
        [provider],
    )
    return {(r[0], r[1], r[2]): (r[3], r[4]) for r in rows}


def test_a_cloud_flag_saying_not_offered_flags_the_offer(tmp_path: Path) -> None:
    db = tmp_path / "a.duckdb"
    summary = ingest_as(db, "runpod", parse_gpu_prices(runpod_list(), URL))
    found = flags(db, "runpod")
    assert list(found) == [("community", MI300X, "on_demand")]
    flag, reason = found["community", MI300X, "on_demand"]
    assert flag == "not_offered" and "communityCloud: false" in (reason or "")
    assert summary.offers_flagged == 1
    [(counted,)] = query(db, "SELECT offers_flagged FROM fetch_runs")
    assert counted == 1


def test_a_known_placeholder_without_the_cloud_flag_is_flagged(market: Path) -> None:
    """The older captured shape has no cloud flags: RunPod's 0.5 is then suspect by value."""
    ingest_as(market, "runpod", parse_gpu_prices(captured_shape(runpod_list()), URL))
    flag, reason = flags(market, "runpod")["community", MI300X, "on_demand"]
    assert flag == "placeholder" and "0.5" in (reason or "")


def test_a_placeholder_value_the_market_confirms_is_an_ordinary_price(market: Path) -> None:
    """RTX A6000 at 0.5 sits inside its market (five providers, ~$0.9): not a placeholder."""
    document = captured_shape(runpod_list(**{"NVIDIA RTX A6000": {"communityPrice": 0.5}}))
    ingest_as(market, "runpod", parse_gpu_prices(document, URL))
    assert ("community", "NVIDIA RTX A6000", "on_demand") not in flags(market, "runpod")


def test_with_no_market_a_placeholder_value_stays_unconfirmed(tmp_path: Path) -> None:
    db = tmp_path / "a.duckdb"
    ingest_as(db, "runpod", parse_gpu_prices(captured_shape(runpod_list()), URL))
    assert flags(db, "runpod")["community", MI300X, "on_demand"][0] == "placeholder"


def test_a_price_far_below_the_market_is_flagged(market: Path) -> None:
    """A B200 at $0.60 (a wrong field, as peers have seen) against a market of $3-8."""
    document = runpod_list(**{"NVIDIA B200": {"communityPrice": 0.6}})
    ingest_as(market, "runpod", parse_gpu_prices(document, URL))
    flag, reason = flags(market, "runpod")["community", "NVIDIA B200", "on_demand"]
    assert flag == "below_market"
    assert "below the median of" in (reason or "") and "B200-180GB" in (reason or "")
    # the same GPU's ordinary price on the other cloud is left alone
    assert ("secure", "NVIDIA B200", "on_demand") not in flags(market, "runpod")


def test_another_source_at_the_same_level_confirms_a_low_price(market: Path) -> None:
    """Lambda's B200 at $0.70 is itself flagged when it comes first; RunPod's $0.60 after it
    is then confirmed by it (two sources agree), not flagged."""
    document = runpod_list(**{"NVIDIA B200": {"communityPrice": 0.6}})
    cheap_too = RawQuote("global", "b200-cheap", "on_demand", 0.7, "gpu", gpu_name_raw="B200")
    cheap_too.gpu_count = 1
    ingest_as(market, "lambda", [cheap_too])
    ingest_as(market, "runpod", parse_gpu_prices(document, URL))
    assert flags(market, "lambda")["global", "b200-cheap", "on_demand"][0] == "below_market"
    # not below_market any more; the move from the recorded $5.98 is still a jump until seen
    # again, and then nothing is left
    assert flags(market, "runpod")["community", "NVIDIA B200", "on_demand"][0] == "price_jump"
    ingest_as(market, "runpod", parse_gpu_prices(document, URL))
    assert ("community", "NVIDIA B200", "on_demand") not in flags(market, "runpod")


def vast_h100(edit: dict[str, Any]) -> list[RawQuote]:
    """The recorded Vast H100 SXM asks, one host's ask edited, aggregated as the adapter does."""
    offers = [
        o
        for name in ("bundles-h100-sxm-1.json", "bundles-h100-sxm-2.json")
        for o in parse_offers(json.loads((VAST / name).read_text()))
    ]
    lone = next(o for o in offers if o["geolocation"].endswith("PL") and o["num_gpus"] == 1)
    lone.update(edit)
    return aggregate(offers, "u")


def test_a_price_far_below_the_providers_own_offers_is_flagged(tmp_path: Path) -> None:
    """No market yet (a fresh database): one Vast H100 host at $0.25 among ~$2 asks."""
    db = tmp_path / "a.duckdb"
    ingest_as(db, "vast", vast_h100({"dph_total": 0.25, "dph_base": 0.24, "min_bid": None}))
    found = flags(db, "vast")
    assert [k for k, (flag, _) in found.items() if flag] == [
        ("PL", "H100 SXM x1 verified", "on_demand")
    ]
    assert found["PL", "H100 SXM x1 verified", "on_demand"][0] == "below_provider"


ORDINARY = {f"b200-{i}": 5.0 for i in range(5)}


@pytest.mark.parametrize(
    ("cheap", "checks", "flagged"),
    [
        ({"b200-cheap": 1.0}, [True, True], 1),  # a suspect nothing confirms
        ({"b200-cheap-a": 1.0, "b200-cheap-b": 1.1, "b200-cheap-c": 1.2}, [True, False], 0),
        ({}, [False], 0),  # no suspect
    ],
)
def test_skipping_the_low_price_rules_flags_what_running_them_does(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    cheap: dict[str, float],
    checks: list[bool],
    flagged: int,
) -> None:
    """The guard skips the confirmation and both low-price rules when no row is suspect, and
    the rules when every suspect is confirmed (by two other instance types as cheap): the same
    snapshot flags the same offers, with the same reasons, as with every statement run."""
    found_rows: list[bool] = []
    real_any_row = guard_module._any_row

    def any_row(con: Any, rows: str) -> bool:
        found_rows.append(real_any_row(con, rows))
        return found_rows[-1]

    def ingested(name: str) -> dict[tuple[str, str, str], tuple[str | None, str | None]]:
        db = tmp_path / f"{name}.duckdb"
        quotes = []
        for instance_type, price in (ORDINARY | cheap).items():
            quote = RawQuote(
                "global", instance_type, "on_demand", price, "gpu", gpu_name_raw="B200"
            )
            quote.gpu_count = 1
            quotes.append(quote)
        assert ingest_as(db, "lambda", quotes).offers_flagged == flagged
        return flags(db, "lambda")

    monkeypatch.setattr(guard_module, "_any_row", any_row)
    skipping = ingested("skipping")
    assert found_rows == checks  # the case takes the path it names
    monkeypatch.setattr(guard_module, "_any_row", lambda con, rows: True)
    assert skipping == ingested("every-statement")
    if flagged:
        assert skipping["global", "b200-cheap", "on_demand"][0] == "below_provider"


def test_marketplace_asks_agreeing_with_each_other_are_not_flagged(market: Path) -> None:
    """The recorded Vast H100 asks span $1.6-2.9 over many hosts: none is an outlier."""
    ingest_as(market, "vast", vast_h100({}))
    assert not [k for k, (flag, _) in flags(market, "vast").items() if flag]


def test_a_jump_and_back_is_a_glitch_kept_in_the_history(tmp_path: Path) -> None:
    db = tmp_path / "a.duckdb"
    h100 = "NVIDIA H100 80GB HBM3"
    ingest_as(db, "runpod", parse_gpu_prices(runpod_list(), URL))
    glitch = runpod_list(**{h100: {"securePrice": 0.99, "secureSpotPrice": 0.99}})
    ingest_as(db, "runpod", parse_gpu_prices(glitch, URL))
    flag, reason = flags(db, "runpod")["secure", h100, "on_demand"]
    assert flag == "price_jump" and "3.3x" in (reason or "")
    ingest_as(db, "runpod", parse_gpu_prices(runpod_list(), URL))  # back to 3.29
    assert ("secure", h100, "on_demand") not in flags(db, "runpod")
    history = query(
        db,
        "SELECT price_gpu_hour_usd, flag FROM price_history "
        "WHERE region = 'secure' AND instance_type = ? AND pricing = 'on_demand' "
        "ORDER BY valid_from",
        [h100],
    )
    assert history == [(3.29, None), (0.99, "price_jump"), (3.29, None)]


def test_a_jump_seen_again_by_the_next_fetch_is_confirmed(tmp_path: Path) -> None:
    db = tmp_path / "a.duckdb"
    h100 = "NVIDIA H100 80GB HBM3"
    ingest_as(db, "runpod", parse_gpu_prices(runpod_list(), URL))
    cut = runpod_list(**{h100: {"securePrice": 0.99, "secureSpotPrice": 0.99}})
    ingest_as(db, "runpod", parse_gpu_prices(cut, URL))
    summary = ingest_as(db, "runpod", parse_gpu_prices(cut, URL))
    assert ("secure", h100, "on_demand") not in flags(db, "runpod")
    assert summary.offers_flagged == 1  # only the MI300X placeholder is left


def test_a_jump_of_the_exchange_rate_alone_is_flagged(tmp_path: Path) -> None:
    """The jump is read over the keys the classification keeps to write (store.guard): a key
    whose price in its own currency stayed, but whose dollar price moved with the rate, is
    one of them (an attribute moved) and is flagged like any jump."""
    db = tmp_path / "a.duckdb"
    today = utcnow().date()
    eur = RawQuote("westeurope", "h100-box", "on_demand", 2.0, "node", currency="EUR")
    eur.gpu_name_raw, eur.gpu_count = "H100", 1

    def rate(day: Any, usd_per_eur: float) -> None:
        with store.writer(db) as con:
            con.executemany(
                "INSERT INTO core.fx_rates VALUES (?, ?, ?, 'test', now())",
                [(day, "USD", usd_per_eur), (day, "EUR", 1.0)],
            )

    rate(today - dt.timedelta(days=1), 1.1)
    ingest_as(db, "azure", [copy.copy(eur)])
    rate(today, 4.0)
    summary = ingest_as(db, "azure", [copy.copy(eur)])
    flag, reason = flags(db, "azure")["westeurope", "h100-box", "on_demand"]
    assert flag == "price_jump" and "3.6x" in (reason or "")
    assert (summary.offers_changed, summary.offers_flagged) == (0, 1)


def test_a_jump_of_an_offer_the_allow_list_lifted_keeps_the_earlier_reason(
    tmp_path: Path,
) -> None:
    """The jump rule runs after the allow-list has passed once (store.guard.flag_jumps): an
    offer an earlier rule flagged is no jump, allowed or not, as when the rules ran in one go."""
    db = tmp_path / "a.duckdb"
    allow = [f"community/{MI300X}"]
    ingest_as(db, "runpod", parse_gpu_prices(runpod_list(), URL), allow)
    jumped = runpod_list(**{"AMD Instinct MI300X OAM": {"communityPrice": 4.99}})
    ingest_as(db, "runpod", parse_gpu_prices(jumped, URL), allow)
    flag, reason = flags(db, "runpod")["community", MI300X, "on_demand"]
    assert flag is None and (reason or "").startswith("allowed by config (not_offered)")


@pytest.mark.parametrize(
    "allow", [["*"], [f"community/{MI300X}"], [f"community/{MI300X}/on_demand"]]
)
def test_the_allow_list_lifts_a_flag_and_keeps_the_reason(tmp_path: Path, allow: list[str]) -> None:
    db = tmp_path / "a.duckdb"
    summary = ingest_as(db, "runpod", parse_gpu_prices(runpod_list(), URL), allow)
    flag, reason = flags(db, "runpod")["community", MI300X, "on_demand"]
    assert flag is None and (reason or "").startswith("allowed by config (not_offered)")
    assert summary.offers_flagged == 0


def test_an_allow_list_entry_for_another_offer_changes_nothing(tmp_path: Path) -> None:
    db = tmp_path / "a.duckdb"
    ingest_as(db, "runpod", parse_gpu_prices(runpod_list(), URL), [f"secure/{MI300X}"])
    assert flags(db, "runpod")["community", MI300X, "on_demand"][0] == "not_offered"


WORKLOADS = [
    WorkloadProfile(
        name="chat-70b", task="serve", model="llama-3.1-70b", monthly_output_tokens=5e9
    ),
    WorkloadProfile(
        name="qlora-8b", task="qlora", model="llama-3.1-8b", train_tokens=2e8, spot_ok=True
    ),
    WorkloadProfile(
        name="pretrain-8b", task="pretrain", model="llama-3.1-8b", train_tokens=1e10, spot_ok=True
    ),
]


def _community_mi300x(rows: list[tuple[Any, ...]], columns: list[str]) -> list[tuple[Any, ...]]:
    at = {c: columns.index(c) for c in ("provider", "region", "gpu_model", "rank")}
    return [
        r
        for r in rows
        if (r[at["provider"]], r[at["region"]], r[at["gpu_model"]])
        == ("runpod", "community", "MI300X-192GB")
    ]


def test_the_runpod_mi300x_placeholder_cannot_rank_in_advice(market: Path) -> None:
    """The issue's case: on the recordings it was the #1 advice of every workload."""
    with store.writer(market) as con:
        columns, rows = rank(con, WORKLOADS, keep=10)
        _, with_flagged = rank(con, WORKLOADS, keep=10, options=Options(include_flagged=True))
    assert rows and not _community_mi300x(rows, columns)
    flagged = _community_mi300x(with_flagged, columns)
    assert {r[columns.index("rank")] for r in flagged} == {1}  # what the guard keeps out
    assert all("communityCloud" in r[columns.index("flag_reason")] for r in flagged)


def test_a_snapshot_from_before_the_guard_has_no_flags_to_filter_on() -> None:
    """`prices --as-of` on a lake snapshot older than migration 0110: no flag column."""
    import duckdb

    from priceadvisor.store.reads import has_flags

    con = duckdb.connect()
    con.execute("CREATE VIEW offers AS SELECT 'aws' AS provider, 1.0 AS price_hour_usd")
    assert not has_flags(con)
    con.execute("CREATE OR REPLACE VIEW offers AS SELECT 'aws' AS provider, NULL AS flag")
    assert has_flags(con)
