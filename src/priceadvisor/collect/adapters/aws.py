"""AWS EC2: on-demand from the pricing website's per-region JSON, spot from the public spot
price feed, interruption rates from the Spot Instance Advisor data. No credentials.

Format: providers/recordings/aws/README.md.

On-demand: one small JSON per region (~50 KB), `{ondemand}/{Location}/Linux/index.json` where
Location is AWS's display name from the manifest ([regions]). Chosen over the bulk offer files
because those are hundreds of MB per region (never loaded whole) while this holds exactly the
Linux on-demand rows. Rows under `regions[Location]` carry `Instance Type`, `price` (USD per
node-hour, a string), `Instance Family`, `vCPU`, `Memory`; there is no GPU data, so GPU model and
count come from the manifest's [instance_types]. Kept: rows of an accelerator family ("GPU
instance"; "Machine Learning ASIC Instances" for Trainium and Inferentia, whose GPU column is
empty in AWS's price lists) and any row of a type in that table; a type the table does not know
stays (unmapped) for `doctor` to show. Other keys can exist for the same type (capacity
blocks): the row keyed like "p5 48xlarge US East N. Virginia Linux" is the on-demand one; several
rows for a type with none keyed so fail that region (the reader cannot tell which is on-demand).
Rows whose `Operating System` is not Linux or that carry `Pre Installed S/W` (a licence on top)
are not the instance's price; a document whose `manifest.currencyCode` is not USD fails.

Uncertain: the "Machine Learning ASIC Instances" family name comes from AWS's bulk price list
files as other projects' readers describe it; no captured website row of a trn/inf type was at
hand. The manifest's table keeps those types whatever their family says.

Spot: `spot.json` (JSON, sometimes wrapped as JSONP `callback(…);`, stripped here), one price per
region and type ("N/A*" = not offered). Legacy region names of the frozen spot.js feed are
mapped to codes. Interruption: the advisor's bucket index per region/type → a rate (midpoint of
the bucket; ">20%" counted as 0.3) on the spot quotes.

Completeness: scopes are "region|on_demand" per region JSON and "region|spot" for every region
when the spot feed parsed. A 404 for a region JSON means AWS publishes no prices there (the
reference documents 404 for unknown locations) and counts as complete with no offers; other
errors make that region's scope fail (partial run). A failed advisor leaves prices complete.
"""

from __future__ import annotations

import json
import re
from typing import Any, ClassVar
from urllib.parse import quote

from priceadvisor.collect.adapters.base import (
    Adapter,
    AdapterOutput,
    ProgressCallback,
    SourceFormatError,
    json_object,
    summarise_failures,
)
from priceadvisor.collect.http import FetchError, HttpSession, decode_json
from priceadvisor.records import PriceBasis, Pricing, RawQuote

LEGACY_SPOT_REGIONS = {
    "us-east": "us-east-1",
    "us-west": "us-west-1",
    "eu-ireland": "eu-west-1",
    "apac-sin": "ap-southeast-1",
    "apac-syd": "ap-southeast-2",
    "apac-tokyo": "ap-northeast-1",
}
# `Instance Family` values whose rows are accelerator instances, whatever the manifest knows.
ACCELERATOR_FAMILIES = frozenset({"GPU instance", "Machine Learning ASIC Instances"})
_JSONP = re.compile(rb"^\s*[\w.$]+\s*\((.*)\)\s*;?\s*$", re.DOTALL)
_LAST_BUCKET_RATE = 0.3


