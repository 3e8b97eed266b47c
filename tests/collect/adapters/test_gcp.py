from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import duckdb
import pytest

from priceadvisor.collect.adapters.base import SourceFormatError
from priceadvisor.collect.adapters.gcp import Prices, assemble, collect, parse_result_page
from priceadvisor.collect.fetch import plan, run_cycle
from priceadvisor.config import load_settings
from priceadvisor.manifest import manifest
from priceadvisor.records import RunStatus
from priceadvisor.resources import recordings_dir
from priceadvisor.service.stores import configured_store
from tests.localserver import local_settings, serving

FOLDER = recordings_dir() / "gcp"
MACHINES = manifest("gcp").source["machines"]


def prices() -> Prices:
    out: Prices = defaultdict(dict)
    for name in ("skus-page1.json", "skus-page2.json"):
        skus, _ = parse_result_page(json.loads((FOLDER / name).read_text()))
        for sku in skus:
            collect(sku, out)
    return out


def quotes() -> dict[tuple[str, str, str], float | None]:
    return {
        (q.region, q.instance_type, q.pricing): q.price for q in assemble(MACHINES, prices(), "u")
    }


def test_machine_price_is_core_plus_ram_plus_gpus() -> None:
    # 12 vCPU x 0.031611 + 85 GiB x 0.004237 + 1 x 2.933908 (A2, us-central1, on-demand)
    assert quotes()[("us-central1", "a2-highgpu-1g", "on_demand")] == pytest.approx(
        12 * 0.031611 + 85 * 0.004237 + 2.933908, abs=1e-6
    )


def test_spot_comes_from_preemptible_skus() -> None:
    q = quotes()
    assert (
        q[("us-central1", "g2-standard-4", "spot")]
        < q[("us-central1", "g2-standard-4", "on_demand")]
    )


def test_lookalikes_are_skipped_and_b200_slices_include_the_host() -> None:
    q = quotes()
    assert q[("us-central1", "a4-highgpu-8g", "on_demand")] == pytest.approx(8 * 12.15)  # not DWS
    assert q[("us-central1", "a3-highgpu-8g", "on_demand")] != pytest.approx(
        8 * 10.8
    )  # sole tenancy


@pytest.mark.parametrize(
    ("machine", "vcpus", "ram", "gpus", "gpu_price"),
    [
        ("n1-standard-4+t4x1", 4, 15, 1, 0.35),
        ("n1-standard-32+v100x4", 32, 120, 4, 2.48),
        ("n1-standard-16+p100x2", 16, 60, 2, 1.46),
        ("n1-standard-8+p4x2", 8, 30, 2, 0.60),
    ],
)
def test_n1_with_attached_gpus_is_n1_core_plus_ram_plus_gpus(
    machine: str, vcpus: int, ram: int, gpus: int, gpu_price: float
) -> None:
    # us-central1 on-demand: N1 Predefined core 0.031611/vCPU-h, RAM 0.004237/GiB-h
    expected = vcpus * 0.031611 + ram * 0.004237 + gpus * gpu_price
    q = quotes()
    assert q[("us-central1", machine, "on_demand")] == pytest.approx(expected, abs=1e-6)
    assert q[("us-central1", machine, "spot")] < q[("us-central1", machine, "on_demand")]


def test_n1_gpus_only_in_the_regions_their_sku_lists() -> None:
    regions = {(r, p) for (r, m, p) in quotes() if m == "n1-standard-8+v100x1"}
    assert regions == {
        (region, pricing)
        for region in ("us-central1", "us-west1", "europe-west4")
        for pricing in ("on_demand", "spot")
    }


def test_machines_only_where_every_part_is_priced() -> None:
    regions = {r for (r, m, _) in quotes() if m == "a3-highgpu-8g"}
    assert "asia-southeast1" not in regions and "us-central1" in regions


@pytest.mark.parametrize(
    ("document", "message"),
    [({"error": {"code": 400, "message": "API key not valid"}}, "no 'skus'"), ([], "no 'skus'")],
)
def test_page_drift_is_a_format_error(document: Any, message: str) -> None:
    with pytest.raises(SourceFormatError, match=message):
        parse_result_page(document)


def test_sku_without_pricing_is_a_format_error() -> None:
    with pytest.raises(SourceFormatError, match="lacks"):
        collect(
            {
                "skuId": "X",
                "description": "Nvidia L4 GPU running in EMEA",
                "category": {"usageType": "OnDemand"},
                "pricingInfo": [],
            },
            defaultdict(dict),
        )


def test_without_a_key_the_provider_is_skipped_not_failed(tmp_path: Path) -> None:
    settings = load_settings(db=tmp_path / "x.duckdb")
    assert (
        plan(settings, "gcp", offline_mode=False).skip_reason == "not configured: set GCP_API_KEY"
    )
    [summary] = run_cycle(settings, configured_store(settings), ["gcp"], False, lambda *_: None)
    assert summary.status is RunStatus.SKIPPED and summary.requests == 0


