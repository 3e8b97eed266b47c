from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from priceadvisor.collect.adapters.base import SourceFormatError
from priceadvisor.collect.adapters.scaleway import is_gpu_offer, parse_server, parse_servers
from priceadvisor.records import RunStatus
from priceadvisor.resources import recordings_dir
from tests.conftest import query
from tests.localserver import fetch_locally

FOLDER = recordings_dir() / "scaleway"


def servers(name: str = "servers-fr-par-2.json") -> dict[str, Any]:
    return parse_servers(json.loads((FOLDER / name).read_text()))


def test_prices_are_eur_per_server_with_the_gpu_count_of_the_type() -> None:
    quote = parse_server("fr-par-2", "H100-SXM-8-80G", servers()["H100-SXM-8-80G"], None, "u")
    assert (quote.price, quote.currency, quote.price_basis) == (25.3308, "EUR", "node")
    assert (quote.gpu_count, quote.gpu_memory_gb, quote.ram_gb) == (8.0, 80.0, 960.0)
    assert quote.gpu_name_raw == "H100-SXM"


def test_cpu_servers_and_gpu_slices_are_not_gpu_offers() -> None:
    listing = servers()
    assert not is_gpu_offer(listing["BASIC2-A2C-4G"])
    assert is_gpu_offer(listing["L4-1-24G"])
    assert not is_gpu_offer(listing["H100-1-80G"] | {"mig_profile": "1g.10gb"})


def test_availability_states() -> None:
    spec = servers()["L4-1-24G"]
    states = {
        s: parse_server("z", "L4-1-24G", spec, {"availability": s}, "u").available
        for s in ("available", "scarce", "shortage", "unknown-state")
    }
    assert states == {"available": True, "scarce": True, "shortage": False, "unknown-state": None}
    assert parse_server("z", "L4-1-24G", spec, None, "u").available is None
    scarce = parse_server("z", "L4-1-24G", spec, {"availability": "scarce"}, "u")
    assert scarce.stock == "scarce"  # the level itself is kept: scarce is still rentable


def test_an_end_of_service_type_is_not_offered_whatever_its_availability() -> None:
    spec = servers()["L4-1-24G"]
    assert spec["end_of_service"] is False  # the captured field, on every entry
    live = parse_server("z", "L4-1-24G", spec, {"availability": "available"}, "u")
    assert (live.available, live.not_offered_reason) == (True, None)
    retired_spec = spec | {"end_of_service": True}
    retired = parse_server("z", "L4-1-24G", retired_spec, {"availability": "available"}, "u")
    assert retired.available is False and retired.price == 0.7875
    assert retired.not_offered_reason is not None
    assert "end_of_service" in retired.not_offered_reason


@pytest.mark.parametrize("document", [{"products": {}}, {"servers": []}, {"servers": {"X": 1}}, []])
def test_unexpected_layout_is_a_format_error(document: Any) -> None:
    with pytest.raises(SourceFormatError):
        parse_servers(document)


def test_end_to_end_eur_through_the_ecb_rate_in_every_zone(db_path: Path) -> None:
    summaries = fetch_locally(db_path, "scaleway", "ecb")
    summary = summaries["scaleway"]
    assert summary.status is RunStatus.OK and summary.offers_seen == 15
    assert summary.unmapped == 0
    requested = summaries["servers"]["scaleway"].requests
    assert len(requested) == 18 and all("per_page=100" in r for r in requested)
    [(usd, original, currency, per_gpu, country, eu)] = query(
        db_path,
        "SELECT price_hour_usd, price_hour_original, currency, price_gpu_hour_usd, country, "
        "is_eu FROM offers WHERE instance_type = 'H100-SXM-8-80G'",
    )
    [(rate,)] = query(db_path, "SELECT usd_per_unit FROM fx_rates WHERE currency = 'EUR'")
    assert (original, currency, country, eu) == (25.3308, "EUR", "FR", True)
    assert usd == pytest.approx(25.3308 * rate) and per_gpu == pytest.approx(usd / 8)
    assert query(db_path, "SELECT DISTINCT region FROM offers ORDER BY 1") == [
        ("fr-par-2",),
        ("pl-waw-2",),
    ]


def test_a_full_page_asks_for_the_next_and_a_failed_zone_makes_the_run_partial(
    db_path: Path,
) -> None:
    full = {"servers": {f"CPU-{n}": {"gpu": 0, "hourly_price": 0.01} for n in range(100)}}

    def fault(path: str, q: dict[str, str]) -> tuple[int, dict[str, str], bytes] | None:
        if path.startswith("/instance/v1/zones/nl-ams-1/products/servers") and q["page"] == "1":
            return 200, {"Content-Type": "application/json"}, json.dumps(full).encode()
        if path.startswith("/instance/v1/zones/pl-waw-3"):
            return 500, {}, b"error"
        return None

    summaries = fetch_locally(db_path, "scaleway", "ecb", faults=[fault])
    requested = summaries["servers"]["scaleway"].requests
    assert any("nl-ams-1" in r and "page=2" in r for r in requested)
    summary = summaries["scaleway"]
    assert summary.status is RunStatus.PARTIAL and "pl-waw-3" in (summary.error or "")
    assert summary.offers_seen == 15
