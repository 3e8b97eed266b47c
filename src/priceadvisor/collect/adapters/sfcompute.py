"""SF Compute market averages, from the public home page (Next.js flight data, no auth).

Format (verified on a capture of https://sfcompute.com, 2026-07-15, trimmed by its recorder):
the flight data (`self.__next_f.push([1,"..."])`, every quote written `\\"`) carries
`pricesByHardwareType`: per GPU type ("H100", "H200", "B200") a list of days, each
`{date: "$D2026-07-15T23:59:59.000Z", avg, top, bottom}` in USD per GPU-hour, newest first.

These are market averages of what trades cleared at, not a price anyone can rent at: each is
stored as pricing `market` with its day in `price_date`, never as on-demand or spot, and is left
out of every "cheapest" answer unless asked for. Only each type's newest day is stored (the
change log keeps the days as they pass). Traps handled: the "$D" date prefix (React's date
marker) is stripped; `avg: 0` means no trades that day, not a free GPU, and is counted and left
out; `top`/`bottom` are the day's band, not prices, and are not stored.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from priceadvisor.collect.adapters.base import PageAdapter, SourceFormatError
from priceadvisor.collect.pages import ParsedPage, flight_text, json_values
from priceadvisor.records import PriceBasis, Pricing, RawQuote

_DAY = re.compile(r"^\$D(\d{4}-\d{2}-\d{2})T")


class SfComputeAdapter(PageAdapter):
    id: ClassVar[str] = "sfcompute"
    page_endpoint: ClassVar[str] = "market"

    def parse(self, html: str, url: str) -> ParsedPage:
        return parse_page(html, url)


def parse_page(html: str, url: str) -> ParsedPage:
    markets = [v for v in json_values(flight_text(html), "pricesByHardwareType") if v]
    if not markets or not isinstance(markets[0], dict):
        raise SourceFormatError("no pricesByHardwareType in the page's flight data")
    page = ParsedPage()
    for gpu, days in markets[0].items():
        newest = max((_day(d) for d in days), default=None, key=lambda d: d[0])
        if newest is None or newest[1] == 0:
            page.skipped["GPU types with no trades on the newest day"] += 1
            continue
        page.quotes.append(_quote(str(gpu), *newest, url))
    return page


def _day(entry: Any) -> tuple[str, float]:
    match = _DAY.match(str(entry.get("date", ""))) if isinstance(entry, dict) else None
    average = entry.get("avg") if isinstance(entry, dict) else None
    if match is None or not isinstance(average, int | float) or isinstance(average, bool):
        raise SourceFormatError(f"a market day is not {{date: '$D...', avg: number}}: {entry!r}")
    return match.group(1), float(average)


def _quote(gpu: str, day: str, average: float, url: str) -> RawQuote:
    return RawQuote(
        region="global",
        instance_type=gpu,
        pricing=Pricing.MARKET,
        price=average,
        price_basis=PriceBasis.GPU,
        gpu_name_raw=gpu,
        gpu_count=1,
        price_date=day,
        source_url=url,
    )
