from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from priceadvisor.collect.adapters.aws import parse_advisor, parse_ondemand, parse_spot
from priceadvisor.collect.adapters.base import SourceFormatError
from priceadvisor.collect.fetch import run_cycle
from priceadvisor.manifest import manifest
from priceadvisor.records import RunStatus
from priceadvisor.resources import recordings_dir
from priceadvisor.service.stores import configured_store
from tests.conftest import query
from tests.localserver import local_settings, serving

FOLDER = recordings_dir() / "aws"
KNOWN = manifest("aws").instance_types
US_EAST = "US East (N. Virginia)"


def load(name: str) -> Any:
    return json.loads((FOLDER / name).read_text())


def test_ondemand_keeps_gpu_rows_and_the_on_demand_row_of_each_type() -> None:
    rows = {
        r["Instance Type"]: r
        for r in parse_ondemand(load("ondemand-us-east-1.json"), US_EAST, KNOWN)
    }
    assert "c6a.12xlarge" not in rows
    assert rows["p5.48xlarge"]["price"] == "55.0400000000"  # not the capacity-block row
    assert rows["g4ad.xlarge"]  # the AMD V520 instance comes through like the NVIDIA ones


def test_ondemand_wrong_location_or_drift_is_a_format_error() -> None:
    with pytest.raises(SourceFormatError, match="no regions"):
        parse_ondemand(load("ondemand-us-east-1.json"), "EU (Frankfurt)", KNOWN)
    drifted = load("ondemand-us-east-1.json")
    for row in drifted["regions"][US_EAST].values():
        row["PricePerUnit"] = row.pop("price")
    with pytest.raises(SourceFormatError, match="'price'"):
        parse_ondemand(drifted, US_EAST, KNOWN)


def test_spot_feed_jsonp_na_and_gpu_groups() -> None:
    spot = {(r, s): p for r, s, p in parse_spot((FOLDER / "spot.json").read_bytes(), KNOWN)}
    assert ("us-east-1", "c6a.12xlarge") not in spot
    assert ("ap-northeast-1", "p5en.48xlarge") not in spot  # N/A*
    assert spot[("us-east-1", "p5.48xlarge")] == pytest.approx(55.04 * 0.48, abs=1e-4)


def test_spot_feed_legacy_region_names_map_to_codes() -> None:
    feed = {
        "config": {
            "regions": [
                {
                    "region": "us-east",
                    "instanceTypes": [
                        {
                            "type": "gpuCurrentGen",
                            "sizes": [
                                {
                                    "size": "p3.2xlarge",
                                    "valueColumns": [{"name": "linux", "prices": {"USD": "0.918"}}],
                                }
                            ],
                        }
                    ],
                }
            ]
        }
    }
    assert parse_spot(json.dumps(feed).encode(), KNOWN) == [("us-east-1", "p3.2xlarge", 0.918)]


@pytest.mark.parametrize("content", [b'callback({"vers": 0.01});', b"<html>Forbidden</html>"])
def test_spot_feed_drift_is_a_format_error(content: bytes) -> None:
    with pytest.raises(SourceFormatError):
        parse_spot(content, KNOWN)


def test_advisor_buckets_become_rates() -> None:
    rates = parse_advisor(load("spot-advisor-data.json"))
    buckets = load("spot-advisor-data.json")["spot_advisor"]["us-east-1"]["Linux"]
    expected = {0: 0.025, 1: 0.08, 2: 0.135, 3: 0.19, 4: 0.3}
    assert rates["us-east-1"] == {k: expected[v["r"]] for k, v in buckets.items()}


def fetch(db: Path, server: Any) -> Any:
    local = local_settings(db, server)
    [summary] = run_cycle(local, configured_store(local), ["aws"], False, lambda *_: None)
    return summary


def offers(db: Path, sql: str) -> list[tuple[Any, ...]]:
    return query(db, sql)


def test_full_fetch_through_a_local_server(db_path: Path) -> None:
    with serving("aws") as server:
        summary = fetch(db_path, server)
    assert summary.status is RunStatus.OK and summary.requests == 27  # 25 regions + spot + advisor
    assert summary.unmapped == 0  # g4ad (AMD V520) is in the catalog too
    [(p5_spot, rate, model)] = offers(
        db_path,
        """
        SELECT price_gpu_hour_usd, interruption_rate, gpu_model FROM offers
        WHERE region = 'us-east-1' AND instance_type = 'p5.48xlarge' AND pricing = 'spot'""",
    )
    assert model == "H100-SXM-80GB" and p5_spot == pytest.approx(55.04 * 0.48 / 8, abs=1e-3)
    assert rate in {0.025, 0.08, 0.135, 0.19, 0.3}
    [(frac,)] = offers(
        db_path,
        "SELECT price_gpu_hour_usd FROM offers "
        "WHERE instance_type = 'g6f.large' AND region = 'us-east-1'",
    )
    assert frac == pytest.approx(0.2015 * 8)


