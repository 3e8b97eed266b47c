"""Availability read from the change log: what is listed but not rentable, and what never was.

A source's `available` flag (and its stock level) is part of every price interval: a change of
either opens a new interval (store.ingest), so the history says when each offer could be
rented. `available` is NULL where the source says nothing about capacity; NULL is unknown,
never "not rentable", so none of the answers here counts it against an offer.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import duckdb


@dataclass(frozen=True, slots=True)
class ProviderAvailability:
    """A provider's current rentable offers (on-demand and spot): how many are listed, how
    many of those the source says cannot be rented now, and how many it says nothing about."""

    provider: str
    listed: int
    not_rentable: int
    unknown: int

    @property
    def not_rentable_share(self) -> float:
        return self.not_rentable / self.listed if self.listed else 0.0


_SHARE_SQL = """
SELECT provider, count(*) AS listed,
    count(*) FILTER (WHERE available = false) AS not_rentable,
    count(*) FILTER (WHERE available IS NULL) AS unknown
FROM offers WHERE pricing IN ('on_demand', 'spot')
GROUP BY provider ORDER BY provider
"""


def listed_not_rentable(con: duckdb.DuckDBPyConnection) -> list[ProviderAvailability]:
    """Per provider with current offers, its "listed but not rentable" count and share."""
    return [ProviderAvailability(*row) for row in con.execute(_SHARE_SQL).fetchall()]


@dataclass(frozen=True, slots=True)
class NeverAvailable:
    """A current offer the source has said is not rentable at every fetch for `days` days."""

    provider: str
    region: str
    zone: str
    instance_type: str
    pricing: str
    term_months: int  # 0 unless pricing is reserved: part of the key, as in core.current_offers
    reason: str


# A current offer listed continuously since before the window (first_seen: seen without a gap
# since then) none of whose intervals overlapping the window was rentable or of unknown
# availability. An offer listed for less than the window is not judged: too little is known.
_NEVER_AVAILABLE_SQL = """
SELECT o.provider, o.region, o.zone, o.instance_type, o.pricing, o.term_months, o.first_seen
FROM core.current_intervals AS o
WHERE o.first_seen <= $since AND o.available = false
  AND NOT EXISTS (
    SELECT 1 FROM core.price_intervals AS h
    WHERE h.provider = o.provider AND h.region = o.region AND h.zone = o.zone
      AND h.instance_type = o.instance_type AND h.pricing = o.pricing
      AND h.term_months = o.term_months AND h.available IS DISTINCT FROM false
      AND coalesce(h.valid_to, h.last_seen) > $since)
ORDER BY ALL
"""


def never_available(
    con: duckdb.DuckDBPyConnection, days: float, now: dt.datetime
) -> list[NeverAvailable]:
    """Current offers that were never once available in the `days` days before `now`: listed
    all that time, and at every fetch the source said they could not be rented (a price with
    no capacity behind it). Each row carries its key and a one-line reason."""
    since = now - dt.timedelta(days=days)
    rows = con.execute(_NEVER_AVAILABLE_SQL, {"since": since}).fetchall()
    return [
        NeverAvailable(
            provider,
            region,
            zone,
            instance_type,
            pricing,
            term_months,
            f"never available in {days:g} days: listed since {first:%Y-%m-%d %H:%M} UTC, "
            "the source said not rentable at every fetch",
        )
        for provider, region, zone, instance_type, pricing, term_months, first in rows
    ]
