"""The adapters' shared JSON readers: counts of things (stock, bids) and plain numbers."""

from __future__ import annotations

import math
from typing import Any

import pytest

from priceadvisor.collect.adapters.base import gpus_free, json_count, json_number


@pytest.mark.parametrize(
    ("value", "count"),
    [(3, 3), (0, 0), (3.0, 3), ("3", 3), ("0", 0), (" 3 ", 3), ("12\n", 12), ("4.0", 4)],
)
def test_a_whole_number_or_the_same_number_quoted_is_a_count(value: Any, count: int) -> None:
    assert json_count(value) == count


@pytest.mark.parametrize(
    "value",
    [
        *("-1", "1.5", "nan", "NaN", "inf", "Infinity", "1e3", "1_0", "+3", "0x10", "٣"),
        *("", "  ", "many", "N/A", "3 GPUs", "9" * 400),
        *(-1, 1.5, math.nan, math.inf, -math.inf),
        *(True, False, None, [3], {"available": 3}, ["0"]),
    ],
)
def test_anything_else_is_no_count(value: Any) -> None:
    assert json_count(value) is None


def test_a_boolean_is_not_a_count_though_python_counts_it_as_an_int() -> None:
    assert isinstance(True, int)
    assert (json_count(True), json_count(False), gpus_free(True)) == (None, None, None)


@pytest.mark.parametrize(
    ("value", "level"), [(8, "8"), ("0", "0"), (" 3 ", "3"), (2.0, "2"), ("-1", None), (None, None)]
)
def test_gpus_free_reads_quoted_counts_as_a_stock_level(value: Any, level: str | None) -> None:
    assert gpus_free(value) == level


@pytest.mark.parametrize("value", ["3", "12.5", " 0 ", True, None, [1]])
def test_a_plain_number_is_still_never_read_from_a_string(value: Any) -> None:
    """Sizes and specs keep their strict reader: only the counts take quoted numbers."""
    assert json_number(value) is None


def test_a_plain_number_reads_ints_and_fractions() -> None:
    assert (json_number(12.5), json_number(3), json_number(-1)) == (12.5, 3.0, -1.0)
