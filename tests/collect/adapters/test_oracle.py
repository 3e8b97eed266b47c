from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from priceadvisor.collect.adapters.base import SourceFormatError
from priceadvisor.collect.adapters.oracle import items, parse_item
from priceadvisor.collect.fetch import run_cycle
from priceadvisor.manifest import manifest
from priceadvisor.records import RunStatus
from priceadvisor.resources import recordings_dir
from priceadvisor.service.stores import configured_store
from tests.localserver import local_settings, serving

DOCUMENT = json.loads((recordings_dir() / "oracle" / "products.json").read_text())
PARTS = manifest("oracle").source["parts"]


def quotes(document: Any = DOCUMENT) -> dict[str, Any]:
    out = {}
    for item in items(document):
        for q in parse_item(item, PARTS, "u"):
            out[f"{q.instance_type}/{q.pricing}"] = q
    return out


def test_pinned_parts_become_shapes_with_per_gpu_prices() -> None:
    parsed = quotes()
    h100 = parsed["BM.GPU.H100.8/on_demand"]
    assert h100.price == 10 and h100.price_basis == "gpu" and h100.gpu_count is None
    assert h100.gpu_name_raw == "Oracle Cloud Infrastructure - Compute - GPU - H100"
    spot = parsed["BM.GPU.H100.8/spot"]
    assert spot.price == 5.0 and "50 %" in (spot.price_rule or "")  # derived, and says so
    assert h100.price_rule is None  # published
    assert parsed["VM.GPU.A10.1/on_demand"].price == 2  # "Compute  - GPU - A10" (double space)


def test_lookalikes_are_not_offers() -> None:
    names = {q.gpu_name_raw for q in quotes().values()}
    assert not any("AI Enterprise" in n or "Cloud@Customer" in n or "VMware" in n for n in names)
    assert not any("Resource Possession" in n or "OCPU" in n for n in names)


def test_unpinned_gpu_part_is_kept_by_name() -> None:
    v100 = quotes()["B88514/on_demand"]
    assert v100.gpu_name_raw == "Compute - GPU Standard - V100" and v100.gpu_count == 1.0


@pytest.mark.parametrize("document", [{"lastUpdated": "x"}, [], {"items": "none"}])
def test_missing_items_is_a_format_error(document: Any) -> None:
    with pytest.raises(SourceFormatError, match="items"):
        quotes(document)


def test_renamed_field_is_a_format_error() -> None:
    broken = json.loads(json.dumps(DOCUMENT))
    broken["items"][3]["partNo"] = broken["items"][3].pop("partNumber")
    with pytest.raises(SourceFormatError, match="partNumber"):
        quotes(broken)


def test_fetch_maps_every_shape_and_marks_derived_spot(db_path: Path) -> None:
    with serving("oracle") as server:
        settings = local_settings(db_path, server)
        [summary] = run_cycle(
            settings, configured_store(settings), ["oracle"], False, lambda *_: None
        )
    assert summary.status is RunStatus.OK
    assert summary.offers_seen == 32 and summary.unmapped == 0  # 16 GPU parts
    assert server.requests[0].endswith("currencyCode=USD")
    con = duckdb.connect(str(db_path), read_only=True)
    rows = con.execute(
        "SELECT instance_type, gpu_model, gpu_count, price_hour_usd, price_gpu_hour_usd "
        "FROM offers WHERE pricing = 'on_demand' ORDER BY 1"
    ).fetchall()
    origins = con.execute(
        "SELECT pricing, price_origin, count(*) FROM offers GROUP BY ALL ORDER BY 1"
    ).fetchall()
    con.close()
    by_shape = {r[0]: r[1:] for r in rows}
    assert origins == [("on_demand", "published", 16), ("spot", "derived", 16)]
    assert by_shape["BM.GPU.H100.8"] == ("H100-SXM-80GB", 8, 80.0, 10.0)
    assert by_shape["B88514"][0] == "V100-SXM-16GB"
    assert by_shape["BM.GPU.H100T.8"][0] == "H100-SXM-80GB"
    generations = {shape: by_shape[shape][:2] for shape in ("BM.GPU2.2", "BM.GPU3.8", "BM.GPU4.8")}
    assert generations == {
        "BM.GPU2.2": ("P100-16GB", 2),
        "BM.GPU3.8": ("V100-SXM-16GB", 8),
        "BM.GPU4.8": ("A100-SXM-40GB", 8),
    }


def _item(part: str) -> dict[str, Any]:
    found = next(i for i in DOCUMENT["items"] if i["partNumber"] == part)
    return dict(json.loads(json.dumps(found)))


@pytest.mark.parametrize("metric", ["Node Per Hour", "GPU Per Month"])
def test_a_pinned_part_priced_per_another_unit_fails(metric: str) -> None:
    with pytest.raises(SourceFormatError, match="not 'GPU Per Hour'"):
        parse_item(_item("B98415") | {"metricName": metric}, PARTS, "u")


def test_a_price_stated_as_a_decimal_string_is_read() -> None:
    item = _item("B98415")
    item["currencyCodeLocalizations"][0]["prices"][0]["value"] = "10.00"
    on_demand = parse_item(item, PARTS, "u")[0]
    assert (on_demand.pricing, on_demand.price) == ("on_demand", 10.0)


def test_an_item_that_is_not_an_object_fails() -> None:
    with pytest.raises(SourceFormatError, match="not a JSON object"):
        items({"items": [*DOCUMENT["items"], "B98415"]})
