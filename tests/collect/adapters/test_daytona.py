from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from priceadvisor.collect.adapters.base import SourceFormatError
from priceadvisor.collect.adapters.daytona import parse_rate_card
from priceadvisor.records import RawQuote, RunStatus
from priceadvisor.resources import recordings_dir
from tests.conftest import query
from tests.localserver import fetch_served

CARD = json.loads((recordings_dir() / "daytona" / "gpu-pricing.json").read_text())


def rates(document: dict[str, Any] | None = None) -> dict[tuple[str, str], RawQuote]:
    quotes = parse_rate_card(document or CARD, "u")
    return {(q.instance_type, q.pricing): q for q in quotes}


def edited(index: int, **fields: Any) -> dict[str, Any]:
    document = copy.deepcopy(CARD)
    document["gpus"][index].update(fields)
    return document


def test_every_gpu_type_has_a_per_gpu_on_demand_and_spot_rate() -> None:
    found = rates()
    assert {key: q.price for key, q in found.items()} == {
        ("B300", "on_demand"): 7.1,
        ("B300", "spot"): 4.08,
        ("B200", "on_demand"): 6.25,
        ("B200", "spot"): 3.59,
        ("MI355X", "on_demand"): 5.99,
        ("MI355X", "spot"): 3.44,
        ("H100", "on_demand"): 3.95,
        ("H100", "spot"): 2.27,
        ("RTX-PRO-6000", "on_demand"): 3.03,
        ("RTX-PRO-6000", "spot"): 1.74,
        ("RTX-4090", "on_demand"): 0.99,
        ("RTX-4090", "spot"): 0.57,
    }
    h100 = found["H100", "on_demand"]
    assert (h100.region, h100.price_basis, h100.gpu_count, h100.currency) == (
        "global",
        "gpu",
        1,
        "USD",
    )


def test_separately_billed_resources_are_never_added_to_the_gpu_rate() -> None:
    """$3.95 bare; 8 vCPU + 100 GiB at the card's resource rates would make it ~$5.97."""
    assert CARD["resources"]["onDemand"]["vcpuPerHour"] == 0.0504
    assert rates()["H100", "on_demand"].price == 3.95
    assert all(q.vcpus is None and q.ram_gb is None for q in rates().values())
    assert all(q.available is None for q in rates().values())  # the card has no stock field


def test_the_currency_is_read_not_assumed() -> None:
    assert rates(CARD | {"currency": "eur"})["B200", "spot"].currency == "EUR"
    without = {k: v for k, v in CARD.items() if k != "currency"}
    with pytest.raises(SourceFormatError, match="currency is not a code: None"):
        parse_rate_card(without, "u")


def test_an_hourly_rate_that_disagrees_with_the_per_second_rate_fails() -> None:
    per_minute = edited(3, onDemandPricePerHour=3.95 / 60)  # a per-minute figure under "Hour"
    with pytest.raises(SourceFormatError, match=r"H100: onDemandPricePerHour .* is not 3600"):
        parse_rate_card(per_minute, "u")


def test_unknown_types_are_kept_and_a_missing_rate_passes_on_as_no_price() -> None:
    document = copy.deepcopy(CARD)
    document["gpus"].append(dict(document["gpus"][0], type="MI999Z"))
    assert ("MI999Z", "spot") in rates(document)
    assert rates(edited(0, spotPricePerHour=None))["B300", "spot"].price is None


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"rates": []}, "no 'gpus'"),
        (CARD | {"gpus": {"H100": 3.95}}, "GPU rates are not a JSON list"),
        (CARD | {"gpus": [{"type": "H100", "onDemandPricePerHour": 3.95}]}, "lacks spotPrice"),
    ],
)
def test_unexpected_cards_fail_loudly(document: Any, message: str) -> None:
    with pytest.raises(SourceFormatError, match=message):
        parse_rate_card(document, "u")


def test_end_to_end_through_a_local_server(db_path: Path) -> None:
    summary, _ = fetch_served("daytona", db_path)
    assert summary.status is RunStatus.OK and summary.offers_seen == 12
    assert (summary.unmapped, summary.offers_rejected) == (0, 0)
    rows = dict(
        query(
            db_path,
            "SELECT instance_type, gpu_model FROM offers "
            "WHERE provider = 'daytona' AND pricing = 'spot'",
        )
    )
    assert rows == {
        "B300": "B300-288GB",
        "B200": "B200-180GB",
        "MI355X": "MI355X-288GB",
        "H100": "H100-SXM-80GB",
        "RTX-PRO-6000": "RTXPRO6000-96GB",
        "RTX-4090": "RTX4090-24GB",
    }
