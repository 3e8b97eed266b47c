"""Quotes share the values a snapshot repeats instead of each holding its own copy."""

from __future__ import annotations

import dataclasses

from priceadvisor import records
from priceadvisor.records import RawQuote


def _quote(suffix: str, price: float) -> RawQuote:
    # Built at run time, as a parser builds them: equal values, distinct objects.
    return RawQuote(
        region="".join(["us-east-", "1"]),
        zone="".join(["us-east-1", suffix]),
        instance_type="".join(["p5.", "48xlarge"]),
        pricing="spot",
        price=price,
        currency="".join(["EU", "R"]),
        gpu_name_raw="".join(["H100 ", "80GB"]),
        gpu_count=float("8"),
        gpu_memory_gb=float("80"),
        vcpus=float("192"),
        ram_gb=float("2048"),
        stock="".join(["hi", "gh"]),
    )


def test_equal_values_of_different_quotes_are_one_object() -> None:
    first, second = _quote("a", 30.0), _quote("a", 31.0)
    for name in (
        "region",
        "zone",
        "instance_type",
        "gpu_name_raw",
        "gpu_count",
        "vcpus",
        "currency",
        "stock",
    ):
        assert getattr(first, name) is getattr(second, name), name
    assert first.price == 30.0
    assert second.price == 31.0


def test_sharing_changes_no_value() -> None:
    quote = _quote("b", 30.0)
    assert (quote.region, quote.zone, quote.instance_type, quote.gpu_name_raw) == (
        "us-east-1",
        "us-east-1b",
        "p5.48xlarge",
        "H100 80GB",
    )
    assert (quote.currency, quote.stock) == ("EUR", "high")
    assert (quote.gpu_count, quote.gpu_memory_gb, quote.vcpus, quote.ram_gb) == (8, 80, 192, 2048)
    assert dataclasses.replace(quote, price=1.0) == dataclasses.replace(_quote("b", 2.0), price=1.0)


def test_the_shared_values_are_bounded() -> None:
    """A source whose instance types are all different cannot grow the table without end."""
    for n in range(records._MAX_SHARED + 10):
        RawQuote(region="r", instance_type=f"machine-{n}", pricing="spot", price=1.0)
    assert len(records._SHARED) <= records._MAX_SHARED + 10  # a quote adds at most 10
    assert _quote("a", 1.0).zone == "us-east-1a"
