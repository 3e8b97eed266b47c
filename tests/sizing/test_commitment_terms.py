"""A commitment's term costs what its source says is paid, in `advise`'s "if you commit" and
in `tco` alike: packet.ai states $1,142 a month for a 2 x L40S node whose hourly price is $1.56
($1,138.80 over 730 hours); a source stating less than its hourly price covers is priced by the
hourly price."""

from __future__ import annotations

import pytest

from priceadvisor.sizing import commitment, rentals

PACKETAI = {
    "price_hour_usd": 1.56,
    "gpu_count": 2.0,
    "term_months": 1,
    "upfront_usd": None,
    "provider_monthly_usd": 1142.0,
}


def test_advise_prices_the_term_the_source_states() -> None:
    found = commitment.at_size(PACKETAI, {"gpu_count": 4.0, "hours": None})
    assert found["nodes"] == 2
    assert found["usd_per_month"] == pytest.approx(2 * 1142.0)
    assert found["term_usd"] == pytest.approx(2 * 1142.0)


def test_a_stated_payment_below_the_hourly_price_is_priced_by_the_hourly_price() -> None:
    partial = PACKETAI | {"provider_monthly_usd": 100.0}
    found = commitment.at_size(partial, {"gpu_count": 2.0, "hours": None})
    assert found["usd_per_month"] == pytest.approx(1.56 * 730)


def test_tco_holds_the_same_term_per_gpu() -> None:
    offer = {
        "list_usd_per_gpu_hour": 0.78,
        "gpu_count": 2.0,
        "term_months": 1,
        "upfront_usd": None,
        "monthly_usd": 1142.0,
    }
    assert rentals.held(offer).term_usd == pytest.approx(1142.0 / 2)
