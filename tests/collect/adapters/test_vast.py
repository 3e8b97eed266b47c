from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import duckdb
import pytest

from priceadvisor.collect.adapters.base import SourceFormatError
from priceadvisor.collect.adapters.vast import aggregate, country, parse_asks, parse_offers
from priceadvisor.collect.fetch import run_cycle
from priceadvisor.records import RunStatus
from priceadvisor.resources import recordings_dir
from priceadvisor.service.stores import configured_store
from tests.localserver import local_settings, serving

FOLDER = recordings_dir() / "vast"


def load(name: str) -> list[dict[str, Any]]:
    return parse_offers(json.loads((FOLDER / name).read_text()))


def test_country_from_geolocation() -> None:
    assert country("Washington, US") == "US"
    assert country(", US") == "US"
    assert country("Japan, JP") == "JP"
    assert country(None) == "unknown" and country("Somewhere") == "unknown"


def test_markets_keep_min_median_and_count_per_node() -> None:
    offers = load("bundles-rtx-4090.json")
    quotes = aggregate(offers, "u")
    for q in quotes:
        asks = [
            o
            for o in offers
            if country(o["geolocation"]) == q.region
            and f"RTX 4090 x{o['num_gpus']} {o['verification']}" == q.instance_type
        ]
        if q.pricing == "on_demand":
            prices = [o["dph_total"] for o in asks]
        else:
            prices = [o["min_bid"] + o["dph_total"] - o["dph_base"] for o in asks]
        assert q.price == pytest.approx(min(prices))
        assert q.price_median == pytest.approx(statistics.median(prices))
        assert q.offer_count == len(asks) and q.price_basis == "node"


def test_interruptible_is_the_bid_floor_not_the_on_demand_price() -> None:
    [offer] = load("bundles-rtx-4090.json")[:1]
    quotes = {q.pricing: q for q in aggregate([offer], "u")}
    assert quotes["spot"].price < quotes["on_demand"].price


@pytest.mark.parametrize(
    ("document", "message"),
    [({"bundles": []}, "no 'offers'"), ({"offers": [{"id": 1, "gpu_name": "H100"}]}, "lacks")],
)
def test_drift_is_a_format_error(document: Any, message: str) -> None:
    with pytest.raises(SourceFormatError, match=message):
        parse_offers(document)


def test_unusable_asks_are_passed_on_for_the_core_to_reject() -> None:
    offers = load("bundles-l40s.json")
    offers[1]["dph_total"] = "free"
    offers[2]["dph_total"] = 0
    quotes = aggregate(offers, "u")
    assert sum(q.price is None for q in quotes) == 2
    assert sum(q.offer_count or 0 for q in quotes if q.pricing == "on_demand") == len(offers) - 2


def test_fetch_pages_by_price_and_answers_cheapest_in_germany(db_path: Path) -> None:
    with serving("vast") as server:
        local = local_settings(db_path, server)
        [summary] = run_cycle(local, configured_store(local), ["vast"], False, lambda *_: None)
    assert summary.status is RunStatus.OK and summary.unmapped == 0
    assert summary.requests == 26  # 24 GPU names, H100 SXM on two pages, the discovery walk
    h100 = [o for n in ("bundles-h100-sxm-1.json", "bundles-h100-sxm-2.json") for o in load(n)]
    german = [o["dph_total"] / o["num_gpus"] for o in h100 if country(o["geolocation"]) == "DE"]
    con = duckdb.connect(str(db_path), read_only=True)
    [(cheapest,)] = con.execute(
        "SELECT min(price_gpu_hour_usd) FROM offers WHERE provider = 'vast' AND country = 'DE' "
        "AND gpu_model = 'H100-SXM-80GB' AND pricing = 'on_demand'"
    ).fetchall()
    [(asks,)] = con.execute(
        "SELECT sum(offer_count) FROM offers WHERE gpu_name_raw = 'H100 SXM' "
        "AND pricing = 'on_demand'"
    ).fetchall()
    models = dict(
        con.execute(
            "SELECT DISTINCT gpu_memory_gb, gpu_model FROM offers WHERE gpu_name_raw = 'A100 SXM4'"
        ).fetchall()
    )
    con.close()
    assert cheapest == pytest.approx(min(german))
    assert asks == 74  # the repeated boundary offer is counted once
    assert models == {40.0: "A100-SXM-40GB", 80.0: "A100-SXM-80GB"}


