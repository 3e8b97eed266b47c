"""Daytona sandbox GPU rate card (public, no key).

Format (verified against a real capture of `GET https://billing.app.daytona.io/gpu-pricing`,
2026-09-23): `{"generatedAt", "currency": "USD", "gpus": [{"type", "onDemandPricePerHour",
"spotPricePerHour", "onDemandPricePerSecond", "spotPricePerSecond"}], "resources": {"onDemand":
{"vcpuPerHour", "memoryGiBPerHour", "diskGiBPerHour"}, "spot": {…}}, "notes": [...]}`. The
notes say the GPU rates are per GPU and that the sandbox's vCPU, memory and disk are billed
separately.

What is stored: the bare per-GPU rate, on-demand and spot, one offer per GPU type and pricing
(region "global": the card names no region; instance type = the card's `type`, GPU count 1,
no vCPU or RAM). The separately billed vCPU, memory and disk are not added: Daytona sells no
fixed shapes, peers that synthesise them disagree (8 vCPU + 100 GB per GPU, with or without
256 GB disk), and the same H100 is $3.95 bare or about $6.00 with such a shape. What a sandbox
would cost in total is a billing question; the resource rates of the capture are in the
manifest's comments. The card has no stock field, so availability is unknown (None).

Checks: `currency` is read from the document (never assumed); the per-hour and per-second rates
of each row must agree (per second × 3600 within 1 %), which pins the period; a row lacking a
rate or a document without `gpus` fails the run. A GPU type the catalog does not know is kept
and reaches `doctor` as unmapped.

Uncertain: B200 is on the card; one peer leaves it out as "priced ahead of launch, not yet
orderable", which the card itself does not say, so it is stored like the others. "H100" names
no form factor; the catalog's default (SXM) is assumed. One capture.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, ClassVar

from priceadvisor.collect.adapters.base import (
    Adapter,
    AdapterOutput,
    ProgressCallback,
    SourceFormatError,
    exact_decimal,
    exact_price,
    json_records,
)
from priceadvisor.collect.http import HttpSession
from priceadvisor.records import PriceBasis, Pricing, RawQuote

RATES = {Pricing.ON_DEMAND: "onDemandPricePer", Pricing.SPOT: "spotPricePer"}
REQUIRED = ("type", "onDemandPricePerHour", "spotPricePerHour")
TOLERANCE = Decimal("0.01")


class DaytonaAdapter(Adapter):
    id: ClassVar[str] = "daytona"

    async def fetch(self, session: HttpSession, progress: ProgressCallback) -> AdapterOutput:
        url = self.endpoints["gpu_pricing"]
        quotes = parse_rate_card(await session.get_json(url), url)
        progress(f"{len(quotes)} per-GPU rates")
        return AdapterOutput(quotes=quotes)


def parse_rate_card(document: Any, url: str) -> list[RawQuote]:
    if not isinstance(document, dict) or "gpus" not in document:
        raise SourceFormatError("no 'gpus' in Daytona's rate card (format changed?)")
    currency = document.get("currency")
    if not isinstance(currency, str) or len(currency) != 3:
        raise SourceFormatError(f"the rate card's currency is not a code: {currency!r}")
    rows = json_records(document["gpus"], REQUIRED, "the GPU rates", "a GPU rate")
    return [rate_quote(row, pricing, currency, url) for row in rows for pricing in RATES]


def rate_quote(row: dict[str, Any], pricing: Pricing, currency: str, url: str) -> RawQuote:
    hourly = row[RATES[pricing] + "Hour"]
    _check_period(row, pricing)
    return RawQuote(
        region="global",
        instance_type=str(row["type"]),
        pricing=pricing,
        price=exact_price(hourly),
        price_basis=PriceBasis.GPU,
        currency=currency.upper(),
        gpu_name_raw=str(row["type"]),
        gpu_count=1,
        source_url=url,
    )


def _check_period(row: dict[str, Any], pricing: Pricing) -> None:
    """The hourly rate must be 3600 times the per-second one, when both are numbers."""
    hourly = exact_decimal(row[RATES[pricing] + "Hour"])
    per_second = exact_decimal(row.get(RATES[pricing] + "Second"))
    if hourly is None or per_second is None or hourly <= 0:
        return
    if abs(per_second * 3600 - hourly) > TOLERANCE * hourly:
        raise SourceFormatError(
            f"{row['type']}: {RATES[pricing]}Hour {hourly} is not 3600 × {RATES[pricing]}Second"
        )
