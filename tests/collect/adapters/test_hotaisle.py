from __future__ import annotations

from pathlib import Path

import pytest

from priceadvisor.collect.adapters.base import SourceFormatError
from priceadvisor.collect.adapters.hotaisle import parse_page
from priceadvisor.collect.fetch import run_cycle
from priceadvisor.collect.pages import BROWSER_HEADERS
from priceadvisor.records import RunStatus
from priceadvisor.resources import recordings_dir
from priceadvisor.service.stores import configured_store
from tests.collect.adapters.page_variants import wrap
from tests.conftest import query
from tests.localserver import fetch_served, local_settings, serving

HTML = (recordings_dir() / "hotaisle" / "pricing.html").read_text()


def test_vm_cards_are_on_demand_per_gpu_hour() -> None:
    quotes = {
        q.instance_type: (q.price, q.gpu_count)
        for q in parse_page(HTML, "u").quotes
        if q.pricing == "on_demand"
    }
    assert quotes == {
        "VM Small 1x MI300X": (2.99, 1),
        "VM Medium 2x MI300X": (2.99, 2),  # "2x & 4x": two sizes at one per-GPU price
        "VM Medium 4x MI300X": (2.99, 4),
    }


def test_bare_metal_one_month_minimum_is_a_one_month_commitment() -> None:
    page = parse_page(HTML, "u")
    [bare_metal] = [q for q in page.quotes if q.pricing == "reserved"]
    assert (bare_metal.instance_type, bare_metal.term_months) == ("Bare metal Large 8x MI300X", 1)
    assert (bare_metal.price, bare_metal.price_basis, bare_metal.gpu_count) == (3.39, "gpu", 8)
    assert 3.39 not in {q.price for q in page.quotes if q.pricing == "on_demand"}
    assert not page.skipped


def test_a_commitment_card_without_a_term_is_counted_and_left_out() -> None:
    vague = HTML.replace("bare metal, one-month minimum", "bare metal, minimum term applies")
    page = parse_page(vague, "u")
    assert page.skipped == {"commitment plans without a term": 1}
    assert {q.pricing for q in page.quotes} == {"on_demand"}


def test_hero_meta_and_grandfathered_prices_are_not_offers() -> None:
    page = parse_page(HTML, "u")
    assert len(page.quotes) == 3 + 1 and 1.99 not in {q.price for q in page.quotes}
    assert all(q.gpu_name_raw == "AMD MI300X" for q in page.quotes)


def test_a_card_price_not_per_gpu_hour_fails() -> None:
    changed = HTML.replace(
        'mb-3 font-bold text-foreground">$2.99/GPU/hr',
        'mb-3 font-bold text-foreground">$2.99/hr',
        1,
    )
    assert changed != HTML
    with pytest.raises(SourceFormatError, match="not a GPU-hour price"):
        parse_page(changed, "u")


def test_a_card_whose_button_says_sold_out_is_not_an_offer() -> None:
    sold_out = HTML.replace(">Deploy Small</a>", ">Sold out</a>")
    assert sold_out != HTML
    quotes = {q.instance_type: q for q in parse_page(sold_out, "u").quotes}
    small = quotes["VM Small 1x MI300X"]
    assert (small.price, small.available) == (2.99, False)
    assert small.not_offered_reason == "Hot Aisle's plan card says 'Sold out'"
    assert quotes["VM Medium 2x MI300X"].not_offered_reason is None


def test_an_extra_wrapper_around_a_plan_heading_reads_the_same() -> None:
    def offers(html: str) -> set[tuple[str, str, float | None]]:
        return {(q.instance_type, q.pricing, q.price) for q in parse_page(html, "u").quotes}

    for selector in ("h2", "p.mb-3"):
        wrapped = wrap(HTML, selector)
        assert wrapped != HTML and offers(wrapped) == offers(HTML)


def test_a_starting_at_price_is_a_floor_not_an_offer() -> None:
    card_price = 'mb-3 font-bold text-foreground">$2.99/GPU/hr'
    floor = HTML.replace(card_price, card_price.replace("$2.99", "starting at $2.49"), 1)
    assert floor != HTML
    page = parse_page(floor, "u")
    assert page.skipped["'from' price floors"] == 1
    assert "VM Small 1x MI300X" not in {q.instance_type for q in page.quotes}
    assert 2.49 not in {q.price for q in page.quotes}


def test_a_priced_card_whose_parts_moved_fails() -> None:
    kicker = '<p class="mb-2 font-bold text-hot-orange-contrast text-sm uppercase tracking-wide">'
    no_kicker = HTML.replace(kicker + "VM</p>", '<span class="badge">VM</span>', 1)
    assert no_kicker != HTML
    with pytest.raises(SourceFormatError, match="'Small': no kicker or GPU counts"):
        parse_page(no_kicker, "u")
    no_count = HTML.replace(">1x</span>", ">one</span>", 1)
    with pytest.raises(SourceFormatError, match="'Small' has no GPU count"):
        parse_page(no_count, "u")


def test_cards_without_plan_headings_yield_nothing() -> None:
    assert parse_page(HTML.replace("<h2", "<h3").replace("</h2>", "</h3>"), "u").quotes == []


def test_fetch_through_a_local_server_maps_every_gpu(db_path: Path) -> None:
    summary, server = fetch_served("hotaisle", db_path)
    assert summary.status is RunStatus.OK and summary.offers_seen == 3 + 1
    assert summary.unmapped == 0 and server.accepts == [BROWSER_HEADERS["Accept"]]
    rows = query(
        db_path,
        "SELECT DISTINCT gpu_model, pricing, term_months, price_gpu_hour_usd FROM offers"
        " ORDER BY 2",
    )
    assert rows == [
        ("MI300X-192GB", "on_demand", None, 2.99),
        ("MI300X-192GB", "reserved", 1, 3.39),
    ]


def test_a_page_that_yields_no_prices_is_a_failed_run(db_path: Path) -> None:
    with serving("hotaisle") as server:
        page = HTML.replace("<h2", "<h3").replace("</h2>", "</h3>").encode()
        server.faults.append(lambda path, q: (200, {"Content-Type": "text/html"}, page))
        local = local_settings(db_path, server)
        [summary] = run_cycle(local, configured_store(local), ["hotaisle"], False, lambda *_: None)
    assert summary.status is RunStatus.FAILED
    assert summary.error == "no GPU prices found on Hot Aisle's page (layout changed?)"
