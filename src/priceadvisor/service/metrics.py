"""The daemon's Prometheus metrics: its own counters, freshness computed at every scrape, the
cheapest current prices and each workload's best cost (read from the store at scrape time,
cached for a few seconds), the process/platform/GC collectors and stamina's retry counter.
Served by service.web.

Price series are bounded (docs/operations.md): `priceadvisor_gpu_hour_usd_min` has at most
catalog GPU models x 2 rentable pricing kinds series, the per-provider variant (off by default)
that times the number of providers, and each workload gauge one series per configured workload.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import Collector
from stamina.instrumentation import get_prometheus_counter

from priceadvisor.collect.http import install_retry_hooks
from priceadvisor.records import utcnow
from priceadvisor.store.errors import StoreError
from priceadvisor.store.pricegauges import GpuHourPrice, PriceGauges

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Freshness:
    """A provider's last successful fetch (naive UTC, as stored) and the age that is stale."""

    last_success: dt.datetime | None
    max_age: float

    def fresh(self, now: dt.datetime) -> bool:
        last = self.last_success
        return last is not None and (now - last).total_seconds() <= self.max_age


FreshnessSource = Callable[[], Mapping[str, Freshness]]


class _FreshnessCollector(Collector):
    """Freshness computed at every scrape, from what the daemon knows (loaded from the database
    at start, updated after each run): never a value left over from the last /healthz call."""

    def __init__(self, source: FreshnessSource) -> None:
        self.source = source

    def collect(self) -> Iterator[GaugeMetricFamily]:
        now, states = utcnow(), self.source()
        last = GaugeMetricFamily(
            "priceadvisor_last_success_timestamp_seconds",
            "Unix time of the last ok/partial fetch",
            labels=["provider"],
        )
        fresh = GaugeMetricFamily(
            "priceadvisor_provider_fresh",
            "1 if the provider succeeded within 2x its interval",
            labels=["provider"],
        )
        for provider, state in sorted(states.items()):
            if state.last_success is not None:
                last.add_metric([provider], state.last_success.replace(tzinfo=dt.UTC).timestamp())
            fresh.add_metric([provider], 1.0 if state.fresh(now) else 0.0)
        yield last
        yield fresh


PriceSource = Callable[[], PriceGauges]
# Names of the price gauges: the Grafana dashboard in deploy/ queries these (a test checks).
PRICE_METRICS = (
    "priceadvisor_gpu_hour_usd_min",
    "priceadvisor_provider_gpu_hour_usd_min",
    "priceadvisor_workload_best_cost_usd",
    "priceadvisor_workload_best_usd_per_mtok",
    "priceadvisor_workload_best_monthly_usd",
    "priceadvisor_price_metrics_ok",
)


class _CachedPrices:
    """The last read kept for `ttl` seconds: scrapes from several Prometheus replicas (or a
    reload of a dashboard) cost one read. A failed read (the writer holds the file past the
    lock timeout) is not cached and serves nothing stale: the `ok` gauge says it failed."""

    def __init__(self, read: PriceSource, ttl: float) -> None:
        self.read, self.ttl = read, ttl
        self._lock = threading.Lock()
        self._kept: tuple[float, PriceGauges] | None = None

    def get(self) -> PriceGauges | None:
        with self._lock:
            now = time.monotonic()
            if self._kept is not None and now - self._kept[0] < self.ttl:
                return self._kept[1]
            try:
                self._kept = (now, self.read())
            except StoreError as exc:
                log.warning("price metrics not read: %s", exc, extra={"job": "metrics"})
                self._kept = None
                return None
            return self._kept[1]


def _gpu_hour_family(name: str, doc: str, prices: list[GpuHourPrice]) -> GaugeMetricFamily:
    per_provider = any(p.provider is not None for p in prices)
    labels = ["gpu_model", "pricing", *(["provider"] if per_provider else [])]
    family = GaugeMetricFamily(name, doc, labels=labels)
    for price in prices:
        values = [price.gpu_model, price.pricing]
        family.add_metric([*values, price.provider] if price.provider else values, price.usd)
    return family


def _workload_families(gauges: PriceGauges) -> Iterator[GaugeMetricFamily]:
    for field, doc in (
        ("cost_usd", "Best offer's cost of the whole training run (advice rank 1), USD"),
        ("usd_per_mtok", "Best offer's USD per million output tokens (advice rank 1)"),
        ("monthly_usd", "Best offer's monthly cost at the workload's volume (advice rank 1)"),
    ):
        family = GaugeMetricFamily(f"priceadvisor_workload_best_{field}", doc, labels=["workload"])
        for best in gauges.workloads:
            value = getattr(best, field)
            if value is not None:
                family.add_metric([best.workload], float(value))
        yield family


class _PriceCollector(Collector):
    def __init__(self, prices: _CachedPrices) -> None:
        self.prices = prices

    def collect(self) -> Iterator[GaugeMetricFamily]:
        gauges = self.prices.get()
        ok = GaugeMetricFamily(
            "priceadvisor_price_metrics_ok", "1 if the price gauges were read at this scrape"
        )
        ok.add_metric([], 0.0 if gauges is None else 1.0)
        yield ok
        if gauges is None:
            return
        yield _gpu_hour_family(
            "priceadvisor_gpu_hour_usd_min",
            "Cheapest current published $/GPU-hour per GPU model and pricing",
            gauges.cheapest,
        )
        if gauges.by_provider:
            yield _gpu_hour_family(
                "priceadvisor_provider_gpu_hour_usd_min",
                "Cheapest current published $/GPU-hour per GPU model, pricing and provider",
                gauges.by_provider,
            )
        yield from _workload_families(gauges)


class Metrics:
    def __init__(
        self,
        freshness: FreshnessSource | None = None,
        prices: PriceSource | None = None,
        prices_ttl: float = 30.0,
    ) -> None:
        self.registry = CollectorRegistry()
        self.fetches = Counter(
            "priceadvisor_fetch_runs",
            "Fetch runs by provider and outcome",
            ["provider", "outcome"],
            registry=self.registry,
        )
        self.duration = Histogram(
            "priceadvisor_fetch_duration_seconds",
            "Wall time of one fetch job",
            ["provider"],
            buckets=(0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300),
            registry=self.registry,
        )
        self.offers = Gauge(
            "priceadvisor_offers",
            "Current offers per provider",
            ["provider"],
            registry=self.registry,
        )
        self.notifications = Counter(
            "priceadvisor_notifications",
            "Notifications by outcome",
            ["channel", "outcome"],
            registry=self.registry,
        )
        self.maintenance = Counter(
            "priceadvisor_lake_maintenance",
            "Lake maintenance runs of this daemon by outcome (ok, failed)",
            ["outcome"],
            registry=self.registry,
        )
        self._register_standard_collectors()
        if freshness is not None:
            self.registry.register(_FreshnessCollector(freshness))
        if prices is not None:
            self.registry.register(_PriceCollector(_CachedPrices(prices, prices_ttl)))

    def _register_standard_collectors(self) -> None:
        """process_* (memory, CPU, open fds), python_info, python_gc_*, and stamina's own
        stamina_retries_total counter of the HTTP retries."""
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        install_retry_hooks()
        retries = get_prometheus_counter()
        if retries is not None:
            self.registry.register(retries)

    def exposition(self, accept: str | None = None) -> tuple[bytes, str]:
        """The registry in the format the scraper asked for (text or OpenMetrics)."""
        encoder, content_type = choose_encoder(accept or "")
        return encoder(self.registry), content_type


HealthCheck = Callable[[], tuple[bool, dict[str, Any]]]