class AwsAdapter(Adapter):
    id: ClassVar[str] = "aws"

    async def fetch(self, session: HttpSession, progress: ProgressCallback) -> AdapterOutput:
        output = AdapterOutput()
        regions = self.manifest.regions
        for number, (code, location) in enumerate(regions.items(), 1):
            await self._ondemand(session, code, location, output)
            progress(f"on-demand {number}/{len(regions)} regions, {len(output.quotes)} quotes")
        rates = await self._advisor(session, output)
        await self._spot(session, rates, output)
        progress(f"{len(output.quotes)} quotes")
        if not output.complete_scopes:
            raise FetchError(summarise_failures(output.failed_scopes))
        return output

    async def _ondemand(
        self, session: HttpSession, code: str, location: str, output: AdapterOutput
    ) -> None:
        url = f"{self.endpoints['ondemand']}/{quote(location)}/Linux/index.json"
        scope = f"{code}|{Pricing.ON_DEMAND}"
        try:
            response = await session.request("GET", url)
            rows = parse_ondemand(decode_json(response), location, self.manifest.instance_types)
        except FetchError as exc:
            if "HTTP 404" in str(exc):
                output.complete_scopes.add(scope)  # no prices published for this location
                return
            output.failed_scopes[scope] = str(exc)
            return
        except SourceFormatError as exc:
            output.failed_scopes[scope] = f"{code}: {exc}"
            return
        output.quotes.extend(_ondemand_quote(code, row, url) for row in rows)
        output.complete_scopes.add(scope)

    async def _advisor(self, session: HttpSession, output: AdapterOutput) -> dict[str, Any]:
        try:
            return parse_advisor(await session.get_json(self.endpoints["advisor"]))
        except (FetchError, SourceFormatError) as exc:
            output.failed_scopes["spot-advisor"] = f"spot advisor: {exc}"
            return {}

    async def _spot(
        self, session: HttpSession, rates: dict[str, Any], output: AdapterOutput
    ) -> None:
        url = self.endpoints["spot"]
        try:
            response = await session.request("GET", url)
            spot = parse_spot(response.content, self.manifest.instance_types)
        except (FetchError, SourceFormatError) as exc:
            output.failed_scopes["spot"] = f"spot feed: {exc}"
            return
        wanted = set(self.manifest.regions)
        for region, size, price in spot:
            if region in wanted:
                rate = rates.get(region, {}).get(size)
                output.quotes.append(_spot_quote(region, size, price, rate, url))
        output.complete_scopes.update(f"{r}|{Pricing.SPOT}" for r in wanted)


def parse_ondemand(document: Any, location: str, known: dict[str, Any]) -> list[dict[str, Any]]:
    try:
        rows: dict[str, Any] = document["regions"][location]
    except (KeyError, TypeError):
        raise SourceFormatError(f"no regions[{location!r}] object (format changed?)") from None
    _require_usd(document)
    by_type: dict[str, dict[str, dict[str, Any]]] = {}
    for key, row in rows.items():
        if not isinstance(row, dict) or "Instance Type" not in row or "price" not in row:
            raise SourceFormatError(f"row {key!r} lacks 'Instance Type' or 'price'")
        kind = str(row["Instance Type"])
        if row.get("Instance Family") not in ACCELERATOR_FAMILIES and kind not in known:
            continue
        if _plain_linux(row):
            by_type.setdefault(kind, {})[key] = row
    return [_on_demand_row(kind, found, location) for kind, found in by_type.items()]


def _require_usd(document: dict[str, Any]) -> None:
    currency = json_object(document, "manifest").get("currencyCode")
    if currency not in (None, "USD"):
        raise SourceFormatError(f"prices in {currency!r}, not USD (wrong endpoint?)")


def _plain_linux(row: dict[str, Any]) -> bool:
    """A row of Linux with no pre-installed software (SQL Server and the like are licences on
    top of the instance, not its price); a row that does not say is taken as plain Linux."""
    system = row.get("Operating System", "Linux")
    software = row.get("Pre Installed S/W", "NA")
    return system == "Linux" and software in ("NA", "")


def _on_demand_row(kind: str, rows: dict[str, dict[str, Any]], location: str) -> dict[str, Any]:
    """The type's on-demand row: the only one, or the one keyed like "p5 48xlarge US East N.
    Virginia Linux" among several (capacity blocks share the type); several rows and none keyed
    so is a layout this reader does not know."""
    if len(rows) == 1:
        return next(iter(rows.values()))
    canonical = rows.get(_canonical_key(kind, location))
    if canonical is None:
        raise SourceFormatError(
            f"{kind}: {len(rows)} rows ({', '.join(sorted(rows))}) and none is the on-demand one"
        )
    return canonical


