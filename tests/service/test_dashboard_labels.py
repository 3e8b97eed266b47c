"""The dashboard's wording: column labels with units, alert labels and amounts as text."""

from __future__ import annotations

import typing

import pytest

from priceadvisor.config import AlertRule
from priceadvisor.service import labels
from priceadvisor.service.dashboard import chart_series
from priceadvisor.store.dashboard_reads import OFFER_COLUMNS
from priceadvisor.store.reads import Table


@pytest.mark.parametrize("name", OFFER_COLUMNS)
def test_every_offer_column_has_its_own_label(name: str) -> None:
    assert name in labels.COLUMNS
    assert "_" not in labels.column(name)


@pytest.mark.parametrize(
    ("name", "label"),
    [
        ("price_gpu_hour_usd", "$/GPU-hour"),
        ("gpu_memory_gb", "GPU memory (GB)"),
        ("launch_year", "Launch year"),
        ("flag_reason", "Flag reason"),  # a column with no label yet: its words
        ("price_week_ago_usd", "Price week ago ($)"),  # ... and the unit its name ends with
        ("checked_at", "Checked (UTC)"),
    ],
)
def test_labels_say_the_unit(name: str, label: str) -> None:
    assert labels.column(name) == label


def test_alert_labels_and_amounts_read_as_text() -> None:
    assert labels.matchers('{"gpu_model": "H100-SXM-80GB", "pricing": "on_demand"}') == (
        "GPU H100-SXM-80GB · pricing on-demand"
    )
    assert labels.matchers("{}") == "everything"
    assert labels.alert_amount("price_drop", 2.49, None) == "$2.49/GPU-hour"
    assert labels.alert_amount("cheaper", 0.41, "serve") == "$0.410 per 1M output tokens"
    assert labels.alert_amount("cheaper", 482.0, "train") == "$482.00 per run"
    assert labels.alert_amount("provider_failing", 1.0, None) == "—"


@pytest.mark.parametrize("kind", typing.get_args(AlertRule.model_fields["kind"].annotation))
def test_every_alert_rule_kind_reads_as_words(kind: str) -> None:
    assert kind in labels.RULES
    assert "_" not in labels.RULES[kind]


def test_a_cheaper_amount_of_a_workload_no_longer_ranked_claims_no_unit() -> None:
    assert labels.alert_amount("cheaper", 0.41, None) == "$0.410"


def test_chart_puts_the_cheapest_today_first_and_ended_series_last() -> None:
    import datetime as dt

    day1, day2 = dt.date(2026, 11, 1), dt.date(2026, 11, 2)
    rows = [
        (day1, "gone", "on_demand", 0.5),  # cheapest once, but no price today
        (day1, "dear", "on_demand", 4.0),
        (day2, "dear", "on_demand", 3.0),
        (day2, "cheap", "spot", 2.0),
    ]
    chart = chart_series(Table(["day", "provider", "pricing", "usd"], rows))
    assert chart["labels"] == ["cheap · spot", "dear · on-demand", "gone · on-demand"]
    assert chart["spot"] == [True, False, False]
    assert chart["shown"] == 3


@pytest.mark.parametrize(
    ("part", "whole", "text"),
    [(0, 225, "0 %"), (1, 225, "<1 %"), (17, 90, "19 %"), (224, 225, ">99 %"), (8, 8, "100 %")],
)
def test_a_share_never_rounds_to_none_or_all_of_it(part: int, whole: int, text: str) -> None:
    """1 of 225 offers not rentable is not "0 %", 224 of 225 not "100 %"."""
    assert labels.share(part, whole) == text
