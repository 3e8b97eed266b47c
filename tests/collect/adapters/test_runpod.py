from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from priceadvisor.collect.adapters.base import SourceFormatError
from priceadvisor.collect.adapters.runpod import parse_data_centers, parse_gpu_types
from priceadvisor.collect.fetch import run_cycle
from priceadvisor.models import RunStatus
from priceadvisor.resources import recordings_dir
from tests.localserver import local_settings, serving

FOLDER = recordings_dir() / "runpod"


def load(name: str) -> Any:
    return json.loads((FOLDER / name).read_text())


def test_listed_data_centres_only() -> None:
    centres = parse_data_centers(load("datacenters.json"))
    assert centres == ["US-TX-3", "EU-RO-1", "EU-SE-1", "CA-MTL-1"]  # US-KS-1 is unlisted


def test_prices_are_per_gpu_with_bid_as_spot() -> None:
    document = load("gputypes-US-TX-3.json")
    quotes = parse_gpu_types(document, "US-TX-3", "u")
    h100 = next(g for g in document["data"]["gpuTypes"] if g["id"] == "NVIDIA H100 80GB HBM3")
    by_pricing = {q.pricing: q for q in quotes if q.instance_type == h100["id"]}
    if h100["lowestPrice"] is None:
        assert by_pricing == {}
    else:
        assert by_pricing["on_demand"].price == h100["lowestPrice"]["uninterruptablePrice"]
        assert by_pricing["spot"].price == h100["lowestPrice"]["minimumBidPrice"]
        assert by_pricing["spot"].price < by_pricing["on_demand"].price
    assert all(q.price_basis == "gpu" and q.gpu_count == 1.0 for q in quotes)


def test_not_offered_and_zero_prices_are_skipped_and_stock_is_availability() -> None:
    doc = {
        "data": {
            "gpuTypes": [
                {"id": "NVIDIA L40S", "memoryInGb": 48, "lowestPrice": None},
                {
                    "id": "NVIDIA L4",
                    "memoryInGb": 24,
                    "lowestPrice": {
                        "uninterruptablePrice": 0.44,
                        "minimumBidPrice": 0,
                        "stockStatus": None,
                    },
                },
            ]
        }
    }
    [quote] = parse_gpu_types(doc, "EU-RO-1", "u")
    assert (quote.instance_type, quote.pricing, quote.available) == (
        "NVIDIA L4",
        "on_demand",
        False,
    )


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"errors": [{"message": 'Cannot query field "gpuTypes"'}]}, "GraphQL error"),
        ({"data": {"gpuTypez": []}}, "no data.gpuTypes"),
        ({"data": {"gpuTypes": [{"displayName": "H100"}]}}, "has no id"),
        ([], "not an object"),
    ],
)
def test_schema_drift_is_a_format_error(document: Any, message: str) -> None:
    with pytest.raises(SourceFormatError, match=message):
        parse_gpu_types(document, "US-TX-3", "u")


def test_fetch_every_location_through_a_local_server(db_path: Path) -> None:
    with serving("runpod") as server:
        [summary] = run_cycle(local_settings(db_path, server), ["runpod"], False, lambda *_: None)
    assert summary.status is RunStatus.OK and summary.requests == 6
    con = duckdb.connect(str(db_path), read_only=True)
    regions = {r[0] for r in con.execute("SELECT DISTINCT region FROM offers").fetchall()}
    unmapped = con.execute("SELECT DISTINCT gpu_name_raw FROM offers WHERE gpu_model IS NULL")
    names = {r[0] for r in unmapped.fetchall()}
    eu = con.execute("SELECT DISTINCT region FROM offers WHERE is_eu").fetchall()
    con.close()
    assert regions == {"US-TX-3", "EU-RO-1", "EU-SE-1", "CA-MTL-1", "community"}
    assert names <= {"NVIDIA GeForce RTX 3070"}
    assert {r[0] for r in eu} == {"EU-RO-1", "EU-SE-1"}


def test_one_failing_data_centre_makes_a_partial_run(db_path: Path) -> None:
    with serving("runpod") as server:
        settings = local_settings(db_path, server)
        run_cycle(settings, ["runpod"], False, lambda *_: None)
        server.post_faults.append(
            lambda body: (502, {}, b"bad gateway") if b"EU-SE-1" in body else None
        )
        [summary] = run_cycle(settings, ["runpod"], False, lambda *_: None)
    assert summary.status is RunStatus.PARTIAL and "EU-SE-1" in (summary.error or "")
    assert summary.offers_closed == 0
    con = duckdb.connect(str(db_path), read_only=True)
    se = con.execute("SELECT count(*) FROM offers WHERE region = 'EU-SE-1'").fetchone()
    con.close()
    assert se is not None and se[0] > 0  # the failed data centre keeps its offers
