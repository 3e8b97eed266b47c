from __future__ import annotations

from typing import Any

import httpx
import pytest
import respx

from priceadvisor.collect.adapters.azure import FILTER, AzureAdapter, parse_item
from priceadvisor.collect.adapters.base import SourceFormatError, rebase_link, resolve_endpoint
from priceadvisor.collect.http import FetchError, HttpSession, build_client
from priceadvisor.config import HttpSettings
from priceadvisor.manifest import manifest
from tests.conftest import AZURE_URL, azure_pages
from tests.conftest import serve_azure as serve

pytestmark = pytest.mark.anyio


async def fetch(endpoint: str = AZURE_URL) -> list[Any]:
    adapter = AzureAdapter(manifest("azure"), {"prices": endpoint})
    async with build_client(HttpSettings()) as client:
        output = await adapter.fetch(HttpSession(client, HttpSettings()), lambda _: None)
    return output.quotes


@respx.mock
async def test_walks_every_page_and_keeps_only_linux_vm_offers() -> None:
    route = serve(azure_pages())
    quotes = await fetch()
    assert route.call_count == 3
    items = [i for p in azure_pages() for i in p["Items"]]
    assert len(items) == 66
    # 29 SKU/region pairs x (on-demand + spot) + the zero-price meter + the 1-year reservation;
    # the other 6 rows are Windows, Low Priority, DevTest and FPGA rows
    assert len(quotes) == 60
    assert all(q.currency == "USD" and q.price_basis == "node" for q in quotes)
    assert not any("NP10s" in q.instance_type for q in quotes)


@respx.mock
async def test_spot_is_told_by_suffix_and_may_equal_on_demand() -> None:
    serve(azure_pages())
    quotes = await fetch()
    h200 = {
        q.pricing: q.price
        for q in quotes
        if q.instance_type == "Standard_ND96isr_H200_v5" and q.region == "eastus2"
    }
    assert h200 == {"on_demand": 84.8, "spot": 84.8}
    h100 = {
        q.pricing: q.price
        for q in quotes
        if q.instance_type == "Standard_ND96isr_H100_v5" and q.region == "eastus2"
    }
    assert h100 == {"on_demand": 98.32, "spot": 18.169536}  # not the Windows or Low Priority rows


def test_the_server_filter_asks_for_reservations_too() -> None:
    assert "priceType eq 'Reservation'" in FILTER and "priceType eq 'Consumption'" in FILTER


def recorded_reservation() -> dict[str, Any]:
    [row] = [i for p in azure_pages() for i in p["Items"] if i["type"] == "Reservation"]
    return dict(row)


@respx.mock
async def test_a_reservation_price_is_for_the_whole_term_not_per_hour() -> None:
    """The trap: unitOfMeasure says "1 Hour", but 20270.0 is what a year costs (8,760 hours)."""
    serve(azure_pages())
    a100 = {
        (q.pricing, q.term_months): q
        for q in await fetch()
        if q.instance_type == "Standard_NC24ads_A100_v4" and q.region == "eastus"
    }
    reserved = a100[("reserved", 12)]
    assert recorded_reservation()["unitOfMeasure"] == "1 Hour"
    assert reserved.price == pytest.approx(20270.0 / 8760) and reserved.upfront == 20270.0
    assert round(reserved.price or 0, 4) == 2.3139
    # Below pay-as-you-go by a 1-year reservation's usual discount (~37 %), not 20270 $/h.
    assert 0.5 < (reserved.price or 0) / (a100[("on_demand", None)].price or 1) < 0.8


def test_a_three_year_reservation_is_divided_by_three_years_of_hours() -> None:
    quote = parse_item(recorded_reservation() | {"reservationTerm": "3 Years"})
    assert quote is not None and (quote.pricing, quote.term_months) == ("reserved", 36)
    assert quote.price == pytest.approx(20270.0 / 26280)


