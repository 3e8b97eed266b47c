"""gpu.ai marketplace and broker pricing (public API, no key).

Format (verified against a real capture of the first page of `GET
https://api.gpu.ai/v1/pricing?limit=200`, 2026-08-22): `{"data": [...], "next_cursor": str |
null}`. Pages are walked with `&cursor=<next_cursor>` until it is null (a keyset cursor, base64
of "timestamp|gpu|region|tier|…"); `limit` is at most 200. A row: `offering_id` (the identity:
not in the published schema but on every row), `gpu_type` (a slug: "a100_40gb", "h100_nvl",
"rtx_2000_ada"), `gpu_count`, `cpu_cores`, `ram_gb`, `storage_gb`, `region` (coarse:
"us-west", "asia-pacific", "india-south"), `tier` ("on_demand" or "spot"), `price_per_hour`,
`available` (how many of this configuration can be started now), `community` (bool),
`capacity_class` ("secure", "community" or ""), `deployment_type` ("container" or "vm"),
`disk_price_per_gb_hour` (storage, billed on top; not read). No currency field: USD.

Traps: `price_per_hour` is for the whole configuration (all `gpu_count` GPUs: the 8× B300 row
is $50.62, $6.33 per GPU), so it is stored per node and the core divides. Pages can replay
rows already served: rows are deduplicated by `offering_id` (the first seen is kept) and the
replays counted in the progress line. An empty `capacity_class` falls back to the `community`
flag. Rows with
`available: 0` (or "0") are sold out (the API leaves them out unless asked); an `available`
that is no whole count leaves availability unknown. A tier other than
on-demand or spot, a page without `data`, a cursor that repeats or a walk longer than
MAX_PAGES fails the run. The demo host `api.demo.gpu.ai` in the OpenAPI document is never used.

Offerings that share a market (region, GPU, count, capacity class, deployment type, tier) are
folded into the cheapest with their count and median (collect/asks.py).

Uncertain: only the first page was captured (all rows on-demand); the second page in the
recordings is built in the same shape (see its README). "a100_80gb" names no form factor; the
catalog's A100 default (SXM) is assumed.
"""

from __future__ import annotations

from typing import Any, ClassVar

from priceadvisor.collect.adapters.base import (
    Adapter,
    AdapterOutput,
    ProgressCallback,
    SourceFormatError,
    exact_price,
    json_count,
    json_number,
    json_records,
)
from priceadvisor.collect.asks import cheapest_per_market
from priceadvisor.collect.http import HttpSession
from priceadvisor.collect.pages import ParsedPage
from priceadvisor.records import PriceBasis, Pricing, RawQuote

REQUIRED = ("offering_id", "gpu_type", "gpu_count", "region", "tier", "price_per_hour", "available")
TIERS = {"on_demand": Pricing.ON_DEMAND, "spot": Pricing.SPOT}
PAGE_LIMIT = "200"
MAX_PAGES = 50
REPLAYED = "replayed rows collapsed"


class GpuAiAdapter(Adapter):
    id: ClassVar[str] = "gpuai"

    async def fetch(self, session: HttpSession, progress: ProgressCallback) -> AdapterOutput:
        url = self.endpoints["pricing"]
        pages: list[list[dict[str, Any]]] = []
        cursor: str | None = None
        cursors: set[str] = set()
        while len(pages) < MAX_PAGES:
            params = {"limit": PAGE_LIMIT} | ({"cursor": cursor} if cursor else {})
            rows, cursor = parse_page(await session.get_json(url, params))
            pages.append(rows)
            if cursor is None:
                parsed = parse_rows(pages, url)
                progress(f"{len(pages)} pages, " + parsed.summary())
                return AdapterOutput(quotes=parsed.quotes)
            if cursor in cursors:
                raise SourceFormatError(f"page {len(pages)} repeats an earlier cursor")
            cursors.add(cursor)
        raise SourceFormatError(f"more than {MAX_PAGES} pages of pricing (cursor never ends)")


def parse_page(document: Any) -> tuple[list[dict[str, Any]], str | None]:
    if not isinstance(document, dict) or "data" not in document or "next_cursor" not in document:
        raise SourceFormatError("a pricing page lacks 'data' or 'next_cursor' (format changed?)")
    rows = json_records(document["data"], REQUIRED, "the pricing rows", "a pricing row")
    for row in rows:
        if row["tier"] not in TIERS:
            raise SourceFormatError(
                f"offering {row['offering_id']} has unknown tier {row['tier']!r}"
            )
    cursor = document["next_cursor"]
    if cursor is not None and not (isinstance(cursor, str) and cursor):
        raise SourceFormatError(f"next_cursor is not a string: {cursor!r}")
    return rows, cursor


def parse_rows(pages: list[list[dict[str, Any]]], url: str) -> ParsedPage:
    """Every page's rows, each offering once (replays counted), folded per market."""
    parsed = ParsedPage()
    offerings: dict[str, dict[str, Any]] = {}
    for row in (row for page in pages for row in page):
        if str(row["offering_id"]) in offerings:
            parsed.skipped[REPLAYED] += 1
            continue
        offerings[str(row["offering_id"])] = row
    parsed.quotes = cheapest_per_market(parse_row(row, url) for row in offerings.values())
    return parsed


def parse_row(row: dict[str, Any], url: str) -> RawQuote:
    available = json_count(row["available"])
    return RawQuote(
        region=str(row["region"] or ""),
        instance_type=instance_type(row),
        pricing=TIERS[row["tier"]],
        price=exact_price(row["price_per_hour"]),
        price_basis=PriceBasis.NODE,
        gpu_name_raw=str(row["gpu_type"]),
        gpu_count=json_number(row["gpu_count"]),
        vcpus=json_number(row.get("cpu_cores")),
        ram_gb=json_number(row.get("ram_gb")),
        available=available > 0 if available is not None else None,
        source_url=url,
    )


def instance_type(row: dict[str, Any]) -> str:
    """ "h100_sxm x2 community container": everything that makes a different product."""
    capacity = row.get("capacity_class") or (
        "secure" if row.get("community") is False else "community"
    )
    parts = (row["gpu_type"], f"x{row['gpu_count']}", capacity, row.get("deployment_type"))
    return " ".join(str(p) for p in parts if p)