def test_one_failing_region_is_partial_and_keeps_its_offers(db_path: Path) -> None:
    with serving("aws") as server:
        fetch(db_path, server)
        before = offers(db_path, "SELECT count(*) FROM offers WHERE region = 'eu-central-1'")
        server.faults.append(lambda path, q: (503, {}, b"") if "Frankfurt" in path else None)
        summary = fetch(db_path, server)
    assert summary.status is RunStatus.PARTIAL and "HTTP 503" in (summary.error or "")
    assert summary.offers_closed == 0
    assert offers(db_path, "SELECT count(*) FROM offers WHERE region = 'eu-central-1'") == before


def test_spot_feed_down_keeps_spot_offers_and_updates_on_demand(db_path: Path) -> None:
    with serving("aws") as server:
        fetch(db_path, server)
        spot_before = offers(db_path, "SELECT count(*) FROM offers WHERE pricing = 'spot'")
        server.faults.append(lambda path, q: (500, {}, b"") if path == "/spot.json" else None)
        summary = fetch(db_path, server)
    assert summary.status is RunStatus.PARTIAL and "spot feed" in (summary.error or "")
    assert offers(db_path, "SELECT count(*) FROM offers WHERE pricing = 'spot'") == spot_before


def _us_east_rows(document: Any) -> dict[str, Any]:
    """The us-east-1 rows without the recorded p5.48xlarge capacity-block row."""
    rows: dict[str, Any] = document["regions"][US_EAST]
    rows.pop("p5 48xlarge US East N. Virginia Linux CapacityBlock")
    return rows


def test_a_type_with_several_rows_and_no_on_demand_key_fails_the_region() -> None:
    document = load("ondemand-us-east-1.json")
    rows = _us_east_rows(document)
    row = rows.pop("p5 48xlarge US East N. Virginia Linux")
    rows["p5 48xlarge US East N. Virginia Linux Capacity Block A"] = dict(row, price="31.4640")
    rows["p5 48xlarge US East N. Virginia Linux Capacity Block B"] = row
    with pytest.raises(SourceFormatError, match="none is the on-demand one"):
        parse_ondemand(document, US_EAST, KNOWN)


def test_a_single_row_under_another_key_is_still_the_types_price() -> None:
    document = load("ondemand-us-east-1.json")
    rows = _us_east_rows(document)
    rows["p5.48xlarge in US East (N. Virginia)"] = rows.pop("p5 48xlarge US East N. Virginia Linux")
    found = {r["Instance Type"]: r for r in parse_ondemand(document, US_EAST, KNOWN)}
    assert found["p5.48xlarge"]["price"] == "55.0400000000"


@pytest.mark.parametrize(
    ("field", "value"), [("Pre Installed S/W", "SQL Std"), ("Operating System", "RHEL")]
)
def test_a_row_with_a_licence_on_top_is_not_the_instances_price(field: str, value: str) -> None:
    document = load("ondemand-us-east-1.json")
    rows = _us_east_rows(document)
    plain = rows["p5 48xlarge US East N. Virginia Linux"]
    rows["p5 48xlarge US East N. Virginia Linux"] = dict(plain, **{field: value}, price="99.0")
    rows["p5 48xlarge US East N. Virginia Linux plain"] = plain
    found = {r["Instance Type"]: r for r in parse_ondemand(document, US_EAST, KNOWN)}
    assert found["p5.48xlarge"]["price"] == "55.0400000000"


def test_on_demand_prices_in_another_currency_fail() -> None:
    document = load("ondemand-us-east-1.json")
    document["manifest"]["currencyCode"] = "CNY"
    with pytest.raises(SourceFormatError, match="CNY"):
        parse_ondemand(document, US_EAST, KNOWN)


def test_a_spot_feed_priced_per_another_period_fails() -> None:
    content = (FOLDER / "spot.json").read_bytes().replace(b'"rate": "perhr"', b'"rate": "perday"')
    with pytest.raises(SourceFormatError, match="perday"):
        parse_spot(content, KNOWN)
