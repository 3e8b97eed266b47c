"""Voltage Park bare-metal locations (no key needed).

Format (verified against a real capture of 2026-08-22): `GET /api/v1/bare-metal/locations`
returns `{"results": [...], "total_result_count", "has_previous", "has_next"}`. Each location
row has an `id` (a UUID, no place name), `specs_per_node` (`gpu_model` such as
"h100-sxm5-80gb", `gpu_count` per node, CPU, RAM) and, per network fabric, a price and an
availability count: `gpu_price_ethernet`/`gpu_count_ethernet` and
`gpu_price_infiniband`/`gpu_count_infiniband`.

Prices are decimal strings in USD per GPU-hour (no currency field; the provider prints
"$1.99/GPU/hour"), stored with basis "gpu" and the node's GPU count, never multiplied here.
Ethernet and InfiniBand are two offers of the same node. The counts are availability only: a
count of 0 next to a published price is an offer that is sold out right now, not a missing one.
A fabric whose price is null is not sold and yields no offer. The `reserved_*` fields are
cluster reservations, not on-demand prices, and are not read.

Uncertain: the capture has one page (`has_next` false); no page parameter is documented. When
`has_next` is true the adapter asks for `?page=N+1` and fails the run if that page repeats rows
already seen, or if the rows of all pages do not add up to the first page's
`total_result_count`, rather than storing a snapshot it knows is incomplete.
"""

from __future__ import annotations

from typing import Any, ClassVar

from priceadvisor.collect.adapters.base import (
    Adapter,
    AdapterOutput,
    ProgressCallback,
    SourceFormatError,
    exact_price,
    gpus_free,
    json_number,
)
from priceadvisor.collect.http import HttpSession
from priceadvisor.records import PriceBasis, Pricing, RawQuote

FABRICS = ("ethernet", "infiniband")
MAX_PAGES = 50


class VoltageParkAdapter(Adapter):
    id: ClassVar[str] = "voltagepark"

    async def fetch(self, session: HttpSession, progress: ProgressCallback) -> AdapterOutput:
        url = self.endpoints["locations"]
        rows: dict[str, dict[str, Any]] = {}
        total: int | None = None
        for page in range(1, MAX_PAGES + 1):
            params = None if page == 1 else {"page": str(page)}
            document = await session.get_json(url, params=params)
            results, has_next = parse_result_page(document)
            total = stated_total(document) if total is None else total
            fresh = {str(r["id"]): r for r in results if str(r["id"]) not in rows}
            if results and not fresh:
                raise SourceFormatError(f"page {page} repeats earlier locations (paging changed?)")
            rows.update(fresh)
            progress(f"page {page}, {len(rows)} locations")
            if not has_next:
                if total is not None and total != len(rows):
                    raise SourceFormatError(
                        f"the source states {total} locations but its pages held {len(rows)}"
                    )
                return AdapterOutput(quotes=[q for r in rows.values() for q in parse_row(r, url)])
        raise SourceFormatError(f"more than {MAX_PAGES} pages of locations")


def parse_result_page(document: Any) -> tuple[list[dict[str, Any]], bool]:
    if not isinstance(document, dict) or not isinstance(document.get("results"), list):
        raise SourceFormatError("no 'results' list (format changed?)")
    for row in document["results"]:
        if not isinstance(row, dict) or "id" not in row or "specs_per_node" not in row:
            raise SourceFormatError("a location lacks 'id' or 'specs_per_node'")
    return document["results"], bool(document.get("has_next"))


def stated_total(document: dict[str, Any]) -> int | None:
    """The `total_result_count` of the first page; None when absent (it is optional)."""
    total = document.get("total_result_count")
    return total if isinstance(total, int) and not isinstance(total, bool) else None


def parse_row(row: dict[str, Any], url: str) -> list[RawQuote]:
    """One quote per fabric the location prices."""
    specs = row["specs_per_node"]
    if not isinstance(specs, dict):
        raise SourceFormatError(f"location {row['id']}: specs_per_node is not an object")
    return [
        _quote(row, specs, fabric, url)
        for fabric in FABRICS
        if row.get(f"gpu_price_{fabric}") is not None
    ]


def _quote(row: dict[str, Any], specs: dict[str, Any], fabric: str, url: str) -> RawQuote:
    model, count = str(specs.get("gpu_model") or ""), json_number(specs.get("gpu_count"))
    free = row.get(f"gpu_count_{fabric}")
    return RawQuote(
        region=str(row["id"]),
        instance_type=f"{model} x{specs.get('gpu_count')} {fabric}",
        pricing=Pricing.ON_DEMAND,
        price=exact_price(row[f"gpu_price_{fabric}"]),
        price_basis=PriceBasis.GPU,
        gpu_name_raw=model or None,
        gpu_count=count,
        vcpus=json_number(specs.get("cpu_count")),
        ram_gb=json_number(specs.get("ram_gb")),
        available=free > 0 if isinstance(free, int) and not isinstance(free, bool) else None,
        stock=gpus_free(free),
        source_url=url,
    )