def test_fetch_with_key_pages_and_keeps_the_key_out_of_errors(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GCP_API_KEY", "AIza-SECRET-KEY")
    with serving("gcp") as server:
        settings = local_settings(db_path, server)
        [summary] = run_cycle(settings, configured_store(settings), ["gcp"], False, lambda *_: None)
        server.faults.append(
            lambda path, q: (
                (403, {}, b"key AIza-SECRET-KEY invalid") if q.get("pageToken") else None
            )
        )
        [failed] = run_cycle(settings, configured_store(settings), ["gcp"], False, lambda *_: None)
    assert summary.status is RunStatus.OK and summary.requests == 2 and summary.unmapped == 0
    assert all("key=AIza-SECRET-KEY" in r for r in server.requests)
    assert failed.status is RunStatus.FAILED and "SECRET" not in (failed.error or "")
    con = duckdb.connect(str(db_path), read_only=True)
    [(model, count)] = con.execute(
        "SELECT gpu_model, gpu_count FROM offers WHERE instance_type = 'a3-megagpu-8g' LIMIT 1"
    ).fetchall()
    n1 = dict(
        con.execute(
            "SELECT DISTINCT instance_type, gpu_model FROM offers WHERE instance_type LIKE 'n1-%'"
        ).fetchall()
    )
    con.close()
    assert (model, count) == ("H100-SXM-80GB", 8)
    assert {n1[m] for m in n1} == {"T4-16GB", "P4-8GB", "V100-SXM-16GB", "P100-16GB"}
    assert b"SECRET" not in db_path.read_bytes()


def recorded_sku(description: str) -> dict[str, Any]:
    for name in ("skus-page1.json", "skus-page2.json"):
        skus, _ = parse_result_page(json.loads((FOLDER / name).read_text()))
        found = [s for s in skus if s["description"] == description]
        if found:
            return json.loads(json.dumps(found[0]))
    raise AssertionError(f"no recorded SKU {description!r}")


def _expression(sku: dict[str, Any]) -> dict[str, Any]:
    expression: dict[str, Any] = sku["pricingInfo"][0]["pricingExpression"]
    return expression


@pytest.mark.parametrize("currency", ["EUR", "JPY"])
def test_a_part_priced_in_another_currency_fails_the_run(currency: str) -> None:
    sku = recorded_sku("Nvidia Tesla A100 GPU running in Americas")
    _expression(sku)["tieredRates"][0]["unitPrice"]["currencyCode"] = currency
    with pytest.raises(SourceFormatError, match=currency):
        collect(sku, defaultdict(dict))


@pytest.mark.parametrize(
    ("description", "unit"),
    [
        ("Nvidia Tesla A100 GPU running in Americas", "mo"),
        ("A2 Instance Ram running in Americas", "h"),
    ],
)
def test_a_part_priced_per_another_unit_fails_the_run(description: str, unit: str) -> None:
    sku = recorded_sku(description)
    _expression(sku)["usageUnit"] = unit
    with pytest.raises(SourceFormatError, match="not USD per"):
        collect(sku, defaultdict(dict))


def test_a_part_with_tiers_at_different_rates_fails_the_run() -> None:
    sku = recorded_sku("Nvidia Tesla A100 GPU running in Americas")
    tiers = _expression(sku)["tieredRates"]
    free = {"startUsageAmount": 0, "unitPrice": {"currencyCode": "USD", "units": "0", "nanos": 0}}
    tiers[0]["startUsageAmount"] = 730
    tiers.insert(0, free)
    with pytest.raises(SourceFormatError, match="2 tiers"):
        collect(sku, defaultdict(dict))


def test_a_sku_that_is_not_an_object_fails_the_page() -> None:
    page = json.loads((FOLDER / "skus-page1.json").read_text())
    page["skus"].append("Nvidia Tesla A100 GPU running in Americas")
    with pytest.raises(SourceFormatError, match="not a JSON object"):
        parse_result_page(page)


def test_two_skus_pricing_one_part_differently_in_a_region_fail_the_run() -> None:
    out: Prices = defaultdict(dict)
    sku = recorded_sku("Nvidia Tesla A100 GPU running in Americas")
    collect(sku, out)
    collect(json.loads(json.dumps(sku)), out)  # the same price twice is no conflict
    other = json.loads(json.dumps(sku)) | {"skuId": "0000-0000-0000"}
    _expression(other)["tieredRates"][0]["unitPrice"]["nanos"] = 1
    with pytest.raises(SourceFormatError, match="0000-0000-0000"):
        collect(other, out)
