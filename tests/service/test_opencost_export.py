"""The OpenCost export (`export-opencost` and the daemon's /opencost/ endpoints) against
OpenCost's documented formats, over a database built from the recorded responses.

The schemas below are written from OpenCost's own documentation and code:
- custom pricing JSON: the `default.json` shown at https://www.opencost.io/docs/configuration/on-prem
  ("provider", "description", "CPU", "spotCPU", "RAM", "spotRAM", "GPU", "storage",
  "zoneNetworkEgress", "regionNetworkEgress", "internetNetworkEgress", every value a string)
  plus "spotGPU" from OpenCost's DefaultPricing (pkg/cloud/provider/providerconfig.go, "per GPU
  hour"), whose Go struct (models.CustomPricing) holds every field as a string;
- CSV provider: the header and columns of pkg/cloud/provider/csvprovider.go (`price` struct)
  and its examples configs/pricing_schema*.csv: eight columns, AssetClass node / pv / gpu,
  EndTimestamp like "2019-04-17 23:34:22 UTC", MarketPriceHourly a decimal.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from priceadvisor.collect.fetch import run_cycle
from priceadvisor.config import load_settings
from priceadvisor.records import RunStatus
from priceadvisor.service import web
from priceadvisor.service.opencost import OpenCostRoutes
from priceadvisor.service.stores import configured_store
from priceadvisor.store import connections as store
from priceadvisor.store.handle import Store
from priceadvisor.store.opencost import ExportError, GpuRate, custom_pricing
from tests.conftest import cli

CUSTOM_PRICING_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["provider", "description", "CPU", "RAM", "GPU", "storage"],
    "properties": {
        name: {"type": "string", "decimal": name not in ("provider", "description")}
        for name in (
            "provider",
            "description",
            "CPU",
            "spotCPU",
            "RAM",
            "spotRAM",
            "GPU",
            "spotGPU",
            "storage",
            "zoneNetworkEgress",
            "regionNetworkEgress",
            "internetNetworkEgress",
        )
    },
    "additionalProperties": False,
}
CSV_COLUMNS = [
    "EndTimestamp",
    "InstanceID",
    "Region",
    "AssetClass",
    "InstanceIDField",
    "InstanceType",
    "MarketPriceHourly",
    "Version",
]
# Go's strconv.ParseFloat accepts more, but OpenCost's own files use plain decimals.
DECIMAL = re.compile(r"^[0-9]+(\.[0-9]+)?$")
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$")


def check_custom_pricing(document: Any) -> None:
    """Fail on anything the documented default.json would not have."""
    schema = CUSTOM_PRICING_SCHEMA
    assert isinstance(document, dict)
    assert set(schema["required"]) <= set(document), set(schema["required"]) - set(document)
    assert set(document) <= set(schema["properties"]), set(document) - set(schema["properties"])
    for name, value in document.items():
        assert isinstance(value, str), f"{name} must be a string, is {value!r}"
        if schema["properties"][name]["decimal"]:
            assert DECIMAL.match(value), f"{name} is not a plain decimal: {value!r}"


def check_csv(text: str) -> list[dict[str, str]]:
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == CSV_COLUMNS
    assert all(len(row) == len(CSV_COLUMNS) for row in rows[1:])
    records = [dict(zip(CSV_COLUMNS, row, strict=True)) for row in rows[1:]]
    for record in records:
        assert TIMESTAMP.match(record["EndTimestamp"])
        assert record["AssetClass"] in ("node", "pv", "gpu")
        assert DECIMAL.match(record["MarketPriceHourly"])
        assert record["InstanceIDField"].startswith(("metadata.labels.", "spec.providerID"))
    return records


@pytest.fixture(scope="module")
def priced(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db_path = tmp_path_factory.mktemp("opencost") / "prices.duckdb"
    settings = load_settings(db=db_path)
    runs = run_cycle(settings, configured_store(settings), ["aws", "azure"], True, lambda *_: None)
    assert all(r.status is RunStatus.OK for r in runs)
    return db_path


def one(db_path: Path, sql: str) -> Any:
    with store.reader(db_path) as con:
        row = con.execute(sql).fetchone()
    assert row is not None
    return row[0]


CHEAPEST = (
    "SELECT min(price_gpu_hour_usd) FROM offers WHERE gpu_model = 'H100-SXM-80GB' "
    "AND provider = 'aws' AND price_origin = 'published' AND pricing = '{}'"
)


def test_cli_json_is_opencost_custom_pricing_with_the_cheapest_gpu_hour(
    capsys: pytest.CaptureFixture[str], priced: Path
) -> None:
    code, out, err = cli(
        capsys, "--db", str(priced), "export-opencost", "--gpu", "H100-SXM-80GB", "-p", "aws"
    )
    assert code == 0, err
    document = json.loads(out)
    check_custom_pricing(document)
    assert float(document["GPU"]) == pytest.approx(one(priced, CHEAPEST.format("on_demand")))
    assert float(document["spotGPU"]) == pytest.approx(one(priced, CHEAPEST.format("spot")))
    assert document["provider"] == "custom"


def test_cli_json_keeps_the_operators_base_prices(
    capsys: pytest.CaptureFixture[str], priced: Path, tmp_path: Path
) -> None:
    base = tmp_path / "default.json"
    base.write_text(json.dumps({"CPU": "0.04", "RAM": "0.005", "storage": "0.0001", "GPU": "9"}))
    args = ("--db", str(priced), "export-opencost", "--gpu", "H100-SXM-80GB", "-p", "aws")
    code, out, err = cli(capsys, *args, "--base", str(base))
    assert code == 0, err
    document = json.loads(out)
    check_custom_pricing(document)
    assert (document["CPU"], document["RAM"]) == ("0.04", "0.005")
    assert float(document["GPU"]) == pytest.approx(one(priced, CHEAPEST.format("on_demand")))


def test_cli_csv_is_opencost_csv_provider_node_rows(
    capsys: pytest.CaptureFixture[str], priced: Path
) -> None:
    args = ("--db", str(priced), "export-opencost", "--gpu", "H100-SXM-80GB", "-p", "azure")
    code, out, err = cli(capsys, *args, "--format", "csv")
    assert code == 0, err
    records = check_csv(out)
    with store.reader(priced) as con:
        expected = con.execute(
            "SELECT region, instance_type, min(price_hour_usd) FROM offers WHERE gpu_model = "
            "'H100-SXM-80GB' AND provider = 'azure' AND pricing = 'on_demand' "
            "AND price_origin = 'published' GROUP BY ALL ORDER BY ALL"
        ).fetchall()
    assert len(records) == len(expected) > 0
    for record, (region, instance_type, usd) in zip(records, expected, strict=True):
        assert (record["Region"], record["InstanceType"]) == (region, instance_type)
        assert record["AssetClass"] == "node"
        assert float(record["MarketPriceHourly"]) == pytest.approx(usd, abs=1e-6)


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (("--gpu", "H100"), 1, "one GPU price"),  # a family of several models
        (("--gpu", "NOPE"), 2, "unknown GPU"),
        (("--gpu", "H100-SXM-80GB", "-f", "xml"), 2, "json or csv"),
        (("--gpu", "H100-SXM-80GB", "--pricing", "market"), 2, "rentable"),
        (("--gpu", "H100-SXM-80GB", "--pricing", "spot"), 2, "--format csv"),
        (("--gpu", "H100-SXM-80GB", "--region", "nowhere"), 1, "no published offer"),
    ],
)
def test_cli_refuses_what_opencost_cannot_use(
    capsys: pytest.CaptureFixture[str], priced: Path, args: tuple[str, ...], code: int, message: str
) -> None:
    got, out, err = cli(capsys, "--db", str(priced), "export-opencost", *args)
    assert got == code and out == "" and message in err and len(err.strip().splitlines()) == 1


async def _get(priced: Path, path: str) -> httpx.Response:
    app = web.build_app(OpenCostRoutes(Store(priced)).routes())
    server = await web.serve("127.0.0.1", 0, app)
    try:
        async with httpx.AsyncClient(timeout=30) as client:
            return await client.get(f"http://127.0.0.1:{server.port}{path}")
    finally:
        server.close()
        await asyncio.wait_for(server.wait_closed(), 30)


@pytest.mark.anyio
async def test_daemon_serves_the_same_exports(
    capsys: pytest.CaptureFixture[str], priced: Path
) -> None:
    response = await _get(priced, "/opencost/pricing.json?gpu=h100-sxm-80gb&provider=aws")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    check_custom_pricing(response.json())
    _, out, _ = cli(
        capsys, "--db", str(priced), "export-opencost", "--gpu", "H100-SXM-80GB", "-p", "aws"
    )
    assert response.json() == json.loads(out)
    response = await _get(priced, "/opencost/pricing.csv?gpu=H100&provider=azure&pricing=spot")
    assert response.status_code == 200
    assert all(r["AssetClass"] == "node" for r in check_csv(response.text))


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("query", "status"),
    [
        ("gpu=NOPE", 400),
        ("gpu=H100-SXM-80GB&pricing=market", 400),
        ("gpu=H100-SXM-80GB&pricing=spot", 400),
        ("gpu=H100", 404),  # several models for one GPU price
        ("gpu=H100-SXM-80GB&provider=nobody", 404),
    ],
)
async def test_daemon_answers_bad_filters_with_an_error(
    priced: Path, query: str, status: int
) -> None:
    response = await _get(priced, f"/opencost/pricing.json?{query}")
    assert response.status_code == status and response.json()["error"]


def test_custom_pricing_needs_an_on_demand_gpu_price_or_the_operators_own() -> None:
    spot_only = [GpuRate("H100-SXM-80GB", "spot", 2.5, 3)]
    with pytest.raises(ExportError, match="on-demand"):
        custom_pricing(spot_only)
    document = custom_pricing(
        spot_only, {"GPU": "4.1", "CPU": "0.03", "RAM": "0.004", "storage": "0"}
    )
    check_custom_pricing(document)
    assert (document["GPU"], document["spotGPU"]) == ("4.1", "2.5")
