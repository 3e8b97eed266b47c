"""One fetch cycle: every selected provider fetched concurrently, each ingested on its own.

Network work happens without holding the database: the writer is opened briefly to record the
runs as started, then again to ingest the results (DESIGN §4, one writer). A provider that
fails, hangs past its deadline or crashes becomes a failed run; the others are unaffected.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import SecretStr

from priceadvisor.collect import offline
from priceadvisor.collect.adapters import adapter_class
from priceadvisor.collect.adapters.base import Adapter, SourceFormatError, resolve_endpoint
from priceadvisor.collect.http import FetchError, HttpSession, ValidatorCache, build_client
from priceadvisor.config import ConfigError, Settings, lookup_secret
from priceadvisor.manifest import manifest
from priceadvisor.models import FetchResult, IngestSummary, RunStatus, utcnow
from priceadvisor.store import db as store
from priceadvisor.store.ingest import ingest
from priceadvisor.store.validators import (
    StoredValidatorCache,
    load_validators,
    save_validators,
)

log = logging.getLogger(__name__)

ProgressSink = Callable[[str, str], None]  # (provider, message)


@dataclass(frozen=True, slots=True)
class ProviderPlan:
    provider: str
    endpoints: dict[str, str]
    credential: SecretStr | None
    skip_reason: str | None
    deadline: float
    request_spacing: float = 0.0


def plan(settings: Settings, provider_id: str, offline_mode: bool) -> ProviderPlan:
    """Endpoints after overrides, the credential, and whether the provider can run at all."""
    adapter_class(provider_id)  # unknown provider -> UnknownProviderError
    spec = manifest(provider_id)
    overrides = {} if offline_mode else settings.provider(provider_id).endpoints
    unknown = set(overrides) - set(spec.endpoints)
    if unknown:
        name, known = sorted(unknown)[0], ", ".join(spec.endpoints)
        raise ConfigError(
            f"invalid config: providers.{provider_id}.endpoints: unknown endpoint {name!r} "
            f"(known: {known})"
        )
    endpoints = {n: resolve_endpoint(u, overrides.get(n)) for n, u in spec.endpoints.items()}
    credential = _credential(settings, provider_id)
    configured = settings.provider(provider_id).request_spacing
    default = float(spec.source.get("request_spacing", 0.0))
    spacing = 0.0 if offline_mode else (default if configured is None else configured)
    return ProviderPlan(
        provider_id,
        endpoints,
        credential,
        _skip_reason(provider_id, credential, offline_mode),
        settings.provider(provider_id).deadline,
        spacing,
    )


def _credential(settings: Settings, provider_id: str) -> SecretStr | None:
    explicit = settings.provider(provider_id).api_key
    env_name = manifest(provider_id).credential_env
    return explicit or (lookup_secret(settings, env_name) if env_name else None)


def _skip_reason(provider_id: str, credential: SecretStr | None, offline_mode: bool) -> str | None:
    spec = manifest(provider_id)
    if offline_mode:
        return None if offline.has_recordings(provider_id) else "no offline recordings"
    if spec.credential_required and credential is None:
        return f"not configured: set {spec.credential_env}"
    return None


def enabled_providers(settings: Settings, registry_ids: list[str]) -> list[str]:
    return [p for p in registry_ids if settings.provider(p).enabled]


async def fetch_one(
    settings: Settings,
    plan_: ProviderPlan,
    offline_mode: bool,
    progress: ProgressSink,
    cache: ValidatorCache | None = None,
) -> FetchResult:
    """Fetch one provider; never raises: every failure is a failed FetchResult."""
    result = FetchResult(provider=plan_.provider, status=RunStatus.FAILED)
    if plan_.skip_reason:
        result.status, result.error, result.finished_at = (
            RunStatus.SKIPPED,
            plan_.skip_reason,
            utcnow(),
        )
        return result
    transport = offline.transport(plan_.provider) if offline_mode else None
    async with build_client(settings.http, transport=transport) as client:
        session = HttpSession(client, settings.http, cache, plan_.request_spacing)
        adapter = _adapter(plan_)
        await _run_adapter(adapter, session, result, plan_, progress)
        result.requests, result.bytes = session.requests, session.bytes
    result.finished_at = utcnow()
    return result


def _adapter(plan_: ProviderPlan) -> Adapter:
    cls = adapter_class(plan_.provider)
    return cls(manifest(plan_.provider), plan_.endpoints, plan_.credential)


async def _run_adapter(
    adapter: Adapter,
    session: HttpSession,
    result: FetchResult,
    plan_: ProviderPlan,
    progress: ProgressSink,
) -> None:
    try:
        async with asyncio.timeout(plan_.deadline):
            output = await adapter.fetch(session, lambda msg: progress(plan_.provider, msg))
    except (FetchError, SourceFormatError) as exc:
        result.error = str(exc)
    except TimeoutError:
        result.error = f"gave up after the {plan_.deadline:.0f} s deadline"
    except Exception as exc:  # an adapter bug must not stop the other providers
        log.exception("adapter %s crashed", plan_.provider)
        result.error = f"internal error in the {plan_.provider} adapter: {type(exc).__name__}"
    else:
        result.quotes = output.quotes
        result.fx_rates = output.fx_rates
        result.complete_scopes = frozenset(output.complete_scopes)
        result.status = RunStatus.PARTIAL if output.failed_scopes else RunStatus.OK
        if output.failed_scopes:
            result.error = "; ".join(f"{s}: {e}" for s, e in sorted(output.failed_scopes.items()))


async def fetch_all(
    settings: Settings,
    plans: list[ProviderPlan],
    offline_mode: bool,
    progress: ProgressSink,
    caches: dict[str, StoredValidatorCache] | None = None,
) -> list[FetchResult]:
    caches = caches or {}
    tasks = [fetch_one(settings, p, offline_mode, progress, caches.get(p.provider)) for p in plans]
    return list(await asyncio.gather(*tasks))


def start_runs(settings: Settings, path: Path, providers: list[str]) -> list[int]:
    """Record runs as started (a short write) so a crash mid-fetch leaves a trace."""
    with store.writer(path, settings.lock_timeout) as con:
        return [store.start_run(con, provider) for provider in providers]


def prepare_runs(
    settings: Settings, path: Path, providers: list[str]
) -> tuple[list[int], dict[str, StoredValidatorCache]]:
    """Start the runs and load each provider's stored ETag / Last-Modified validators, in one
    short writer session."""
    with store.writer(path, settings.lock_timeout) as con:
        run_ids = [store.start_run(con, provider) for provider in providers]
        return run_ids, {provider: load_validators(con, provider) for provider in providers}


def ingest_results(
    settings: Settings,
    path: Path,
    run_ids: list[int],
    results: list[FetchResult],
    caches: Sequence[StoredValidatorCache] = (),
) -> list[IngestSummary]:
    """Ingest fetch results in one writer session; FX first, so this cycle's non-USD prices
    convert at this cycle's rates. Renewed validators are saved in the same session.
    Summaries come back in the order of `results`."""
    runs = sorted(zip(run_ids, results, strict=True), key=lambda r: _fx_first(r[1].provider))
    with store.writer(path, settings.lock_timeout) as con:
        summaries = {
            result.provider: ingest(con, run_id, result, manifest(result.provider))
            for run_id, result in runs
        }
        for cache in caches:
            save_validators(con, cache)
    return [summaries[r.provider] for r in results]


def run_cycle(
    settings: Settings,
    provider_ids: list[str],
    offline_mode: bool,
    progress: ProgressSink,
    db_path: Path | None = None,
) -> list[IngestSummary]:
    """Record the runs as started, fetch concurrently, then ingest each result."""
    plans = [plan(settings, p, offline_mode) for p in provider_ids]
    path = db_path or settings.db_path()
    run_ids, caches = prepare_runs(settings, path, [p.provider for p in plans])
    results = asyncio.run(fetch_all(settings, plans, offline_mode, progress, caches))
    return ingest_results(settings, path, run_ids, results, list(caches.values()))


def _fx_first(provider_id: str) -> int:
    return 0 if manifest(provider_id).kind == "fx" else 1
