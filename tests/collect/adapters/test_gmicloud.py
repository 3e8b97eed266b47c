from __future__ import annotations

from pathlib import Path

import pytest

from priceadvisor.collect.adapters.base import SourceFormatError
from priceadvisor.collect.adapters.gmicloud import parse_page
from priceadvisor.collect.fetch import enabled_providers
from priceadvisor.config import Settings
from priceadvisor.manifest import manifest
from priceadvisor.records import RunStatus
from priceadvisor.resources import recordings_dir
from tests.collect.adapters.page_variants import rename_classes, wrap
from tests.conftest import query
from tests.localserver import fetch_served

HTML = (recordings_dir() / "gmicloud" / "pricing.html").read_text()
LISTED = HTML.replace(">from $", ">$")  # the day GMI publishes plain prices


def prices(html: str = LISTED) -> dict[str, float | None]:
    return {q.instance_type: q.price for q in parse_page(html, "u").quotes}


def test_a_page_of_from_floors_stores_nothing_and_says_why() -> None:
    with pytest.raises(SourceFormatError, match=r"only 'from' price floors \(4 cards\)"):
        parse_page(HTML, "u")


def test_plain_card_prices_would_be_on_demand_per_gpu_hour() -> None:
    assert prices() == {
        "NVIDIA GB200": 8.00,  # a Grace-Blackwell superchip, not a B200
        "NVIDIA H100 GPU": 2.00,
        "NVIDIA H200": 2.60,
        "NVIDIA B200 GPU": 4.00,
    }
    page = parse_page(LISTED, "u")
    assert page.skipped == {"cards without a price (pre-order)": 1}  # GB300 "Pre order"
    assert {(q.pricing, q.price_basis, q.available) for q in page.quotes} == {
        ("on_demand", "gpu", True)
    }


def test_floors_beside_a_plain_price_are_counted_and_left_out() -> None:
    mixed = HTML.replace(">from $2.00<", ">$2.10<")
    page = parse_page(mixed, "u")
    assert prices(mixed) == {"NVIDIA H100 GPU": 2.10}
    assert page.skipped["'from' price floors"] == 3


def test_a_priced_card_badged_sold_out_is_not_an_offer() -> None:
    badge = ">AVAILABLE NOW</div><h3"
    h200 = LISTED.index(">NVIDIA H200<")
    start = LISTED.rindex(badge, 0, h200)
    sold_out = LISTED[:start] + ">SOLD OUT</div><h3" + LISTED[start + len(badge) :]
    quotes = {q.instance_type: q for q in parse_page(sold_out, "u").quotes}
    h200_quote = quotes["NVIDIA H200"]
    assert (h200_quote.price, h200_quote.available) == (2.60, False)
    assert h200_quote.not_offered_reason == "GMI Cloud's card says 'SOLD OUT'"
    assert quotes["NVIDIA H100 GPU"].not_offered_reason is None


def test_one_card_with_another_unit_fails_instead_of_vanishing() -> None:
    h200 = LISTED.index(">NVIDIA H200<")
    unit = LISTED.index("/GPU-hour", h200)

    def with_h200_unit(text: str) -> str:
        return LISTED[:unit] + text + LISTED[unit + len("/GPU-hour") :]

    assert prices(with_h200_unit("/GPU/hr")) == prices()
    with pytest.raises(SourceFormatError, match="NVIDIA H200: a card price not per GPU-hour"):
        parse_page(with_h200_unit("/hour"), "u")


def test_markup_variants_read_the_same_cards() -> None:
    assert prices(wrap(LISTED, "h3")) == prices()  # the heading in one more block
    renamed = rename_classes(LISTED, "font-mono", "font-code")
    assert prices(renamed) == prices()
    as_h2 = LISTED.replace("<h3", "<h2").replace("</h3>", "</h2>")
    assert prices(as_h2) == prices()


@pytest.mark.parametrize(
    ("html", "message"),
    [
        (LISTED.replace("/GPU-hour", "/month"), "a card price not per GPU-hour"),
        (LISTED.replace("NVIDIA", "Acme"), "no GPU cards with a per-GPU-hour price"),
        (LISTED.replace(">$2.60<", ">ask us $<"), "cannot read a price"),
        (LISTED.replace(">Pre order<", ">Soon<"), "NVIDIA GB300: the card has no price"),
    ],
)
def test_layout_changes_are_format_errors(html: str, message: str) -> None:
    with pytest.raises(SourceFormatError, match=message):
        parse_page(html, "u")


def test_disabled_by_default_until_the_config_enables_it() -> None:
    assert manifest("gmicloud").enabled_by_default is False
    assert "gmicloud" not in enabled_providers(Settings(), ["gmicloud", "fal"])
    enabled = Settings.model_validate({"providers": {"gmicloud": {"enabled": True}}})
    assert enabled_providers(enabled, ["gmicloud", "fal"]) == ["gmicloud", "fal"]
    off = Settings.model_validate({"providers": {"fal": {"enabled": False}}})
    assert enabled_providers(off, ["gmicloud", "fal"]) == []


def test_fetching_the_recorded_page_fails_with_the_reason(db_path: Path) -> None:
    summary, server = fetch_served("gmicloud", db_path)
    assert summary.status is RunStatus.FAILED and server.requests == ["/en/pricing"]
    assert summary.error == (
        "GMI Cloud's page shows only 'from' price floors (4 cards), no on-demand price to store"
    )
    assert query(db_path, "SELECT count(*) FROM offers") == [(0,)]
