"""Data health for `doctor` and `providers`: freshness per provider, unmapped names, DB facts.

A provider is healthy when it is disabled, not configured (skipped on purpose), or its last
successful fetch is within twice its interval.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from priceadvisor.collect.adapters import REGISTRY
from priceadvisor.collect.fetch import plan
from priceadvisor.config import Settings
from priceadvisor.durations import format_duration
from priceadvisor.manifest import manifest
from priceadvisor.models import utcnow
from priceadvisor.store import db as store
from priceadvisor.store.reads import (
    Table,
    flagged_offers,
    provider_health,
    recent_rejections,
    unmapped_names,
)


@dataclass(slots=True)
class HealthReport:
    db_path: str
    db_bytes: int | None
    schema_version: int | None
    providers: Table
    unmapped: Table
    rejections: Table
    problems: list[str] = field(default_factory=list)
    # offers the offer guard flagged: shown, not a problem (they are kept out of advice)
    flagged: Table = field(default_factory=lambda: Table([], []))

    @property
    def healthy(self) -> bool:
        return not self.problems


def interval(settings: Settings, provider_id: str) -> float:
    return settings.provider(provider_id).interval or manifest(provider_id).interval


def check(settings: Settings) -> HealthReport:
    path = store.target(settings)
    empty = Table([], [])
    if not _exists(path):
        return HealthReport(
            store.describe(path),
            None,
            None,
            empty,
            empty,
            empty,
            [f"no database at {path}: run `priceadvisor fetch` first"],
        )
    with store.reader(path, settings.lock_timeout) as con:
        runs, unmapped = provider_health(con), unmapped_names(con)
        rejections, flagged = recent_rejections(con), flagged_offers(con)
        version = store.latest_version()
    size = path.stat().st_size if isinstance(path, Path) else None
    report = HealthReport(
        store.describe(path), size, version, _freshness(settings, runs), unmapped, rejections
    )
    report.problems = _problems(report.providers)
    report.flagged = flagged
    return report


def _freshness(settings: Settings, runs: Table) -> Table:
    by_provider = {row[0]: dict(zip(runs.columns, row, strict=True)) for row in runs.rows}
    columns = [
        "provider",
        "state",
        "last_success",
        "source",
        "max_age",
        "consecutive_failures",
        "offers",
        "last_error",
    ]
    rows = [_provider_state(settings, p, by_provider.get(p)) for p in sorted(REGISTRY)]
    return Table(columns, rows)


def _provider_state(
    settings: Settings, provider_id: str, run: dict[str, Any] | None
) -> tuple[Any, ...]:
    max_age = 2 * interval(settings, provider_id)
    base = (None, format_duration(max_age))
    if not settings.provider(provider_id).enabled:
        return (provider_id, "disabled", None, *base, None, None, None)
    skip = plan(settings, provider_id, offline_mode=False).skip_reason
    if skip and (run is None or run["last_success"] is None):
        return (provider_id, skip, None, *base, None, 0, None)
    if run is None:
        return (provider_id, "never fetched", None, *base, None, 0, None)
    last_ok: dt.datetime | None = run["last_success"]
    fresh = last_ok is not None and (utcnow() - last_ok).total_seconds() <= max_age
    failures = run["consecutive_failures"] or 0
    state = "fresh" if fresh else ("stale" if last_ok else "failing")
    if failures >= settings.daemon.failing_after:
        state = "failing"  # N runs in a row failed: the alerts' "provider failing" state
    elif fresh and failures:
        state = "fresh, last run failed"
    if state.startswith("fresh") and run["last_success_source"] == "recorded":
        state = state.replace("fresh", "recorded", 1)  # replayed responses are never fresh
    return (
        provider_id,
        state,
        last_ok,
        run["last_success_source"],
        base[1],
        run["consecutive_failures"],
        run["offers"],
        run["last_error"],
    )


def _problems(providers: Table) -> list[str]:
    bad = {"stale", "failing", "never fetched"}
    return [f"{row[0]}: {row[1]}" for row in providers.rows if row[1] in bad]


def providers_table(settings: Settings) -> Table:
    last = _last_runs(settings)
    columns = [
        "id",
        "name",
        "kind",
        "enabled",
        "configured",
        "interval",
        "endpoints",
        "last_status",
        "last_run",
    ]
    rows = []
    for provider_id in sorted(REGISTRY):
        spec, plan_ = manifest(provider_id), plan(settings, provider_id, offline_mode=False)
        status, when = last.get(provider_id, (None, None))
        rows.append(
            (
                provider_id,
                spec.name,
                "FX rates" if spec.kind == "fx" else "offers",
                settings.provider(provider_id).enabled,
                plan_.skip_reason or "yes",
                format_duration(interval(settings, provider_id)),
                plan_.endpoints,
                status,
                when,
            )
        )
    return Table(columns, rows)


def _exists(path: store.Target) -> bool:
    """A lake is there once configured: its reader says so if it holds no priceadvisor data."""
    return path.is_file() if isinstance(path, Path) else True


def _last_runs(settings: Settings) -> dict[str, tuple[str, dt.datetime]]:
    path = store.target(settings)
    if not _exists(path):
        return {}
    with store.reader(path, settings.lock_timeout) as con:
        rows = con.execute(
            "SELECT provider, arg_max(status, run_id), max(finished_at) FROM core.fetch_runs "
            "WHERE status <> 'running' GROUP BY provider"
        ).fetchall()
    return {r[0]: (r[1], r[2]) for r in rows}
