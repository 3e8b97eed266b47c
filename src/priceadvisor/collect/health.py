"""Data health for `doctor` and `providers`: freshness per provider, unmapped names, DB facts.

A provider is healthy when it is disabled, not configured (skipped on purpose), or its last
successful fetch is within twice its interval.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from priceadvisor.collect.adapters import REGISTRY
from priceadvisor.collect.fetch import plan
from priceadvisor.config import Settings
from priceadvisor.durations import format_duration
from priceadvisor.manifest import TERM_NAMES, Billing, billing_record, manifest
from priceadvisor.records import utcnow
from priceadvisor.store import ids, schema
from priceadvisor.store.availability import ProviderAvailability, listed_not_rentable
from priceadvisor.store.handle import Store
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


def check(settings: Settings, store: Store) -> HealthReport:
    empty = Table([], [])
    if not _exists(store):
        return HealthReport(
            store.describe(),
            None,
            None,
            empty,
            empty,
            empty,
            [f"no database at {store.describe()}: run `priceadvisor fetch` first"],
        )
    with store.reader() as con:
        runs, unmapped = provider_health(con), unmapped_names(con)
        rejections, flagged = recent_rejections(con), flagged_offers(con)
        rentable = {a.provider: a for a in listed_not_rentable(con)}
        behind = ids.sequences_behind(con)
        version = schema.latest_version()
    size = store.file.stat().st_size if store.file else None
    report = HealthReport(
        store.describe(),
        size,
        version,
        _freshness(settings, runs, rentable),
        unmapped,
        rejections,
    )
    report.problems = [*_problems(report.providers), *map(_sequence_problem, behind)]
    report.flagged = flagged
    return report


def _sequence_problem(behind: ids.Behind) -> str:
    """A sequence behind its table makes every insert of that table fail on its key."""
    return (
        f"{behind.describe()} (a kill -9 before a checkpoint?): the next write repairs it; "
        "run `priceadvisor fetch` once"
    )


def _freshness(settings: Settings, runs: Table, rentable: dict[str, ProviderAvailability]) -> Table:
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
        "not_rentable",
    ]
    rows = [
        (*_provider_state(settings, p, by_provider.get(p)), _not_rentable(rentable.get(p)))
        for p in sorted(REGISTRY)
    ]
    return Table(columns, rows)


def _not_rentable(found: ProviderAvailability | None) -> str | None:
    """ "3/40 (8%)": current offers the source lists but says cannot be rented now;
    "unknown" when the source says nothing about availability."""
    if found is None or not found.listed:
        return None
    if found.unknown == found.listed:
        return "unknown"
    return f"{found.not_rentable}/{found.listed} ({found.not_rentable_share:.0%})"


def _provider_state(
    settings: Settings, provider_id: str, run: dict[str, Any] | None
) -> tuple[Any, ...]:
    max_age = 2 * interval(settings, provider_id)
    base = (None, format_duration(max_age))
    if not settings.provider_enabled(provider_id):
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


def providers_table(settings: Settings, store: Store) -> Table:
    last = _last_runs(store)
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
        "billing_known",
        "billing",
    ]
    rows = []
    for provider_id in sorted(REGISTRY):
        spec, plan_ = manifest(provider_id), plan(settings, provider_id, offline_mode=False)
        status, when = last.get(provider_id, (None, None))
        rows.append(
            (
                provider_id,
                spec.name,
                {"fx": "FX rates", "api": "API token prices"}.get(spec.kind, "offers"),
                settings.provider_enabled(provider_id),
                plan_.skip_reason or "yes",
                format_duration(interval(settings, provider_id)),
                plan_.endpoints,
                status,
                when,
                *_billing(spec.kind, spec.billing),
            )
        )
    return Table(columns, rows)


def _billing(kind: str, billing: Billing | None) -> tuple[str | None, dict[str, Any] | None]:
    """How many billing terms a public page states, of how many, and the terms themselves
    (an FX source bills nothing)."""
    if kind != "prices":
        return None, None
    known = billing.known() if billing else 0
    return f"{known}/{len(TERM_NAMES)}", billing_record(billing)


def billing_table() -> Table:
    """One row per provider and billing term: value, the page stating it, a note."""
    rows = []
    for provider_id in sorted(REGISTRY):
        spec = manifest(provider_id)
        if spec.kind != "prices":
            continue
        record = billing_record(spec.billing)
        for name in TERM_NAMES:
            term = record[name]
            rows.append((provider_id, name, term["value"], term["source"], term["note"]))
    return Table(["provider", "term", "value", "source", "note"], rows)


def _exists(store: Store) -> bool:
    """A lake is there once configured: its reader says so if it holds no priceadvisor data."""
    return store.file.is_file() if store.file else True


def _last_runs(store: Store) -> dict[str, tuple[str, dt.datetime]]:
    if not _exists(store):
        return {}
    with store.reader() as con:
        rows = con.execute(
            "SELECT provider, arg_max(status, run_id), max(finished_at) FROM core.fetch_runs "
            "WHERE status <> 'running' GROUP BY provider"
        ).fetchall()
    return {r[0]: (r[1], r[2]) for r in rows}
