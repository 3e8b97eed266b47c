from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from priceadvisor.collect.adapters.base import SourceFormatError
from priceadvisor.collect.adapters.verda import (
    check_locations,
    offers,
    parse_availability,
    parse_instance_types,
)
from priceadvisor.records import RunStatus
from priceadvisor.resources import recordings_dir
from tests.conftest import query
from tests.localserver import fetch_locally

FOLDER = recordings_dir() / "verda"
SECRET = "client-7:very-secret-value"


def types() -> dict[str, dict[str, Any]]:
    listing = parse_instance_types(json.loads((FOLDER / "instance-types.json").read_text()))
    return {t["instance_type"]: t for t in listing}


def availability() -> dict[tuple[str, str], set[str]]:
    on_demand = json.loads((FOLDER / "availability-on-demand.json").read_text())
    spot = json.loads((FOLDER / "availability-spot.json").read_text())
    return parse_availability(on_demand, "on_demand") | parse_availability(spot, "spot")


def test_price_per_hour_is_the_whole_instance_and_spot_is_its_own_tier() -> None:
    quotes = {q.pricing: q for q in offers(types()["8H100.80S.176V"], "FIN-01", {}, "u")}
    assert (quotes["on_demand"].price, quotes["on_demand"].gpu_count) == (31.6, 8.0)
    assert quotes["spot"].price == 13.6 and quotes["on_demand"].price_basis == "node"
    assert quotes["on_demand"].gpu_memory_gb == 80  # 640 GB over 8 GPUs
    assert quotes["on_demand"].currency == "USD"


def test_availability_is_per_location_and_pricing() -> None:
    found = availability()
    h100 = types()["1H100.80S.30V"]
    states = {
        (loc, q.pricing): q.available
        for loc in ("FIN-01", "FIN-02", "ICE-01")
        for q in offers(h100, loc, found, "u")
    }
    assert states[("FIN-01", "on_demand")] and states[("FIN-01", "spot")]
    assert states[("FIN-02", "on_demand")] and not states[("FIN-02", "spot")]
    assert not states[("ICE-01", "on_demand")]


def test_availability_for_a_location_not_listed_fails() -> None:
    locations = [x["code"] for x in json.loads((FOLDER / "locations.json").read_text())]
    check_locations(availability(), locations)  # the recording's codes all match
    renamed = {(code.lower(), kind): found for (code, kind), found in availability().items()}
    with pytest.raises(SourceFormatError, match="unknown locations fin-01"):
        check_locations(renamed, locations)


def test_cpu_nodes_are_not_gpu_offers() -> None:
    assert offers(types()["CPU.120V.480G"], "FIN-01", {}, "u") == []


@pytest.mark.parametrize("document", [{"instance_types": []}, [{"instance_type": "1H100"}], "x"])
def test_unexpected_layout_is_a_format_error(document: Any) -> None:
    with pytest.raises(SourceFormatError):
        parse_instance_types(document)


def test_end_to_end_with_client_credentials(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERDA_CREDENTIALS", SECRET)
    summaries = fetch_locally(db_path, "verda")
    summary, server = summaries["verda"], summaries["servers"]["verda"]
    assert summary.status is RunStatus.OK and summary.offers_seen == 42 and summary.unmapped == 0
    assert server.authorizations[0] == ""  # the token request carries the secret in its body
    assert set(server.authorizations[1:]) == {"Bearer eyJhbGciOiJIUzI1NiJ9.test-token"}
    rows = query(
        db_path,
        "SELECT region, country, is_eu, price_gpu_hour_usd FROM offers "
        "WHERE instance_type = '8H100.80S.176V' AND pricing = 'on_demand' ORDER BY region",
    )
    assert rows == [
        ("FIN-01", "FI", True, pytest.approx(3.95)),
        ("FIN-02", "FI", True, pytest.approx(3.95)),
        ("ICE-01", "IS", False, pytest.approx(3.95)),
    ]


def test_a_refused_token_fails_without_leaking_the_secret(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VERDA_CREDENTIALS", SECRET)
    summary = fetch_locally(db_path, "verda", faults=[lambda path, q: (401, {}, b"bad client")])[
        "verda"
    ]
    assert summary.status is RunStatus.FAILED and "HTTP 401" in (summary.error or "")
    assert "very-secret" not in (summary.error or "")
    monkeypatch.setenv("VERDA_CREDENTIALS", "no-colon")
    summary = fetch_locally(db_path, "verda")["verda"]
    assert summary.status is RunStatus.FAILED and "client_id:client_secret" in (summary.error or "")
    monkeypatch.delenv("VERDA_CREDENTIALS")
    skipped = fetch_locally(db_path, "verda")["verda"]
    assert skipped.status is RunStatus.SKIPPED and "VERDA_CREDENTIALS" in (skipped.error or "")
