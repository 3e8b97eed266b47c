"""`tco --workload` rents within the workload's constraints, as `advise` ranks for it: where it
may run (providers, countries, continents, eu_only), at most `max_gpus` per offer, only what can
be rented now with `require_available`, no marketplace host with `sla`. `tco --gpu` is not
restricted. A market built here: Vultr in Amsterdam (NL, EU) and New Jersey (US), Vast's
marketplace hosts, Civo's global commitment."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from priceadvisor.manifest import manifest
from priceadvisor.records import FetchResult, RawQuote, RunStatus, utcnow
from priceadvisor.store import connections as store
from priceadvisor.store.ingest import ingest
from priceadvisor.store.runs import start_run
from tests.conftest import cli

WORKLOAD = """
[[workloads]]
name = "chat"
task = "serve"
model = "llama-3.1-8b"
monthly_output_tokens = 1e8
"""
OWN = ("--purchase-price", "8000", "--power-w", "350")


def l40s(
    region: str,
    pricing: str,
    price: float,
    *,
    count: float = 1.0,
    term: int | None = None,
    available: bool | None = True,
) -> RawQuote:
    return RawQuote(
        region=region,
        instance_type=f"L40S x{count:g} {region} {pricing}",
        pricing=pricing,
        price=price * count,
        gpu_name_raw="L40S",
        gpu_count=count,
        term_months=term,
        available=available,
    )


def run(db: Path, provider: str, quotes: list[RawQuote]) -> None:
    with store.writer(db) as con:
        run_id = start_run(con, provider)
        at = utcnow() - dt.timedelta(minutes=5)
        result = FetchResult(provider, RunStatus.OK, quotes, finished_at=at)
        ingest(con, run_id, result, manifest(provider))


@pytest.fixture
def market(db_path: Path) -> Path:
    """Cheapest first, per kind: on-demand Vast ($0.40, a marketplace host, NL), Vultr New
    Jersey 8 GPUs ($0.90), Vultr New Jersey, not rentable now ($1.00), Vultr New Jersey ($1.20),
    Vultr Amsterdam ($1.90); spot Vultr New Jersey ($0.60); a commitment at Civo ($0.78,
    no country)."""
    run(
        db_path,
        "vultr",
        [
            l40s("ams", "on_demand", 1.90),
            l40s("ewr", "on_demand", 1.20),
            l40s("atl", "on_demand", 1.00, available=False),
            l40s("dfw", "on_demand", 0.90, count=8),
            l40s("ewr", "spot", 0.60),
        ],
    )
    run(db_path, "vast", [l40s("NL", "on_demand", 0.40)])
    run(db_path, "civo", [l40s("global", "reserved", 0.78, term=36)])
    return db_path


def tco(
    capsys: pytest.CaptureFixture[str], db: Path, restrictions: str, *args: str
) -> dict[str, dict[str, Any]]:
    """The break-evens of `tco` for the workload restricted so, after `advise` stored its
    ranking (each against -> its break-even with the offer named)."""
    config = db.parent / "priceadvisor.toml"
    config.write_text(WORKLOAD + restrictions)
    common = ("--config", str(config), "--db", str(db))
    code, _, err = cli(capsys, *common, "advise")
    assert code == 0, err
    code, out, err = cli(capsys, *common, "tco", *args, *OWN, "--format", "json")
    assert code == 0, err
    record = json.loads(out)
    return {even["against"]: even for even in record["break_evens"]}


def where(even: dict[str, Any]) -> tuple[str, str] | None:
    offer = even["offer"]
    return None if offer is None else (offer["provider"], offer["region"])


def test_a_workload_in_the_eu_rents_in_the_eu(
    capsys: pytest.CaptureFixture[str], market: Path
) -> None:
    found = tco(capsys, market, 'continents = ["EU"]\nsla = true\n', "--workload", "chat")
    assert where(found["on_demand"]) == ("vultr", "ams")
    assert found["spot"]["offer"] is None
    assert found["spot"]["summary"] == "no current spot offer within the workload's constraints"
    assert found["commitment"]["offer"] is None  # Civo's "global" has no country
    assert "within the workload's constraints" in found["commitment"]["summary"]
    for kind in ("spot", "commitment"):  # JSON says the same reason as the line
        assert found[kind]["missing"] == "outside_workload_constraints"
        assert found[kind]["newest_stored"] is None
    assert found["on_demand"]["missing"] is None


def test_a_workload_restricted_to_countries_or_eu_only_rents_there(
    capsys: pytest.CaptureFixture[str], market: Path
) -> None:
    for restriction in ('countries = ["us"]\n', "eu_only = true\nsla = true\n"):
        found = tco(capsys, market, restriction + "max_gpus = 1\n", "--workload", "chat")
        expected = "atl" if "us" in restriction else "ams"
        assert where(found["on_demand"]) == ("vultr", expected), restriction


def test_a_workload_restricted_to_providers_rents_from_them(
    capsys: pytest.CaptureFixture[str], market: Path
) -> None:
    found = tco(capsys, market, 'providers = ["vultr"]\nmax_gpus = 1\n', "--workload", "chat")
    assert where(found["on_demand"]) == ("vultr", "atl")
    assert found["commitment"]["offer"] is None
    assert "within the workload's constraints" in found["commitment"]["summary"]


def test_max_gpus_require_available_and_sla_apply_to_the_rentals(
    capsys: pytest.CaptureFixture[str], market: Path
) -> None:
    """Without them the $0.40 marketplace host, then the 8-GPU node at $0.90, then the
    unavailable $1.00 would be rented; with all three the $1.20 in New Jersey is."""
    found = tco(
        capsys,
        market,
        "max_gpus = 4\nrequire_available = true\nsla = true\n",
        "--workload",
        "chat",
    )
    assert where(found["on_demand"]) == ("vultr", "ewr")
    assert found["on_demand"]["offer"]["list_usd_per_gpu_hour"] == pytest.approx(1.20)
    # spot is compared whether or not the workload takes it: tco names each kind of rental
    assert where(found["spot"]) == ("vultr", "ewr")
    assert where(found["commitment"]) == ("civo", "global")


def test_tco_for_a_gpu_is_not_restricted(capsys: pytest.CaptureFixture[str], market: Path) -> None:
    found = tco(capsys, market, 'continents = ["EU"]\n', "--gpu", "L40S-48GB")
    assert where(found["on_demand"]) == ("vast", "NL")
    assert where(found["spot"]) == ("vultr", "ewr")
    assert where(found["commitment"]) == ("civo", "global")