def _canonical_key(kind: str, location: str) -> str:
    place = location.replace("(", "").replace(")", "")
    return f"{kind.replace('.', ' ')} {place} Linux"


def _ondemand_quote(region: str, row: dict[str, Any], url: str) -> RawQuote:
    return RawQuote(
        region=region,
        instance_type=str(row["Instance Type"]),
        pricing=Pricing.ON_DEMAND,
        price=_price(row["price"]),
        price_basis=PriceBasis.NODE,
        vcpus=_price(row.get("vCPU")),
        ram_gb=_price(str(row.get("Memory", "")).split(" ")[0]),
        source_url=url,
    )


def _spot_quote(
    region: str, size: str, price: float | None, rate: float | None, url: str
) -> RawQuote:
    return RawQuote(
        region=region,
        instance_type=size,
        pricing=Pricing.SPOT,
        price=price,
        price_basis=PriceBasis.NODE,
        interruption_rate=rate,
        source_url=url,
    )


def parse_spot(content: bytes, known: dict[str, Any]) -> list[tuple[str, str, float | None]]:
    """(region code, instance type, Linux price) for every GPU type in the feed."""
    wrapped = _JSONP.match(content)
    document = decode_json_bytes(wrapped.group(1) if wrapped else content)
    try:
        regions = document["config"]["regions"]
    except (KeyError, TypeError):
        raise SourceFormatError("no config.regions list (format changed?)") from None
    rate = document["config"].get("rate", "perhr")
    if rate != "perhr":
        raise SourceFormatError(f"spot prices are {rate!r}, not per hour (format changed?)")
    out = []
    for region in regions:
        code = LEGACY_SPOT_REGIONS.get(region.get("region"), region.get("region"))
        for group in region.get("instanceTypes", []):
            gpu_group = str(group.get("type", "")).lower().startswith("gpu")
            for size in group.get("sizes", []):
                name = size.get("size")
                if name and (gpu_group or name in known):
                    offered, price = _linux_price(size)
                    if offered:
                        out.append((str(code), str(name), price))
    return out


def _linux_price(size: dict[str, Any]) -> tuple[bool, float | None]:
    """(offered, price): "N/A*" or no Linux column means not offered there."""
    for column in size.get("valueColumns", []):
        if column.get("name") == "linux":
            text = str(column.get("prices", {}).get("USD", ""))
            return (False, None) if text.startswith("N/A") else (True, _price(text))
    return False, None


def parse_advisor(document: Any) -> dict[str, dict[str, float]]:
    """region → instance type → interruption rate (0..1) for Linux."""
    try:
        ranges = {r["index"]: r for r in document["ranges"]}
        advisor = document["spot_advisor"]
    except (KeyError, TypeError):
        raise SourceFormatError("no ranges / spot_advisor (format changed?)") from None
    rates = _bucket_rates(ranges)
    return {
        region: {t: rates[v["r"]] for t, v in os.get("Linux", {}).items() if v.get("r") in rates}
        for region, os in advisor.items()
    }


def _bucket_rates(ranges: dict[int, dict[str, Any]]) -> dict[int, float]:
    """Midpoint of each bucket ("5-10%" → 0.075 … "<5%" → 0.025); the open top bucket 0.3."""
    rates, lower = {}, 0.0
    for index in sorted(ranges):
        upper = float(ranges[index]["max"])
        rates[index] = _LAST_BUCKET_RATE if upper >= 100 else (lower + upper) / 200
        lower = upper
    return rates


def decode_json_bytes(content: bytes) -> Any:
    try:
        return json.loads(content)
    except ValueError as exc:
        raise SourceFormatError(f"invalid JSON ({type(exc).__name__})") from None


def _price(value: Any) -> float | None:
    try:
        return float(str(value).replace(",", ""))
    except ValueError:
        return None
