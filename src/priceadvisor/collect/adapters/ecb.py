"""ECB euro foreign exchange reference rates (no authentication).

Format: providers/recordings/ecb/README.md. `<Cube time='YYYY-MM-DD'>` blocks holding
`<Cube currency='USD' rate='1.1702'/>`: units of the currency for one euro. The daily file has
one day; the 90-day history file (same format) has many, and both parse here. Attribute quotes
vary between files, which an XML parser does not care about. No rates on weekends and TARGET
holidays: the core converts at the latest rate on or before a price's day.
"""

from __future__ import annotations

import datetime as dt
import xml.etree.ElementTree as ET
from typing import ClassVar

from priceadvisor.collect.adapters.base import (
    Adapter,
    AdapterOutput,
    ProgressCallback,
    SourceFormatError,
)
from priceadvisor.collect.http import HttpSession
from priceadvisor.records import FxRate

NAMESPACE = "{http://www.ecb.int/vocabulary/2002-08-01/eurofxref}"


class EcbAdapter(Adapter):
    id: ClassVar[str] = "ecb"

    async def fetch(self, session: HttpSession, progress: ProgressCallback) -> AdapterOutput:
        response = await session.request("GET", self.endpoints["daily"])
        rates = parse_rates(response.content)
        progress(f"{len(rates)} rates")
        return AdapterOutput(fx_rates=rates)


def parse_rates(content: bytes) -> list[FxRate]:
    if b"<!DOCTYPE" in content or b"<!ENTITY" in content:
        raise SourceFormatError("refusing an XML document with a DOCTYPE or entities")
    try:
        root = ET.fromstring(content)  # noqa: S314 - no DTD/entities allowed (checked above)
    except ET.ParseError as exc:
        raise SourceFormatError(f"not valid XML ({exc})") from None
    rates = [
        rate
        for day in root.iter(f"{NAMESPACE}Cube")
        if "time" in day.attrib
        for rate in _day_rates(day)
    ]
    if not rates:
        raise SourceFormatError("no <Cube time=…> with rates (format changed?)")
    return rates


def _day_rates(day: ET.Element) -> list[FxRate]:
    try:
        date = dt.date.fromisoformat(day.attrib["time"])
        return [
            FxRate(date, cube.attrib["currency"], float(cube.attrib["rate"]))
            for cube in day.findall(f"{NAMESPACE}Cube")
        ]
    except (KeyError, ValueError) as exc:
        raise SourceFormatError(f"bad rate entry on {day.attrib.get('time')}: {exc}") from None