def test_verified_and_unverified_hosts_are_separate_offers_with_ask_counts() -> None:
    offers = load("bundles-rtx-4090.json")
    quotes = [q for q in aggregate(offers, "u") if q.pricing == "on_demand"]
    kinds = {q.instance_type.rsplit(" ", 1)[1] for q in quotes}
    assert kinds == {"verified", "unverified"}
    verified = sum(q.offer_count or 0 for q in quotes if q.instance_type.endswith(" verified"))
    assert verified == sum(o["verification"] == "verified" for o in offers)


def test_discovery_walk_finds_gpus_the_manifest_does_not_list(db_path: Path) -> None:
    with serving("vast") as server:
        local = local_settings(db_path, server)
        [summary] = run_cycle(local, configured_store(local), ["vast"], False, lambda *_: None)
    assert summary.status is RunStatus.OK and summary.unmapped == 0
    con = duckdb.connect(str(db_path), read_only=True)
    found = dict(
        con.execute(
            "SELECT DISTINCT gpu_name_raw, gpu_model FROM offers "
            "WHERE gpu_name_raw IN ('B300', 'RTX PRO 6000 WS', 'RTX 3070')"
        ).fetchall()
    )
    [(rejected,)] = con.execute(
        "SELECT count(*) FROM core.rejected_quotes WHERE instance_type = 'RTX 3070 x1 unverified'"
        " AND pricing = 'spot'"
    ).fetchall()
    con.close()
    assert found == {
        "B300": "B300-288GB",
        "RTX PRO 6000 WS": "RTXPRO6000-96GB",
        "RTX 3070": "RTX3070-8GB",
    }
    assert rejected == 1  # its bid floor is above its own on-demand ask


def test_a_failed_gpu_query_fails_the_run_and_keeps_offers(db_path: Path) -> None:
    with serving("vast") as server:
        settings = local_settings(db_path, server)
        [first] = run_cycle(settings, configured_store(settings), ["vast"], False, lambda *_: None)
        server.post_faults.append(
            lambda body: (429, {"Retry-After": "1"}, b"") if b"RTX 4090" in body else None
        )
        [second] = run_cycle(settings, configured_store(settings), ["vast"], False, lambda *_: None)
    assert second.status is RunStatus.FAILED and "HTTP 429" in (second.error or "")
    con = duckdb.connect(str(db_path), read_only=True)
    [(n,)] = con.execute("SELECT count(*) FROM offers WHERE provider = 'vast'").fetchall()
    con.close()
    assert n == first.offers_seen


