from __future__ import annotations

import re
from pathlib import Path

import pytest

from priceadvisor.collect.adapters.base import SourceFormatError
from priceadvisor.collect.adapters.civo import parse_page
from priceadvisor.collect.pages import BROWSER_HEADERS
from priceadvisor.records import RunStatus
from priceadvisor.resources import recordings_dir
from tests.collect.adapters.page_variants import rename_classes, reorder_columns, wrap
from tests.conftest import query
from tests.localserver import fetch_served

HTML = (recordings_dir() / "civo" / "pricing.html").read_text()
SMALL_ON_DEMAND = '<div id="price-value-hourly" data-option="hourly" class="price-value">$1.29'


def offers(html: str = HTML) -> dict[str, tuple[float | None, float | None, str]]:
    quotes = parse_page(html, "u").quotes
    return {
        q.instance_type: (q.price, q.gpu_count, q.price_basis)
        for q in quotes
        if q.pricing == "on_demand"
    }


def terms(html: str = HTML) -> dict[tuple[str, int | None], tuple[float | None, float | None]]:
    quotes = parse_page(html, "u").quotes
    return {
        (q.instance_type, q.term_months): (q.price, q.monthly)
        for q in quotes
        if q.pricing == "reserved"
    }


def test_rows_are_instance_hour_prices_with_their_gpu_count() -> None:
    assert offers() == {
        "Small 1x NVIDIA L40S - 48GB": (1.29, 1, "node"),
        "Medium 2x NVIDIA L40S - 48GB": (2.58, 2, "node"),  # the core divides: $1.29/GPU-h
    }
    medium = parse_page(HTML, "u").quotes[1]
    assert (medium.vcpus, medium.ram_gb, medium.gpu_memory_gb) == (24, 192, 48)


def test_commitment_terms_and_hidden_monthly_copies_are_never_on_demand_prices() -> None:
    stated = {price for price, _, _ in offers().values()}
    assert stated.isdisjoint({0.89, 1.19, 941.70, 1883.40, 1.78})


def test_every_commitment_term_is_read_hidden_ones_included() -> None:
    found = terms()
    assert found[("Small 1x NVIDIA L40S - 48GB", 36)] == (0.89, 649.70)  # the shown term
    assert found[("Small 1x NVIDIA L40S - 48GB", 6)] == (1.19, 868.70)  # hidden by the picker
    assert sorted({months for _, months in found}) == [6, 12, 24, 36]
    assert len(found) == 4  # the Medium row's Commitment cell was not captured (empty)
    small = next(q for q in parse_page(HTML, "u").quotes if q.term_months == 24)
    assert (small.vcpus, small.ram_gb, small.price_basis, small.gpu_count) == (12, 96, "node", 1)


def test_a_commitment_price_not_per_hour_fails_the_run() -> None:
    html = HTML.replace("$1.19<span>per hour", "$1.19<span>per month", 1)
    with pytest.raises(SourceFormatError, match="not an instance-hour commitment price"):
        parse_page(html, "u")


def test_a_commitment_only_row_is_counted_and_left_out() -> None:
    # B200 on the live page: on-demand "N/A", the headline price is the 36-month term.
    b200 = HTML.replace(SMALL_ON_DEMAND, '<div class="price-value">N/A', 1)
    assert b200 != HTML
    page = parse_page(b200, "u")
    assert list(offers(b200)) == ["Medium 2x NVIDIA L40S - 48GB"]
    assert page.skipped["commitment-only rows (no on-demand price)"] == 1
    assert terms(b200) == terms()  # its commitment terms are offers all the same


def test_tables_outside_the_gpu_section_are_not_read() -> None:
    table = HTML[HTML.index("<table") : HTML.index("</table>") + len("</table>")]
    kubernetes = table.replace("1 x NVIDIA L40S", "3 x NVIDIA L40S").replace("$1.29", "$0.01")
    other = f'<section class="pricing-product">{kubernetes}</section>'
    html = HTML.replace("</main>", other + "</main>")
    assert offers(html) == offers()


def test_markup_variants_read_the_same_offers() -> None:
    assert offers(reorder_columns(HTML, "table", [5, 0, 6, 2, 1, 3, 4])) == offers()
    assert offers(wrap(HTML, "table")) == offers()
    assert offers(rename_classes(HTML, "pricing-table", "price-grid")) == offers()


