"""Verda (formerly DataCrunch) public API, with OAuth client credentials.

Format (real-shaped responses of another project's tests, ids masked): `POST {base}/oauth2/token`
with `{"grant_type": "client_credentials", "client_id", "client_secret"}` returns an
`access_token`; with it as Bearer, `GET /instance-types` lists every instance type
(`instance_type` "1H100.80S.30V", `price_per_hour` and `spot_price` as decimal strings, `currency`
"usd", `gpu {description "1x H100 SXM5 80GB", number_of_gpus}`, `gpu_memory
{size_in_gigabytes}` for all GPUs together, `cpu`, `memory`), `GET /locations` the data centres
(`code` "FIN-01", `country_code`) and `GET /instance-availability?is_spot=false|true` the types
deployable now per location (`[{location_code, availabilities: [instance_type, ...]}]`).

`price_per_hour` is the price of the whole instance (an "8x" type costs eight GPUs), stored per
node; `spot_price` is the spot tier of the same instance. Prices do not depend on location, so
each GPU type is offered in every location, available where the availability call lists it for
that pricing. CPU-only types are skipped (counted in the progress line). An availability entry
for a location code that `/locations` does not list fails the run: matched by code, it would
otherwise mark every offer there unavailable without a word.

The credential is `VERDA_CREDENTIALS` = "client_id:client_secret" (the console issues the two
together). Verda's public pricing page also carries its prices as JSON-LD; that variant is not
read, as no capture of it was available to build against.
"""

from __future__ import annotations

from typing import Any, ClassVar

from priceadvisor.collect.adapters.base import (
    Adapter,
    AdapterOutput,
    ProgressCallback,
    SourceFormatError,
    exact_price,
    json_number,
    json_object,
    json_records,
)
from priceadvisor.collect.http import FetchError, HttpSession
from priceadvisor.records import PriceBasis, Pricing, RawQuote

REQUIRED = ("instance_type", "price_per_hour", "gpu", "currency")
PRICE_FIELDS = {Pricing.ON_DEMAND: "price_per_hour", Pricing.SPOT: "spot_price"}

Availability = dict[tuple[str, str], set[str]]  # (location, pricing) -> instance types


class VerdaAdapter(Adapter):
    id: ClassVar[str] = "verda"

    async def fetch(self, session: HttpSession, progress: ProgressCallback) -> AdapterOutput:
        headers = {"Authorization": f"Bearer {await self._token(session)}"}
        types = parse_instance_types(await self._get(session, "instance_types", headers))
        locations = parse_locations(await self._get(session, "locations", headers))
        available: Availability = {}
        for pricing, spot in ((Pricing.ON_DEMAND, "false"), (Pricing.SPOT, "true")):
            listing = await self._get(session, "availability", headers, {"is_spot": spot})
            available |= parse_availability(listing, pricing)
        check_locations(available, locations)
        cpu_only = sum(1 for t in types if not gpu_count(t))
        progress(
            f"{len(types)} instance types ({cpu_only} CPU-only left out), "
            f"{len(locations)} locations"
        )
        url = self.endpoints["instance_types"]
        quotes = [q for t in types for loc in locations for q in offers(t, loc, available, url)]
        return AdapterOutput(quotes=quotes)

    async def _token(self, session: HttpSession) -> str:
        body = {"grant_type": "client_credentials"} | self._client_credentials()
        token = await session.post_json(self.endpoints["token"], body)
        if not isinstance(token, dict) or not isinstance(token.get("access_token"), str):
            raise SourceFormatError("the token answer has no 'access_token'")
        return str(token["access_token"])

    def _client_credentials(self) -> dict[str, str]:
        """client_id and client_secret from "id:secret". Without a credential the provider is
        skipped as not configured, except when replaying recordings (--offline)."""
        if self.credential is None:
            return {"client_id": "", "client_secret": ""}
        client_id, _, secret = self.credential.get_secret_value().partition(":")
        if not client_id or not secret:
            raise FetchError("VERDA_CREDENTIALS must be 'client_id:client_secret'")
        return {"client_id": client_id, "client_secret": secret}

    async def _get(
        self,
        session: HttpSession,
        name: str,
        headers: dict[str, str],
        params: dict[str, str] | None = None,
    ) -> Any:
        response = await session.request(
            "GET", self.endpoints[name], headers=headers, params=params
        )
        return response.json()


def parse_instance_types(document: Any) -> list[dict[str, Any]]:
    return json_records(document, REQUIRED, "the instance types", "an instance type")


def parse_locations(document: Any) -> list[str]:
    if not isinstance(document, list) or not all(
        isinstance(x, dict) and "code" in x for x in document
    ):
        raise SourceFormatError("the locations are not a list of objects with a 'code'")
    return [str(x["code"]) for x in document]


def parse_availability(document: Any, pricing: str) -> Availability:
    if not isinstance(document, list):
        raise SourceFormatError("the availability is not a JSON list (format changed?)")
    found: Availability = {}
    for entry in document:
        if not isinstance(entry, dict) or not isinstance(entry.get("availabilities"), list):
            raise SourceFormatError("an availability entry lacks its 'availabilities' list")
        found[str(entry.get("location_code")), pricing] = {str(t) for t in entry["availabilities"]}
    return found


def check_locations(available: Availability, locations: list[str]) -> None:
    """Availability is matched to offers by location code: a code the locations listing does
    not know would leave every offer there unavailable without a word, so it fails the run."""
    unknown = sorted({code for code, _ in available} - set(locations))
    if unknown:
        raise SourceFormatError(f"availability names unknown locations {', '.join(unknown)}")


def gpu_count(entry: dict[str, Any]) -> float | None:
    return json_number(json_object(entry, "gpu").get("number_of_gpus"))


def offers(
    entry: dict[str, Any], location: str, available: Availability, url: str
) -> list[RawQuote]:
    gpus = gpu_count(entry)
    if not gpus:
        return []
    return [
        _quote(entry, location, pricing, gpus, available, url)
        for pricing, field in PRICE_FIELDS.items()
        if entry.get(field) is not None
    ]


def _quote(
    entry: dict[str, Any],
    location: str,
    pricing: str,
    gpus: float,
    available: Availability,
    url: str,
) -> RawQuote:
    name = str(entry["instance_type"])
    total_memory = json_number(json_object(entry, "gpu_memory").get("size_in_gigabytes"))
    return RawQuote(
        region=location,
        instance_type=name,
        pricing=pricing,
        price=exact_price(entry[PRICE_FIELDS[Pricing(pricing)]]),
        price_basis=PriceBasis.NODE,
        currency=str(entry["currency"]).upper(),
        gpu_name_raw=str(entry.get("name") or json_object(entry, "gpu").get("description")),
        gpu_count=gpus,
        gpu_memory_gb=total_memory / gpus if total_memory else None,
        vcpus=json_number(json_object(entry, "cpu").get("number_of_cores")),
        ram_gb=json_number(json_object(entry, "memory").get("size_in_gigabytes")),
        available=name in available.get((location, pricing), set()),
        source_url=url,
    )