async def test_requests_are_spaced_as_the_manifest_asks(monkeypatch: pytest.MonkeyPatch) -> None:
    import httpx

    import priceadvisor.collect.http as http_module
    from priceadvisor.collect.http import HttpSession, build_client
    from priceadvisor.config import HttpSettings

    waits: list[float] = []

    async def record(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(http_module.asyncio, "sleep", record)
    transport = httpx.MockTransport(lambda request: httpx.Response(200, json={"offers": []}))
    async with build_client(HttpSettings(), transport=transport) as client:
        session = HttpSession(client, HttpSettings(), min_interval=0.75)
        for _ in range(3):
            await session.post_json("http://127.0.0.1/x", {})
    assert len(waits) == 2 and all(0.5 < w <= 0.75 for w in waits)


pytestmark = pytest.mark.anyio


def test_each_market_keeps_the_disk_and_egress_prices_of_its_cheapest_ask() -> None:
    """Hosts price disk and bandwidth themselves (the real capture: $0.0067 to $0.53 per
    GB-month); a market's quote carries those of the ask its price is."""
    [cheap, dear] = load("bundles-rtx-4090.json")[:2]
    dear = dear | {"geolocation": cheap["geolocation"], "num_gpus": cheap["num_gpus"],
                   "verification": cheap["verification"], "dph_total": cheap["dph_total"] + 1,
                   "storage_cost": 0.53, "inet_up_cost": 0.008}  # fmt: skip
    cheap = cheap | {"storage_cost": 0.0067, "inet_up_cost": 0.000133}
    quotes = {q.pricing: q for q in aggregate([dear, cheap], "u")}
    on_demand = quotes["on_demand"]
    assert on_demand.offer_count == 2 and on_demand.price == pytest.approx(cheap["dph_total"])
    assert (on_demand.disk_usd_gb_month, on_demand.egress_usd_gb) == (0.0067, 0.000133)
    missing = {k: v for k, v in cheap.items() if k not in ("storage_cost", "inet_up_cost")}
    [alone] = [q for q in aggregate([missing], "u") if q.pricing == "on_demand"]
    assert (alone.disk_usd_gb_month, alone.egress_usd_gb) == (None, None)  # not stated: unknown


def test_asks_that_say_they_cannot_be_rented_are_counted_not_offered() -> None:
    """Each ask states `rentable` and `rented` itself; the query's filter is not the only word."""
    offers = load("bundles-l40s.json")
    offers[0] = offers[0] | {"rentable": False}
    offers[1] = offers[1] | {"rented": True}
    offers[2] = offers[2] | {"rentable": None}  # says nothing: the filter asked for rentable
    parsed = parse_asks(offers, "u")
    assert parsed.skipped == {"asks not rentable or already rented": 2}
    on_demand = [q for q in parsed.quotes if q.pricing == "on_demand"]
    assert sum(q.offer_count or 0 for q in on_demand) == len(offers) - 2


@pytest.mark.parametrize("count", [None, "four", 0, 1.5])
def test_an_ask_without_a_usable_gpu_count_is_passed_on_for_the_core_to_reject(
    count: Any,
) -> None:
    offers = load("bundles-l40s.json")
    offers[0] = offers[0] | {"num_gpus": count}
    quotes = aggregate(offers, "u")
    [unusable] = [q for q in quotes if q.gpu_count is None]
    assert unusable.price is None
    assert sum(q.offer_count or 0 for q in quotes if q.pricing == "on_demand") == len(offers) - 1


class SamePriceSource:
    """A marketplace with more asks at one price than a page holds: every page is the same."""

    def __init__(self, page: dict[str, Any]) -> None:
        self.page = page

    async def post_json(self, url: str, body: Any) -> Any:
        return self.page


def test_a_full_page_that_brings_nothing_new_fails_instead_of_stopping_early() -> None:
    import asyncio

    from priceadvisor.collect.adapters.vast import PAGE_LIMIT, VastAdapter
    from priceadvisor.manifest import manifest

    [template] = load("bundles-l40s.json")[:1]
    page = {"offers": [template | {"id": n} for n in range(PAGE_LIMIT)]}
    adapter = VastAdapter(manifest("vast"), {"bundles": "https://x/bundles"})
    with pytest.raises(SourceFormatError, match="brings none not seen yet"):
        asyncio.run(adapter.fetch(SamePriceSource(page), lambda _: None))  # type: ignore[arg-type]


def test_an_unreadable_price_on_a_full_page_does_not_stop_the_walk() -> None:
    """The cursor is the page's highest readable price; the unreadable ask goes to the core."""
    import asyncio

    from priceadvisor.collect.adapters.vast import PAGE_LIMIT, VastAdapter
    from priceadvisor.manifest import manifest

    [template] = load("bundles-l40s.json")[:1]
    first = [template | {"id": n, "dph_total": 0.5 + n / 100} for n in range(PAGE_LIMIT)]
    first[0] = first[0] | {"dph_total": None}
    pages = [{"offers": first}, {"offers": [template | {"id": 999, "dph_total": 9.0}]}]

    class TwoPages:
        def __init__(self) -> None:
            self.cursors: list[float] = []

        async def post_json(self, url: str, body: Any) -> Any:
            if body["gpu_name"] != {"eq": "L40S"}:
                return {"offers": []}
            self.cursors.append(body["dph_total"]["gte"])
            return pages[1] if body["dph_total"]["gte"] > 0 else pages[0]

    source = TwoPages()
    adapter = VastAdapter(manifest("vast"), {"bundles": "https://x/bundles"})
    output = asyncio.run(adapter.fetch(source, lambda _: None))  # type: ignore[arg-type]
    assert max(source.cursors) == pytest.approx(0.5 + (PAGE_LIMIT - 1) / 100)
    assert sum(q.price is None for q in output.quotes) >= 1  # the null price, for the core
