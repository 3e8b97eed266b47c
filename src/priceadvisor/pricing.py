"""How an offer is priced, and which of those prices "cheapest" compares. Its own module (and
records re-exports it) so that the read commands import it without records' data shapes."""

from __future__ import annotations

from enum import StrEnum


class Pricing(StrEnum):
    """How an offer is priced. `market` is an observed market average (SF Compute), not a price
    anyone can rent at. `reserved` is a commitment: a price for renting over a fixed term
    (`RawQuote.term_months`), stated as the effective hourly price over the term. Both are
    stored beside the others and left out of every "cheapest" answer unless asked for.
    "Starting from" floors are not stored."""

    ON_DEMAND = "on_demand"
    SPOT = "spot"
    MARKET = "market"
    RESERVED = "reserved"


RENTABLE = (Pricing.ON_DEMAND, Pricing.SPOT)  # what "cheapest" compares by default
