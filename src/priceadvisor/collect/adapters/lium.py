"""Lium marketplace nodes (Bittensor subnet 51; public feed, no key).

Format (verified against a real capture of `GET https://lium.io/api/public/v1/nodes` of
2026-09-10, trimmed to 4 nodes by its recorder): `{"generated_at", "count", "nodes": [...]}`,
no paging. A node: `id`, `gpu_model` ("RTX 5090", "H200", "A100-SXM4-80GB"), `gpu_count`,
`available_gpu_count`, `min_rentable_gpu_count`, `price_per_gpu_hour` (USD; there is no
currency field, the site shows $), `price_per_node_hour` (= gpu_count × the per-GPU price, not
read), `gpu_memory_gb` (per GPU; 140 for the H200, whose real size the catalog holds), CPU, RAM
and disk of the whole node, `tier` ("secure" or "spot"), `country_code`, `region` (the ISO
3166-2 subdivision within the country: "13" Tokyo, "MS" Mississippi), `city`, `rent_url`.
`count` should equal the number of nodes listed; nodes it counts but the list lacks are reported
in the progress line (not fatal: the meaning of `count` is not documented beyond the capture).

Which offers are published: a node can be rented in any count from `min_rentable_gpu_count` to
`available_gpu_count`, always at its per-GPU price. Per node, the counts 1, 2, 4 and 8 inside
that range are offers, and so is the whole node when every GPU of it is free (a 3- or 7-GPU
host); other counts (5 of 8) are rentable but not listed, to keep the offers comparable with
other providers' instance shapes. A node with fewer free GPUs than its minimum (rented, or a
whole-node minimum on a partly rented node) is not an offer now: counted and left out. A missing
minimum is read as "whole node only", the safe side. A node whose counts are not whole
numbers (a quoted one is read as its number) is passed on without a GPU count, so the core
rejects and counts it.

Tiers: `secure` is on-demand, `spot` is spot; a node without a tier (null) is counted and left
out, and any other tier fails the run. The region is the
node's ISO country code (so country and EU filters work) and the zone its subdivision
("US-MS"); a node without a country code is kept under region "unknown". Nodes are aggregated
(collect/asks.py): one quote per (country, subdivision, GPU model, count, tier) at the cheapest
per-GPU price, with the number of nodes and their median. Miner-set prices keep their float
residue (8.000300000000001); they are rounded only for display.

Uncertain: the capture holds 4 nodes; rented nodes (0 free), a null country code and the other
nullable fields (only `id` and `rent_url` are documented as never null) were not seen and are
handled as documented above. `/api/executors`, which carries a scheduled future price
(`pending_price_per_hour`), is not read.
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

REQUIRED = (
    "id",
    "gpu_model",
    "gpu_count",
    "available_gpu_count",
    "min_rentable_gpu_count",
    "price_per_gpu_hour",
    "tier",
    "country_code",
    "region",
)
TIERS = {"secure": Pricing.ON_DEMAND, "spot": Pricing.SPOT}
LISTED_COUNTS = (1, 2, 4, 8)
UNKNOWN_COUNTRY = "unknown"
NOT_RENTABLE = "nodes with fewer free GPUs than their minimum rental"
NO_TIER = "nodes without a tier"
UNLISTED = "nodes counted by the feed but not listed"


class LiumAdapter(Adapter):
    id: ClassVar[str] = "lium"

    async def fetch(self, session: HttpSession, progress: ProgressCallback) -> AdapterOutput:
        url = self.endpoints["nodes"]
        parsed = parse_feed(await session.get_json(url), url)
        progress(parsed.summary())
        return AdapterOutput(quotes=parsed.quotes)


def parse_feed(document: Any, url: str) -> ParsedPage:
    nodes = parse_nodes(document)
    parsed = ParsedPage()
    count = document.get("count")
    if isinstance(count, int) and count > len(nodes):
        parsed.skipped[UNLISTED] = count - len(nodes)
    asks: list[RawQuote] = []
    for node in nodes:
        if node["tier"] is None:
            parsed.skipped[NO_TIER] += 1
            continue
        counts = rentable_counts(node)
        if counts == []:
            parsed.skipped[NOT_RENTABLE] += 1
        asks.extend(node_asks(node, counts, url))
    parsed.quotes = cheapest_per_market(asks)
    return parsed


def parse_nodes(document: Any) -> list[dict[str, Any]]:
    if not isinstance(document, dict) or "nodes" not in document:
        raise SourceFormatError("no 'nodes' in the Lium feed (format changed?)")
    nodes = json_records(document["nodes"], REQUIRED, "the nodes", "a node")
    for node in nodes:
        if node["tier"] is not None and node["tier"] not in TIERS:
            raise SourceFormatError(f"node {node['id']} has unknown tier {node['tier']!r}")
    return nodes


def rentable_counts(node: dict[str, Any]) -> list[int] | None:
    """The GPU counts published for this node; None when its counts are not numbers."""
    total, free = json_count(node["gpu_count"]), json_count(node["available_gpu_count"])
    if total is None or free is None:
        return None
    minimum = json_count(node["min_rentable_gpu_count"]) or total
    counts = {c for c in LISTED_COUNTS if minimum <= c <= free}
    if free == total >= minimum:
        counts.add(total)
    return sorted(counts)


def node_asks(node: dict[str, Any], counts: list[int] | None, url: str) -> list[RawQuote]:
    if counts is None:
        return [_ask(node, None, url)]
    return [_ask(node, count, url) for count in counts]


def _ask(node: dict[str, Any], count: int | None, url: str) -> RawQuote:
    model = str(node["gpu_model"] or "unknown")
    country = str(node["country_code"] or "").upper() or UNKNOWN_COUNTRY
    subdivision = str(node["region"] or "").upper()
    return RawQuote(
        region=country,
        zone=f"{country}-{subdivision}" if subdivision and country != UNKNOWN_COUNTRY else "",
        instance_type=f"{model} x{count if count is not None else '?'}",
        pricing=TIERS[node["tier"]],
        price=exact_price(node["price_per_gpu_hour"]),
        price_basis=PriceBasis.GPU,
        gpu_name_raw=model,
        gpu_count=count,
        gpu_memory_gb=json_number(node.get("gpu_memory_gb")),
        available=True if count is not None else None,
        source_url=url,
    )
