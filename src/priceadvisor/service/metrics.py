"""The daemon's Prometheus metrics: its own counters, freshness computed at every scrape, the
process/platform/GC collectors and stamina's retry counter. Served by service.web."""

from __future__ import annotations

import datetime as dt
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


class Metrics:
    def __init__(self, freshness: FreshnessSource | None = None) -> None:
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
