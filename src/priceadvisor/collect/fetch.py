"""One fetch cycle: every selected provider fetched concurrently, each ingested on its own.

Network work happens without holding the database: the writer is opened briefly to record the
runs as started, then again to ingest the results. Both writes wait their turn while another
process (a reader, the daemon, another fetch) holds the file, however long that takes: fetched
data is kept in memory until it is ingested, never dropped because the database is busy. A
provider that fails, hangs past its deadline or crashes becomes a failed run; the others are
unaffected, and a run whose ingest fails is finished as failed, never left `running`.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import duckdb
from pydantic import SecretStr

from priceadvisor.collect import offline, recorder
from priceadvisor.collect.adapters import adapter_class
from priceadvisor.collect.adapters.base import (
    Adapter,
    SourceFormatError,
    resolve_endpoint,
    summarise_failures,
)
from priceadvisor.collect.http import (
    FetchError,
    HttpSession,
    ResponseLimits,
    ValidatorCache,
    build_client,
)
from priceadvisor.config import Settings, lookup_secret
from priceadvisor.config_basics import ConfigError
from priceadvisor.manifest import manifest
from priceadvisor.records import FetchResult, IngestSummary, RunStatus, utcnow
from priceadvisor.store import clustering, errors, guard, runs, transactions
from priceadvisor.store.handle import Store
from priceadvisor.store.http_cache import (
    StoredValidatorCache,
    load_validators,
    save_validators,
)
from priceadvisor.store.ingest import ingest, stage_quotes

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
    limits: ResponseLimits = field(default_factory=ResponseLimits)


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
        _limits(settings, provider_id),
    )


def _limits(settings: Settings, provider_id: str) -> ResponseLimits:
    """The manifest's size cap and redirect policy, unless the config overrides them."""
    spec, configured = manifest(provider_id), settings.provider(provider_id)
    return ResponseLimits(
        max_bytes=configured.max_response_size or spec.max_response_size,
        redirects=configured.redirects or spec.redirects,
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
    return [p for p in registry_ids if settings.provider_enabled(p)]


async def fetch_one(
    settings: Settings,
    plan_: ProviderPlan,
    offline_mode: bool,
    progress: ProgressSink,
    cache: ValidatorCache | None = None,
    record_dir: Path | None = None,
) -> FetchResult:
    """Fetch one provider; never raises: every failure is a failed FetchResult. With
    `record_dir` every response is also written there as a recording (`fetch --record`)."""
    result = FetchResult(provider=plan_.provider, status=RunStatus.FAILED)
    if plan_.skip_reason:
        result.status, result.error, result.finished_at = (
            RunStatus.SKIPPED,
            plan_.skip_reason,
            utcnow(),
        )
        return result
    transport = offline.transport(plan_.provider) if offline_mode else None
    taping = _recorder(plan_, record_dir)
    async with build_client(settings.http, transport=transport) as client:
        session = HttpSession(
            client,
            settings.http,
            cache if taping is None else None,  # a 304 has no body to record
            plan_.request_spacing,
            plan_.limits,
            label=plan_.provider,
            on_retry=lambda msg: progress(plan_.provider, msg),
            on_response=taping.record if taping is not None else None,
        )
        adapter = _adapter(plan_)
        await _run_adapter(adapter, session, result, plan_, progress)
        if taping is not None:
            taping.finish(utcnow())
        result.requests, result.bytes = session.requests, session.bytes
        if result.error and session.retries:
            result.error += f" ({session.retries} retries)"
    result.finished_at = utcnow()
    return result


def _recorder(plan_: ProviderPlan, record_dir: Path | None) -> recorder.Recorder | None:
    if record_dir is None:
        return None
    secret = plan_.credential.get_secret_value() if plan_.credential else ""
    return recorder.Recorder(
        plan_.provider, record_dir / plan_.provider, plan_.endpoints, (secret,) if secret else ()
    )


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
    except RecursionError:  # json and the HTML/XML parsers recurse once per nesting level
        result.error = f"the {plan_.provider} response is nested too deeply to read"
    except Exception as exc:  # an adapter bug must not stop the other providers
        log.exception("adapter %s crashed", plan_.provider)
        result.error = f"internal error in the {plan_.provider} adapter: {type(exc).__name__}"
    else:
        result.quotes = output.quotes
        result.fx_rates = output.fx_rates
        result.api_prices = output.api_prices
        result.complete_scopes = frozenset(output.complete_scopes)
        result.status = RunStatus.PARTIAL if output.failed_scopes else RunStatus.OK
        if output.failed_scopes:
            result.error = summarise_failures(output.failed_scopes)


async def fetch_all(
    settings: Settings,
    plans: list[ProviderPlan],
    offline_mode: bool,
    progress: ProgressSink,
    caches: dict[str, StoredValidatorCache] | None = None,
    record_dir: Path | None = None,
) -> list[FetchResult]:
    caches = caches or {}
    tasks = [
        fetch_one(settings, p, offline_mode, progress, caches.get(p.provider), record_dir)
        for p in plans
    ]
    return list(await asyncio.gather(*tasks))


def start_runs(
    store: Store,
    providers: list[str],
    give_up: threading.Event,
    offline_mode: bool = False,
) -> list[int]:
    """Record runs as started (a short write, on our turn) so a crash mid-fetch leaves a trace,
    and whether they replay the recorded responses; runs left `running` by processes that are
    gone (a Ctrl-C'd fetch) are marked abandoned."""
    with store.writer(give_up=give_up) as con:
        return transactions.retry_conflicts(_start)(con, providers, offline_mode)


def prepare_runs(
    store: Store,
    providers: list[str],
    give_up: threading.Event,
    offline_mode: bool = False,
) -> tuple[list[int], dict[str, StoredValidatorCache]]:
    """Start the runs (as `start_runs`) and load each provider's stored ETag / Last-Modified
    validators, in one short writer session."""
    with store.writer(give_up=give_up) as con:
        run_ids = transactions.retry_conflicts(_start)(con, providers, offline_mode)
        return run_ids, {provider: load_validators(con, provider) for provider in providers}


def _start(con: duckdb.DuckDBPyConnection, providers: list[str], offline_mode: bool) -> list[int]:
    source = "recorded" if offline_mode else "live"
    runs.mark_abandoned_runs(con)
    return runs.start_runs(con, providers, source)


def ingest_results(
    settings: Settings,
    store: Store,
    run_ids: list[int],
    results: list[FetchResult],
    give_up: threading.Event,
    caches: Sequence[StoredValidatorCache] = (),
) -> list[IngestSummary]:
    """Ingest fetch results in one writer session once it is our turn (until `give_up` is set);
    FX first, so this cycle's non-USD prices convert at this cycle's rates; renewed validators
    are saved in the same session. Summaries come back in the order of `results`. If the ingest
    fails, runs it did not finish are finished as failed (abandoned when given up) before the
    error goes on."""
    ordered = sorted(zip(run_ids, results, strict=True), key=lambda r: _fx_first(r[1].provider))
    try:
        # no vacuum at the end: the next cycle's run start reclaims the closed rows' space
        with store.writer(give_up=give_up, vacuum=False) as con:
            summaries = {
                result.provider: _ingest_one(con, settings, run_id, result)
                for run_id, result in ordered
            }
            for cache in caches:
                save_validators(con, cache)
            transactions.retry_conflicts(guard.reconfirm_after_cycle)(con, utcnow())
            _record_intervals(con, settings, ordered)
            _keep_clustered(con)
    except errors.StoreError as exc:
        _finish_unfinished(store, run_ids, exc, give_up.is_set())
        raise
    except duckdb.Error as exc:
        _finish_unfinished(store, run_ids, exc, gave_up=False)
        raise errors.StoreError(f"ingest failed: {errors.first_line(exc)}") from exc
    return [_whole_run(summaries[r.provider], r) for r in results]


def _ingest_one(
    con: duckdb.DuckDBPyConnection, settings: Settings, run_id: int, result: FetchResult
) -> IngestSummary:
    """One result merged. Its quotes leave the result as they are handed to the store
    (store.ingest.stage_quotes): nothing here needs them after the ingest, and a retried ingest
    reads the same staged batches."""
    staged = stage_quotes(result.quotes)
    return transactions.retry_conflicts(ingest)(
        con,
        run_id,
        result,
        manifest(result.provider),
        settings.provider(result.provider).min_offer_share,
        settings.provider(result.provider).allow_flagged,
        staged,
    )


def _record_intervals(
    con: duckdb.DuckDBPyConnection, settings: Settings, runs: list[tuple[int, FetchResult]]
) -> None:
    """Each run's fetch interval, so readers without the configuration can tell stale prices
    (store.reads.stale_providers)."""
    run_ids = [run_id for run_id, _ in runs]
    seconds = [_interval(settings, result.provider) for _, result in runs]
    con.execute(  # one statement for the cycle: the writer's turn is shared with every reader
        "UPDATE core.fetch_runs AS f SET interval_s = v.seconds"
        " FROM (SELECT unnest(?::BIGINT[]) AS run_id, unnest(?::DOUBLE[]) AS seconds) AS v"
        " WHERE f.run_id = v.run_id",
        [run_ids, seconds],
    )


def _interval(settings: Settings, provider: str) -> float:
    return settings.provider(provider).interval or manifest(provider).interval


def _keep_clustered(con: duckdb.DuckDBPyConnection) -> None:
    """Rewrite current offers in storage order when the ingests' appended rows call for it. Only
    reads get faster from it: a failure is logged, and the stored snapshots stand."""
    try:
        transactions.retry_conflicts(clustering.keep_clustered)(con)
    except duckdb.Error as exc:
        log.warning("current offers not rewritten in storage order: %s", errors.first_line(exc))


def _whole_run(summary: IngestSummary, result: FetchResult) -> IngestSummary:
    """A run lasts its fetch plus its ingest, not the ingest alone (nor the wait for the other
    providers of the cycle in between)."""
    fetching = (result.finished_at or result.started_at) - result.started_at
    return replace(summary, duration_s=fetching.total_seconds() + summary.duration_s)


def _finish_unfinished(store: Store, run_ids: list[int], exc: Exception, gave_up: bool) -> None:
    status = "abandoned" if gave_up else "failed"
    reason = f"the snapshot could not be stored: {errors.first_line(exc)}"
    try:
        with store.writer() as con:
            runs.fail_runs(con, run_ids, status, reason)
    except errors.StoreError as second:
        # The next writer to open the file marks the runs abandoned once this process is gone.
        log.error("could not record runs %s as %s: %s", run_ids, status, second)


def run_cycle(
    settings: Settings,
    store: Store,
    provider_ids: list[str],
    offline_mode: bool,
    progress: ProgressSink,
    record_dir: Path | None = None,
) -> list[IngestSummary]:
    """Record the runs as started in `store`, fetch concurrently, then ingest each result.
    `record_dir`: also write every response as recordings (a live fetch only;
    recorder.RecordError when the folder already holds a provider's recordings)."""
    plans = [plan(settings, p, offline_mode) for p in provider_ids]
    if record_dir is not None:
        for provider in provider_ids:
            recorder.prepare(record_dir, provider)
    patient = threading.Event()  # never set: a CLI fetch waits its turn until interrupted
    providers = [p.provider for p in plans]
    run_ids, caches = prepare_runs(store, providers, patient, offline_mode)
    results = asyncio.run(fetch_all(settings, plans, offline_mode, progress, caches, record_dir))
    return ingest_results(settings, store, run_ids, results, patient, list(caches.values()))


def _fx_first(provider_id: str) -> int:
    return 0 if manifest(provider_id).kind == "fx" else 1
