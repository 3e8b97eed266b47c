from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from priceadvisor.collect.adapters.base import SourceFormatError
from priceadvisor.collect.adapters.cudo import (
    Shape,
    node_price,
    offers,
    parse_machine_types,
    parse_offers,
)
from priceadvisor.manifest import manifest
from priceadvisor.records import RunStatus
from priceadvisor.resources import recordings_dir
from tests.conftest import query
from tests.localserver import fetch_locally

RECORDING = recordings_dir() / "cudo" / "machine-types.json"
SHAPE = Shape.from_manifest(manifest("cudo").source)


def entry(model: str) -> dict[str, Any]:
    entries = parse_machine_types(json.loads(RECORDING.read_text()))
    return next(e for e in entries if e["gpuModel"] == model)


def test_node_price_is_gpu_plus_vcpu_plus_memory_at_unit_prices_exactly() -> None:
    a5000 = entry("RTX A5000")
    [one, *_] = offers(a5000, SHAPE, "u")
    # 8 vCPUs; 32 GiB capped at 30 by the type's lowest 0.259109 vCPU per GiB
    assert (one.vcpus, one.ram_gb, one.gpu_count) == (8.0, 30.0, 1.0)
    expected = Decimal("0.52") + 8 * Decimal("0.0021") + 30 * Decimal("0.0034")
    assert one.price == float(expected) == 0.6388
    assert one.price_basis == "node"


def test_gpu_count_scales_the_whole_shape_and_never_the_per_gpu_price_alone() -> None:
    by_count = {q.gpu_count: q for q in offers(entry("RTX 3080"), SHAPE, "u")}
    assert set(by_count) == {1.0, 2.0, 4.0, 8.0}
    assert by_count[2.0].price == node_price(entry("RTX 3080"), 2, 16, 64)
    assert by_count[8.0].price == pytest.approx(8 * by_count[1.0].price)  # linear unit prices


def test_free_gpus_on_one_host_decide_availability() -> None:
    available = {q.gpu_count: q.available for q in offers(entry("RTX A5000"), SHAPE, "u")}
    assert available == {1.0: True, 2.0: True, 4.0: True, 8.0: False}  # maxGpuFree 4
    assert {q.stock for q in offers(entry("RTX A5000"), SHAPE, "u")} == {"4"}
    assert not any(q.available for q in offers(entry("NVIDIA V100"), SHAPE, "u"))


def test_machine_types_without_a_gpu_and_bad_unit_prices() -> None:
    assert offers(entry(""), SHAPE, "u") == []
    broken = entry("RTX A5000") | {"memoryGibPriceHr": {"value": "n/a"}}
    assert node_price(broken, 1, 8, 30) is None
    free_gpu = entry("RTX A5000") | {"gpuPriceHr": {"value": "0.000000"}}
    assert node_price(free_gpu, 1, 8, 30) is None  # not a VM priced at its CPU and RAM


@pytest.mark.parametrize(
    "document", [{"machine_types": []}, {"machineTypes": [{"dataCenterId": "x"}]}, []]
)
def test_unexpected_layout_is_a_format_error(document: Any) -> None:
    with pytest.raises(SourceFormatError):
        parse_machine_types(document)


def test_end_to_end_through_a_local_server(db_path: Path) -> None:
    summary = fetch_locally(db_path, "cudo")["cudo"]
    assert summary.status is RunStatus.OK and summary.offers_seen == 20
    assert summary.unmapped == 0
    [(per_gpu, country, eu)] = query(
        db_path,
        "SELECT price_gpu_hour_usd, country, is_eu FROM offers "
        "WHERE instance_type = 'epyc-rome-rtx-a5000 1xnvidia-rtx-a5000'",
    )
    assert (per_gpu, country, eu) == (pytest.approx(0.6388), "NO", False)


def test_a_shape_needing_more_memory_than_one_host_has_free_is_not_available() -> None:
    """RTX A6000: 8 GPUs free, but the 8-GPU shape's 247 GiB exceed maxMemoryGibFree (219)."""
    a6000 = {q.gpu_count: q for q in offers(entry("RTX A6000"), SHAPE, "u")}
    assert a6000[8.0].ram_gb == 247.0 and a6000[8.0].stock == "8"
    assert a6000[8.0].available is False
    assert a6000[4.0].available is True
    few_vcpus = entry("RTX A6000") | {"maxVcpuFree": 20}  # 4 GPUs want 32 vCPUs
    assert {q.gpu_count: q.available for q in offers(few_vcpus, SHAPE, "u")}[4.0] is False
    unknown = {k: v for k, v in entry("RTX A6000").items() if k != "maxGpuFree"}
    assert {q.available for q in offers(unknown, SHAPE, "u")} == {None}


def test_machine_types_without_a_gpu_are_counted() -> None:
    entries = parse_machine_types(json.loads(RECORDING.read_text()))
    parsed = parse_offers(entries, SHAPE, "u")
    assert parsed.skipped == {"machine types without a GPU": 1}
    assert len(parsed.quotes) == 4 * (len(entries) - 1)


def test_a_unit_price_without_its_value_wrapper_is_read() -> None:
    wrapped = entry("RTX A5000")
    bare = wrapped | {k: wrapped[k]["value"] for k in ("gpuPriceHr", "vcpuPriceHr")}
    bare["memoryGibPriceHr"] = 0.0034
    assert node_price(bare, 1, 8, 30) == node_price(wrapped, 1, 8, 30) == 0.6388


def test_quoted_free_counts_are_read_as_their_numbers() -> None:
    quoted = entry("RTX A5000") | {
        "maxGpuFree": "4",
        "maxVcpuFree": "76",
        "maxMemoryGibFree": "227",
    }
    available = {q.gpu_count: q.available for q in offers(quoted, SHAPE, "u")}
    assert available == {1.0: True, 2.0: True, 4.0: True, 8.0: False}
    sold_out = entry("RTX A5000") | {"maxGpuFree": "0"}
    assert {(q.available, q.stock) for q in offers(sold_out, SHAPE, "u")} == {(False, "0")}
    vague = entry("RTX A5000") | {"maxGpuFree": "plenty"}
    assert {(q.available, q.stock) for q in offers(vague, SHAPE, "u")} == {(None, None)}
