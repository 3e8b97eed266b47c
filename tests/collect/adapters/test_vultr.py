from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from priceadvisor.collect.adapters.base import SourceFormatError
from priceadvisor.collect.adapters.vultr import (
    gpu_share,
    parse_cloud_plan,
    parse_metal_plan,
    parse_result_page,
)
from priceadvisor.collect.fetch import run_cycle
from priceadvisor.manifest import manifest
from priceadvisor.records import RunStatus
from priceadvisor.resources import recordings_dir
from priceadvisor.service.stores import configured_store
from tests.conftest import query
from tests.localserver import Fault, fetch_locally, local_settings, serving

FOLDER = recordings_dir() / "vultr"
MEMORY = {k: float(v) for k, v in manifest("vultr").source["gpu_memory_gb"].items()}


def plans(name: str, key: str) -> dict[str, dict[str, Any]]:
    page, _ = parse_result_page(json.loads((FOLDER / name).read_text()), key)
    return {p["id"]: p for p in page}


def test_a_fractional_plan_is_an_offer_of_a_fraction_of_a_gpu() -> None:
    plan = plans("plans.json", "plans")["vcg-a100-1c-6g-4vram"]
    [newark, _] = parse_cloud_plan(plan, MEMORY, "u")
    assert (newark.gpu_count, newark.price, newark.price_basis) == (0.05, 0.123, "node")
    assert newark.gpu_memory_gb == 80  # the whole GPU's, so the catalog knows which A100
    assert gpu_share(40, 80.0) == 0.5 and gpu_share(96, 48.0) == 2.0
    assert gpu_share(4, None) is None and gpu_share("4", 80.0) is None


def test_bare_metal_reads_model_and_count_from_the_id_and_preemptible_is_spot() -> None:
    plan = plans("plans-metal.json", "plans_metal")["vbm-112c-2048gb-8-h100-gpu"]
    quotes = {(q.region, q.pricing): q for q in parse_metal_plan(plan, "u")}
    assert set(quotes) == {
        ("sea", "on_demand"),
        ("sea", "spot"),
        ("ord", "on_demand"),
        ("ord", "spot"),
    }
    assert quotes["sea", "on_demand"].price == 23.92 and quotes["sea", "spot"].price == 18.4
    assert (quotes["sea", "spot"].gpu_name_raw, quotes["sea", "spot"].gpu_count) == ("h100", 8.0)


def test_plans_without_a_gpu_are_not_offers() -> None:
    cloud = plans("plans.json", "plans")["vc2-1c-1gb"]
    metal = plans("plans-metal.json", "plans_metal")["vbm-4c-32gb"]
    assert parse_cloud_plan(cloud, MEMORY, "u") == [] and parse_metal_plan(metal, "u") == []


@pytest.mark.parametrize(
    "document", [{"plans_metal": []}, {"plans": [{"id": "x"}]}, {"plans": "none"}, []]
)
def test_unexpected_layout_is_a_format_error(document: Any) -> None:
    with pytest.raises(SourceFormatError):
        parse_result_page(document, "plans")


def test_end_to_end_prices_per_node_and_per_gpu(db_path: Path) -> None:
    summary = fetch_locally(db_path, "vultr")["vultr"]
    assert summary.status is RunStatus.OK and summary.offers_seen == 18
    assert summary.unmapped == 0
    rows = query(
        db_path,
        "SELECT instance_type, gpu_model, gpu_count, price_hour_usd, price_gpu_hour_usd, country "
        "FROM offers WHERE region = 'ewr' AND instance_type LIKE 'vcg-a100%' ORDER BY gpu_count",
    )
    assert rows == [
        ("vcg-a100-1c-6g-4vram", "A100-SXM-80GB", 0.05, 0.123, pytest.approx(2.46), "US"),
        ("vcg-a100-2c-15g-10vram", "A100-SXM-80GB", 0.125, 0.3, pytest.approx(2.4), "US"),
        ("vcg-a100-6c-60g-40vram", "A100-SXM-80GB", 0.5, 1.397, pytest.approx(2.794), "US"),
        ("vcg-a100-12c-120g-80vram", "A100-SXM-80GB", 1.0, 2.397, 2.397, "US"),
    ]
    [(per_gpu,)] = query(
        db_path,
        "SELECT price_gpu_hour_usd FROM offers WHERE instance_type LIKE 'vbm-256c%' "
        "AND pricing = 'spot'",
    )
    assert per_gpu == pytest.approx(14.72 / 8)


def test_a_next_cursor_is_followed(db_path: Path) -> None:
    first = json.loads((FOLDER / "plans.json").read_text())
    first["meta"]["links"]["next"] = "bmV4dF9fQU1T"
    second = {"plans": [], "meta": {"total": 8, "links": {"next": "", "prev": "x"}}}

    def paged(path: str, q: dict[str, str]) -> tuple[int, dict[str, str], bytes] | None:
        if path != "/v2/plans":
            return None
        body = second if q.get("cursor") == "bmV4dF9fQU1T" else first
        return 200, {"Content-Type": "application/json"}, json.dumps(body).encode()

    summaries = fetch_locally(db_path, "vultr", faults=[paged])
    assert summaries["vultr"].status is RunStatus.OK
    assert any("cursor=bmV4dF9fQU1T" in r for r in summaries["servers"]["vultr"].requests)