@pytest.mark.parametrize(
    ("html", "message"),
    [
        (HTML.replace('id="nvidia-gpus"', 'id="gpus"'), "no element with id 'nvidia-gpus'"),
        (HTML.replace(">On-demand<", ">Hourly<"), "no GPU table with Size and On-demand"),
        (HTML.replace("$1.29<span>per hour", "$1.29<span>per month"), "not an instance-hour"),
        (HTML.replace("1 x NVIDIA L40S", "NVIDIA L40S"), "cannot read 'N x GPU'"),
        (HTML.replace(SMALL_ON_DEMAND, '<div class="price-value">Ask us'), "cannot read a price"),
    ],
)
def test_layout_changes_are_format_errors(html: str, message: str) -> None:
    with pytest.raises(SourceFormatError, match=message):
        parse_page(html, "u")


def test_fetch_through_a_local_server_maps_every_gpu(db_path: Path) -> None:
    summary, server = fetch_served("civo", db_path)
    assert summary.status is RunStatus.OK and summary.offers_seen == 2 + 4
    assert summary.unmapped == 0 and server.requests == ["/pricing"]
    assert server.accepts == [BROWSER_HEADERS["Accept"]]
    rows = query(
        db_path,
        "SELECT DISTINCT gpu_model, term_months, price_gpu_hour_usd FROM offers"
        " ORDER BY 2 NULLS FIRST",
    )
    assert rows == [
        ("L40S-48GB", None, 1.29),
        ("L40S-48GB", 6, 1.19),
        ("L40S-48GB", 12, 1.09),
        ("L40S-48GB", 24, 0.99),
        ("L40S-48GB", 36, 0.89),
    ]


def test_markup_variants_read_the_same_commitment_terms() -> None:
    without_titles = re.sub(r' data-title="[^"]*"', "", HTML)
    assert without_titles != HTML
    assert terms(without_titles) == terms()
    assert terms(reorder_columns(HTML, "table", [6, 5, 0, 1, 2, 3, 4])) == terms()
    assert terms(wrap(HTML, "table")) == terms()


def test_a_priced_commitment_cell_without_terms_fails_the_run() -> None:
    html = re.sub(r' id="(\d+)_months"', "", HTML)
    assert html != HTML
    with pytest.raises(SourceFormatError, match="commitment price with no term"):
        parse_page(html, "u")


def test_an_on_demand_cell_saying_coming_soon_is_counted_as_such() -> None:
    html = HTML.replace(SMALL_ON_DEMAND, '<div class="price-value">Coming soon', 1)
    page = parse_page(html, "u")
    assert page.skipped["rows without an on-demand price (coming soon)"] == 1
    assert "Small 1x NVIDIA L40S - 48GB" not in offers(html)


@pytest.mark.parametrize("words", ["Coming soon", "Sold out", "Contact sales"])
def test_a_row_not_offered_in_its_own_words_has_no_commitment_offers_either(words: str) -> None:
    # The Small row is the one with commitment terms in the recording: its on-demand cell now
    # says it is not offered (the hidden monthly copy left as it was), so none of its prices is
    # an offer: a team must not be advised to commit to a GPU the provider does not offer.
    html = HTML.replace(SMALL_ON_DEMAND, f'<div class="price-value">{words}', 1)
    assert html != HTML
    page = parse_page(html, "u")
    assert not [q for q in page.quotes if q.instance_type.startswith("Small ")]
    assert page.skipped[f"rows without an on-demand price ({words.lower()})"] == 1
    assert page.skipped[f"commitment terms of rows not offered ({words.lower()})"] == 4
    assert list(offers(html)) == ["Medium 2x NVIDIA L40S - 48GB"]


def test_a_row_not_offered_whose_whole_cell_says_so_has_no_commitment_offers() -> None:
    # The hourly and the hidden monthly copy both replaced by the words.
    cell = re.search(r'<td data-title="On-demand price".*?</td>', HTML, re.S)
    assert cell is not None
    sold_out = '<td data-title="On-demand price" class="pricing-data">Sold out</td>'
    page = parse_page(HTML.replace(cell.group(), sold_out, 1), "u")
    assert not [q for q in page.quotes if q.instance_type.startswith("Small ")]
    assert page.skipped["commitment terms of rows not offered (sold out)"] == 4