@pytest.mark.parametrize(
    "overrides",
    [{"reservationTerm": "6 Months"}, {"reservationTerm": None}, {"unitOfMeasure": "1/Month"}],
)
def test_a_reservation_term_the_adapter_cannot_read_fails_the_run(
    overrides: dict[str, Any],
) -> None:
    with pytest.raises(SourceFormatError, match="reservation term"):
        parse_item(recorded_reservation() | overrides)


def test_a_windows_reservation_is_skipped() -> None:
    windows = {"productName": "Virtual Machines NCads A100 v4 Series Windows"}
    assert parse_item(recorded_reservation() | windows) is None


def item(**overrides: Any) -> dict[str, Any]:
    base = next(i for i in azure_pages()[0]["Items"] if i["type"] == "Consumption")
    return base | overrides


@pytest.mark.parametrize(
    "overrides",
    [
        {"type": "DevTestConsumption"},
        {"productName": "Virtual Machines NCSv3 Series Windows"},
        {"productName": "Virtual Machines NCCadsv5 Srs Win"},
        {"productName": "Cloud Services NCSv3 Series"},
        {"skuName": "NC6s v3 Low Priority", "meterName": "NC6s v3 Low Priority"},
        {"unitOfMeasure": "1/Month"},
        {"armSkuName": "Standard_NP10s"},
    ],
)
def test_rows_that_are_not_linux_hourly_offers_are_skipped(overrides: dict[str, Any]) -> None:
    assert parse_item(item(**overrides)) is None


def test_non_numeric_price_is_passed_as_missing_for_the_core_to_reject() -> None:
    quote = parse_item(item(retailPrice="12.5"))
    assert quote is not None and quote.price is None


@pytest.mark.parametrize("missing", ["armSkuName", "retailPrice", "armRegionName"])
def test_schema_drift_in_an_item_is_a_format_error(missing: str) -> None:
    broken = item()
    del broken[missing]
    with pytest.raises(SourceFormatError, match=missing):
        parse_item(broken)


@respx.mock
async def test_page_without_items_is_a_format_error() -> None:
    pages = azure_pages()
    pages[1] = {"BillingCurrency": "USD", "Entries": [], "NextPageLink": None}
    serve(pages)
    with pytest.raises(SourceFormatError, match="page 2 has no 'Items'"):
        await fetch()


@respx.mock
async def test_html_error_page_instead_of_json() -> None:
    pages = azure_pages()
    pages[1] = httpx.Response(200, text="<html><body>Service Unavailable</body></html>")
    serve(pages)
    with pytest.raises(FetchError, match="invalid JSON"):
        await fetch()


@respx.mock
async def test_next_page_links_are_rebased_onto_a_mirror() -> None:
    mirror = "http://mirror.internal:8080/azure/api/retail/prices"
    route = serve(azure_pages(), base=mirror)
    quotes = await fetch(mirror)
    assert route.call_count == 3 and len(quotes) == 60
    assert all(c.request.url.host == "mirror.internal" for c in route.calls)


def test_endpoint_override_with_only_a_host_keeps_the_default_path() -> None:
    assert (
        resolve_endpoint(AZURE_URL, "http://127.0.0.1:9000")
        == "http://127.0.0.1:9000/api/retail/prices"
    )
    assert resolve_endpoint(AZURE_URL, "http://m/x/prices") == "http://m/x/prices"
    assert resolve_endpoint(AZURE_URL, None) == AZURE_URL
    link = "https://prices.azure.com:443/api/retail/prices?$filter=a%20b&$skip=1000"
    assert (
        rebase_link(link, "http://127.0.0.1:9000/api/retail/prices")
        == "http://127.0.0.1:9000/api/retail/prices?$filter=a%20b&$skip=1000"
    )


@respx.mock
async def test_the_meters_left_out_are_counted() -> None:
    serve(azure_pages())
    said: list[str] = []
    adapter = AzureAdapter(manifest("azure"), {"prices": AZURE_URL})
    async with build_client(HttpSettings()) as client:
        await adapter.fetch(HttpSession(client, HttpSettings()), said.append)
    assert said[-1].startswith("page 3, 60 quotes; left out: 6 meters")