def test_a_gh200_plan_without_a_count_is_kept_with_its_gpu_and_no_guessed_count() -> None:
    plan = plans("plans-metal.json", "plans_metal")["vbm-112c-2048gb-8-h100-gpu"]
    gh200 = dict(plan, id="vbm-72c-480gb-gh200-gpu")  # a real Vultr plan id
    quotes = parse_metal_plan(gh200, "u")
    assert quotes and {(q.gpu_name_raw, q.gpu_count) for q in quotes} == {("gh200", None)}


def test_a_metal_plan_naming_a_gpu_the_reader_cannot_parse_fails() -> None:
    plan = plans("plans-metal.json", "plans_metal")["vbm-112c-2048gb-8-h100-gpu"]
    with pytest.raises(SourceFormatError, match="cannot read its GPUs"):
        parse_metal_plan(dict(plan, id="vbm-112c-2048gb-8-h100-sxm-gpu"), "u")


def test_a_plan_naming_its_gpu_is_read_whatever_its_type() -> None:
    plan = plans("plans.json", "plans")["vcg-a100-1c-6g-4vram"]
    assert parse_cloud_plan(dict(plan, type="vgpu"), MEMORY, "u")


# The live listing's availability and per-location fields (as public clients of the API read
# them): deploy_ondemand, deploy_preemptible, location_cost.
A100_CLOUD = "vcg-a100-12c-120g-80vram"
H100_METAL = "vbm-112c-2048gb-8-h100-gpu"


def test_a_plan_not_deployable_on_demand_is_flagged_not_offered() -> None:
    plan = plans("plans.json", "plans")[A100_CLOUD] | {"deploy_ondemand": False}
    quotes = parse_cloud_plan(plan, MEMORY, "u")
    assert quotes and all(q.not_offered_reason for q in quotes if q.pricing == "on_demand")
    kept = parse_cloud_plan(plan | {"deploy_ondemand": True}, MEMORY, "u")
    assert not any(q.not_offered_reason for q in kept)


def test_preemptible_prices_are_spot_offers_only_where_deployable() -> None:
    cloud = plans("plans.json", "plans")[A100_CLOUD] | {"hourly_cost_preemptible": 1.2}
    deployable = parse_cloud_plan(cloud | {"deploy_preemptible": True}, MEMORY, "u")
    assert {q.price for q in deployable if q.pricing == "spot"} == {1.2}
    assert not any(
        q.pricing == "spot"
        for q in parse_cloud_plan(cloud | {"deploy_preemptible": False}, MEMORY, "u")
    )
    metal = plans("plans-metal.json", "plans_metal")[H100_METAL] | {"deploy_preemptible": False}
    assert {q.pricing for q in parse_metal_plan(metal, "u")} == {"on_demand"}


def test_a_location_price_overrides_the_plans() -> None:
    plan = plans("plans-metal.json", "plans_metal")[H100_METAL]
    overridden = plan | {
        "location_cost": {"ord": {"hourly_cost": 25.5, "hourly_cost_preemptible": 19.0}}
    }
    found = {(q.region, q.pricing): q.price for q in parse_metal_plan(overridden, "u")}
    assert found["ord", "on_demand"] == 25.5 and found["ord", "spot"] == 19.0
    assert found["sea", "on_demand"] == 23.92 and found["sea", "spot"] == 18.4


def without_locations(name: str, key: str, emptied: set[str] | None = None) -> Fault:
    """A fault serving the recording `name` with the `locations` of the GPU plans in `emptied`
    (every plan naming a GPU when None) as the empty list."""
    document = json.loads((FOLDER / name).read_text())
    for plan in document[key]:
        gpu = plan.get("gpu_type") or "gpu" in plan["id"]
        if (emptied is None and gpu) or plan["id"] in (emptied or set()):
            plan["locations"] = []
    body = json.dumps(document).encode()

    def serve(path: str, q: dict[str, str]) -> tuple[int, dict[str, str], bytes] | None:
        wanted = "/v2/plans" if key == "plans" else "/v2/plans-metal"
        return (200, {"Content-Type": "application/json"}, body) if path == wanted else None

    return serve


def fetch_with_progress(db_path: Path, *faults: Fault) -> tuple[Any, list[str]]:
    messages: list[str] = []
    with serving("vultr") as server:
        server.faults.extend(faults)
        settings = local_settings(db_path, server)
        [summary] = run_cycle(
            settings,
            configured_store(settings),
            ["vultr"],
            False,
            lambda _, message: messages.append(message),
        )
    return summary, messages


def test_a_gpu_plan_listing_no_location_is_counted_as_left_out(db_path: Path) -> None:
    fault = without_locations("plans.json", "plans", {A100_CLOUD})
    summary, messages = fetch_with_progress(db_path, fault)
    assert summary.status is RunStatus.OK and summary.offers_seen == 18 - 2  # ewr and fra
    assert any("1 GPU plans listing no location" in m for m in messages), messages


def test_every_gpu_plan_listing_no_location_fails_the_run_saying_so(db_path: Path) -> None:
    cloud = without_locations("plans.json", "plans")
    metal = without_locations("plans-metal.json", "plans_metal")
    summary, _ = fetch_with_progress(db_path, cloud, metal)
    assert summary.status is RunStatus.FAILED and summary.offers_seen == 0
    assert summary.error is not None and "no location" in summary.error
