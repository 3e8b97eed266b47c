from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from priceadvisor.collect.adapters.base import SourceFormatError
from priceadvisor.collect.adapters.hyperbolic import (
    parse_option,
    parse_options,
    parse_rental_options,
)
from priceadvisor.records import RunStatus
from priceadvisor.resources import recordings_dir
from tests.conftest import query
from tests.localserver import fetch_locally

RECORDING = recordings_dir() / "hyperbolic" / "rental-options.json"


def options() -> list[dict[str, Any]]:
    return parse_options(json.loads(RECORDING.read_text()))


def quotes() -> dict[tuple[str, str], Any]:
    parsed = [parse_option(o, "u") for o in options() if o["enabled"]]
    return {(q.region, q.instance_type): q for q in parsed}


def test_cents_per_whole_option_become_an_exact_node_price() -> None:
    node = quotes()["uk-southeast-3", "h100-sxm5 x8 bare-metal infiniband"]
    assert (node.price, node.price_basis, node.gpu_count) == (25.52, "node", 8.0)
    single = quotes()["us-east-1", "h100-sxm5 x1 virtual-machine ethernet"]
    assert single.price == 3.19  # exactly, not 3.1900000000000004


def test_the_supplier_cost_is_never_the_price() -> None:
    """providerCostPerHourCents (444) exceeds the customer price (275) on this option."""
    option = next(o for o in options() if o["gpuFormFactor"] == "pcie")
    assert option["providerCostPerHourCents"] > option["costPerHourCents"]
    assert parse_option(option, "u").price == 2.75
    without = {k: v for k, v in option.items() if k != "costPerHourCents"}
    with pytest.raises(SourceFormatError, match="costPerHourCents"):
        parse_options([without])


def test_missing_availability_is_unknown_not_sold_out() -> None:
    found = quotes()
    assert found["us-east-1", "h100-sxm5 x1 virtual-machine ethernet"].available is None
    assert found["us-east-2", "h200-sxm5 x1 virtual-machine ethernet"].available is False
    assert found["ca-east-1", "h100-pcie x1 virtual-machine ethernet"].available is True
    assert found["us-east-1", "h100-sxm5 x1 virtual-machine ethernet"].stock is None
    assert found["us-east-2", "h200-sxm5 x1 virtual-machine ethernet"].stock == "0"


def test_form_factor_region_and_fabric_are_part_of_the_identity() -> None:
    found = quotes()
    assert len(found) == 11  # every enabled option is its own offer
    h100_single = {r: q.price for (r, t), q in found.items() if t.startswith("h100-sxm5 x1")}
    assert h100_single == {
        "us-east-1": 3.19,
        "ca-east-3": 4.85,
        "eu-north-6": 3.58,
        "eu-north-7": 3.58,
    }
    assert ("eu-north-4", "h100-sxm5 x8 virtual-machine ethernet-rocev2") in found
    assert found["ca-east-1", "h100-pcie x1 virtual-machine ethernet"].gpu_name_raw == "h100 pcie"


def test_disabled_options_are_counted_not_silently_dropped() -> None:
    parsed = parse_rental_options(json.loads(RECORDING.read_text()), "u")
    assert len(parsed.quotes) == 11
    assert parsed.skipped == {"disabled options": 1}
    assert "left out: 1 disabled options" in parsed.summary()


@pytest.mark.parametrize("flag", [None, "true", 1])
def test_an_enabled_flag_that_is_not_a_boolean_fails_the_run(flag: Any) -> None:
    """Whether the option exists cannot be told: guessing either way drops or invents it."""
    document = json.loads(RECORDING.read_text())
    document[0]["enabled"] = flag
    with pytest.raises(SourceFormatError, match="enabled is"):
        parse_options(document)


@pytest.mark.parametrize("document", [{"options": []}, [{"enabled": True}], ["x"]])
def test_unexpected_layout_is_a_format_error(document: Any) -> None:
    with pytest.raises(SourceFormatError):
        parse_options(document)


def test_end_to_end_through_a_local_server(db_path: Path) -> None:
    summary = fetch_locally(db_path, "hyperbolic")["hyperbolic"]
    assert summary.status is RunStatus.OK and summary.offers_seen == 11
    assert summary.unmapped == 0
    rows = dict(
        query(
            db_path,
            "SELECT gpu_model, count(*) FROM offers WHERE provider = 'hyperbolic' GROUP BY 1",
        )
    )
    assert rows == {"H100-SXM-80GB": 8, "H100-PCIE-80GB": 1, "H200-141GB": 2}
    [(per_gpu, per_node, country)] = query(
        db_path,
        "SELECT price_gpu_hour_usd, price_hour_usd, country FROM offers WHERE region = 'jp-east-1'",
    )
    assert (per_gpu, per_node, country) == (pytest.approx(3.19), pytest.approx(25.52), "JP")
    assert query(db_path, "SELECT count(*) FROM offers WHERE continent IS NULL") == [(0,)]


def test_an_option_of_several_nodes_has_the_cpus_and_ram_of_all_of_them() -> None:
    [bare_metal] = [o for o in options() if o["region"] == "uk-southeast-3"]
    [node] = bare_metal["nodes"]
    pair = bare_metal | {"gpuCount": 16, "nodes": [node, node]}
    quote = parse_option(pair, "u")
    assert (quote.gpu_count, quote.vcpus, quote.ram_gb) == (16.0, 192.0, 4000.0)
    unknown = pair | {"nodes": [node, {k: v for k, v in node.items() if k != "ramGb"}]}
    assert parse_option(unknown, "u").ram_gb is None  # half known is not the whole


def test_a_stock_count_that_is_not_a_number_says_nothing() -> None:
    [option] = [o for o in options() if o["gpuFormFactor"] == "pcie"]
    assert parse_option(option | {"totalAvailable": True}, "u").available is None
    assert parse_option(option | {"totalAvailable": 0}, "u").available is False


@pytest.mark.parametrize(("count", "available"), [("0", False), ("2", True), (" 2 ", True)])
def test_a_quoted_stock_count_is_read_as_its_number(count: str, available: bool) -> None:
    [option] = [o for o in options() if o["gpuFormFactor"] == "pcie"]
    quote = parse_option(option | {"totalAvailable": count}, "u")
    assert (quote.available, quote.stock) == (available, count.strip())


@pytest.mark.parametrize("count", ["many", "", "N/A", "-1", "1.5"])
def test_a_stock_word_that_is_no_count_is_unknown_like_a_missing_one(count: str) -> None:
    [option] = [o for o in options() if o["gpuFormFactor"] == "pcie"]
    quote = parse_option(option | {"totalAvailable": count}, "u")
    assert (quote.available, quote.stock) == (None, None)


def test_a_quoted_zero_stock_is_stored_as_sold_out(db_path: Path) -> None:
    """The capture's only stocked option (ca-east-1, totalAvailable 2) served as "0"."""
    document = json.loads(RECORDING.read_text())
    for option in document:
        if option["region"] == "ca-east-1":
            option["totalAvailable"] = "0"
    body = json.dumps(document).encode()

    def quoted(path: str, q: dict[str, str]) -> tuple[int, dict[str, str], bytes] | None:
        return 200, {"Content-Type": "application/json"}, body

    summary = fetch_locally(db_path, "hyperbolic", faults=[quoted])["hyperbolic"]
    assert summary.status is RunStatus.OK and summary.offers_seen == 11
    rows = query(db_path, "SELECT available, stock FROM offers WHERE region = 'ca-east-1'")
    assert rows == [(False, "0")]
