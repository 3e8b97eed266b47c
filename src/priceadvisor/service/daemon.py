"""`priceadvisor run`: the long-running service.

An APScheduler 3 AsyncIOScheduler with an in-memory job store rebuilt from config at every
start: one fetch job per enabled, configured provider (its interval, with jitter,
max_instances=1, coalescing, a misfire grace of half the interval). Providers whose data is
older than their interval are fetched at once. Network work runs on the event loop; every
DuckDB write runs in a worker thread and opens the database only for that write (one writer).
After each fetch job the after-fetch hooks run: the advice ranking (when workloads are
configured), the optional Parquet export, and the alert hooks (filled by the alerts feature).

One daemon per DuckDB file: an OS lock on `<db>.daemon.lock` is held for the daemon's life and
a second daemon is refused with the first one's PID. Fetched data waits (in memory) for its turn
at the writer however long readers or CLI fetches hold the file. A lake takes several daemons,
each fetching its own providers (`[daemon] providers`); the jobs that must run once per store
(alert evaluation, the digest, lake maintenance) run in the holder of their lease (store.leases).

SIGTERM/SIGINT stop the scheduler, give a running job `shutdown_grace` to finish (an ingest
still waiting for the database then gives up), then cancel it; a run left unfinished is marked
`abandoned`, at shutdown or at the next start (its process is gone).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import datetime as dt
import logging
import signal
import threading
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from priceadvisor.collect.adapters import REGISTRY
from priceadvisor.collect.fetch import (
    enabled_providers,
    fetch_one,
    ingest_results,
    plan,
    prepare_runs,
    start_runs,
)
from priceadvisor.collect.health import interval
from priceadvisor.config import Settings, lookup_secret
from priceadvisor.notify import alerts, outbox
from priceadvisor.notify import digest as digests
from priceadvisor.records import IngestSummary, RunStatus, utcnow
from priceadvisor.service import metrics as metrics_module
from priceadvisor.service.stores import configured_store
from priceadvisor.store import allocator, connections, errors, leases, maintenance
from priceadvisor.store.daemonlock import DaemonLock
from priceadvisor.store.export import export_database
from priceadvisor.store.freshness import configured_intervals
from priceadvisor.store.handle import Store
from priceadvisor.store.http_cache import StoredValidatorCache
from priceadvisor.store.pricegauges import PriceGauges, read_gauges
from priceadvisor.store.runs import abandon_own_runs

if TYPE_CHECKING:
    from starlette.routing import BaseRoute

    from priceadvisor.service.web import HealthServer

log = logging.getLogger("priceadvisor.service.daemon")

AfterFetchHook = Callable[[Settings, IngestSummary], None]


# Blocks from this size up (DuckDB's 256 KiB blocks, Arrow buffers) are mapped on their own and
# unmapped when freed, so one ingest step's memory is gone before the next step's: ~10 MB off
# the peak of a 100,000-offer ingest (docs/benchmarks.md). glibc's default starts at the same
# 128 KiB but rises to the largest block freed, which put those blocks on the heap.
_MMAP_THRESHOLD = 128 * 1024


def _bound_memory() -> None:
    """A long-running process on a small VM: DuckDB gets a modest buffer pool and its
    allocator hands freed pages back at once, and glibc keeps two malloc arenas instead of one
    per thread that ever touched the database and hands large blocks back as soon as they are
    freed."""
    connections.CONNECTION_CONFIG.update(
        {"memory_limit": "128MB", "allocator_flush_threshold": "4MB", "threads": 1}
    )
    allocator.return_freed_pages_at_once()
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-8, 2)  # M_ARENA_MAX (malloc.h)
        libc.mallopt(-3, _MMAP_THRESHOLD)  # M_MMAP_THRESHOLD
    except (OSError, AttributeError):
        pass  # not glibc: nothing to tune


def _add_cron_job(
    scheduler: AsyncIOScheduler,
    job: Callable[[], Awaitable[None]],
    trigger: CronTrigger,
    job_id: str,
    name: str,
    start_now: bool = False,
) -> None:
    """A store-wide cron job: one run at a time, missed firings folded into one, and a firing
    missed by up to an hour (a restart, a long fetch) still run."""
    scheduler.add_job(
        job,
        trigger,
        id=job_id,
        name=name,
        max_instances=1,
        coalesce=True,
        misfire_grace_time=3600,
        **_start_now(start_now),
    )


def _start_now(now: bool) -> dict[str, Any]:
    """APScheduler 3 reads next_run_time=None as "paused": pass it only to start at once."""
    return {"next_run_time": dt.datetime.now(dt.UTC)} if now else {}


def _release_free_memory() -> None:
    """Hand freed heap pages back to the OS after a job (glibc keeps them otherwise)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def _import_advisor(settings: Settings) -> None:
    """The advisor (and its numpy, ~13 MB) is imported only by a daemon that advises, and by
    that one at start: a broken install fails there, not after the first fetch."""
    if settings.workloads:
        import priceadvisor.sizing.advisor  # noqa: F401, PLC0415


class Daemon:
    def __init__(self, settings: Settings, offline: bool = False) -> None:
        self.settings = settings
        self.offline = offline
        self.store: Store = configured_store(settings)
        self.metrics = metrics_module.Metrics(
            self.freshness, self.price_gauges, settings.daemon.metrics_cache
        )
        self.caches: dict[str, StoredValidatorCache] = {}
        self.after_fetch: list[AfterFetchHook] = [self._advise, self._export, self._alert]
        self.stopping = asyncio.Event()
        # Set after the shutdown grace: writes still waiting for the database stop waiting.
        self.give_up = threading.Event()
        # A lake has many writers by design: only a DuckDB file is one daemon's.
        self.lock = DaemonLock(self.store.file) if self.store.file else None
        self.providers = self._runnable_providers()
        self.last_success: dict[str, dt.datetime] = {}
        self.health_port: int | None = None
        self.channels: dict[str, Any] = {}
        self.delivering = asyncio.Lock()
        self.holder = leases.holder_id()

    def _runnable_providers(self) -> list[str]:
        runnable = []
        for provider in self._owned_providers():
            reason = plan(self.settings, provider, self.offline).skip_reason
            if reason:
                log.warning("not scheduled: %s", reason, extra={"provider": provider})
            else:
                runnable.append(provider)
        return runnable

    def _owned_providers(self) -> list[str]:
        """The enabled providers this daemon fetches: `[daemon] providers` when given (other
        daemons on the same lake fetch the rest), else all of them."""
        enabled = enabled_providers(self.settings, sorted(REGISTRY))
        owned = self.settings.daemon.providers
        if not owned:
            return enabled
        for provider in sorted(set(owned) - set(enabled)):
            log.warning("not scheduled: disabled in [providers]", extra={"provider": provider})
        return [p for p in enabled if p in owned]

    async def run(self) -> None:
        if self.lock is not None:
            self.lock.acquire()  # refuses a second daemon on this database
        try:
            await self._serve()
        finally:
            if self.lock is not None:
                self.lock.release()

    async def _serve(self) -> None:
        _bound_memory()
        _import_advisor(self.settings)
        await asyncio.to_thread(self._prepare_database)
        if self.lock is not None:
            self.lock.hold_database_file()  # the file exists now: lock it under every name
        scheduler = AsyncIOScheduler(timezone=dt.UTC)
        for provider in self.providers:
            self._schedule(scheduler, provider)
        self._schedule_notifications(scheduler)
        self._schedule_maintenance(scheduler)
        server = await self._start_health()
        self._handle_signals()
        scheduler.start()
        log.info("running: %d providers scheduled", len(self.providers), extra={"job": "daemon"})
        await self.stopping.wait()
        await self._shutdown(scheduler, server)

    def _prepare_database(self) -> None:
        with self.store.writer(give_up=self.give_up) as con:
            rows = con.execute(
                "SELECT provider, max(finished_at) FROM core.fetch_runs "
                "WHERE status IN ('ok', 'partial') GROUP BY provider"
            ).fetchall()
        self.last_success = {provider: when for provider, when in rows if when}

    def _schedule(self, scheduler: AsyncIOScheduler, provider: str) -> None:
        seconds = interval(self.settings, provider)
        last = self.last_success.get(provider)
        stale = last is None or (utcnow() - last).total_seconds() > seconds
        scheduler.add_job(
            self.fetch_job,
            IntervalTrigger(seconds=seconds, jitter=seconds * self.settings.daemon.jitter),
            args=[provider],
            id=f"fetch:{provider}",
            name=f"fetch {provider}",
            max_instances=1,
            coalesce=True,
            misfire_grace_time=max(1, int(seconds / 2)),
            **_start_now(stale),
        )
        log.info(
            "scheduled every %.0f s%s",
            seconds,
            ", fetching now" if stale else "",
            extra={"provider": provider, "job": f"fetch:{provider}"},
        )

    def _schedule_notifications(self, scheduler: AsyncIOScheduler) -> None:
        """The weekly digest (cron, in its time zone; caught up at start when this week's was
        due and is not in the outbox) and outbox delivery every `notify.deliver_every`."""
        self.channels = outbox.channels(self.settings)
        if not self.channels:
            log.info(
                "no notification channel configured: no digest or delivery jobs",
                extra={"job": "daemon"},
            )
            return
        digest = self.settings.digest
        trigger = CronTrigger.from_crontab(digest.cron, timezone=ZoneInfo(digest.timezone))
        missed = self._digest_missed(trigger)
        _add_cron_job(scheduler, self.digest_job, trigger, "digest", "weekly digest", missed)
        scheduler.add_job(
            self.deliver_job,
            IntervalTrigger(seconds=self.settings.notify.deliver_every),
            id="outbox",
            name="outbox delivery",
            max_instances=1,
            coalesce=True,
        )
        log.info(
            "digest scheduled (%s %s)%s",
            digest.cron,
            digest.timezone,
            ", catching up this week's now" if missed else "",
            extra={"job": "digest"},
        )

    def _digest_missed(self, trigger: CronTrigger) -> bool:
        now = dt.datetime.now(dt.UTC)
        local = now.astimezone(ZoneInfo(self.settings.digest.timezone))
        week_start = (local - dt.timedelta(days=local.weekday())).replace(
            hour=0, minute=0, second=0, microsecond=0
        )
        due = trigger.get_next_fire_time(None, week_start)
        if due is None or due > now:
            return False
        with self.store.reader() as con:
            year, week, _ = utcnow().isocalendar()
            row = con.execute(
                "SELECT count(*) FROM notifications WHERE key LIKE ?",
                [f"digest:{year}-W{week:02d}:%"],
            ).fetchone()
        return not (row and row[0])

    async def digest_job(self) -> None:
        try:
            await asyncio.to_thread(self._queue_digest)
        except Exception:
            log.exception("digest job failed", extra={"job": "digest"})
            return
        await self.deliver_job()

    def _queue_digest(self) -> None:
        if not self._take_lease("digest"):
            self._log_lease_held("digest")  # that daemon queues this digest
            return
        with self.store.reader() as con:
            built = digests.build(con, self.settings, utcnow())
        message = digests.render_for(
            digests.with_health(built, self.settings, self.store), self.settings
        )
        with self.store.writer() as con:
            queued = outbox.enqueue(con, "digest", message, sorted(self.channels))
        log.info("digest %s: %d queued", message.key, queued, extra={"job": "digest"})

    def _schedule_maintenance(self, scheduler: AsyncIOScheduler) -> None:
        """Lake maintenance on `[lake] maintenance` (cron, UTC); none on a DuckDB file (its
        CHECKPOINT after each write does it) or when "off"."""
        lake_settings = self.settings.lake
        if self.store.lake is None or lake_settings is None:
            return
        if lake_settings.maintenance == "off":
            log.info("lake maintenance off", extra={"job": "maintenance"})
            return
        trigger = CronTrigger.from_crontab(lake_settings.maintenance, timezone=dt.UTC)
        _add_cron_job(scheduler, self.maintenance_job, trigger, "maintenance", "lake maintenance")
        log.info(
            "lake maintenance scheduled (%s UTC)",
            lake_settings.maintenance,
            extra={"job": "maintenance"},
        )

    async def maintenance_job(self) -> None:
        """Maintain the lake; a failure is logged and counted, the daemon carries on."""
        try:
            ran = await asyncio.to_thread(self._maintain)
        except errors.StoreError as exc:  # the lake unreachable, a write refused: one line
            log.error("lake maintenance failed: %s", exc, extra={"job": "maintenance"})
            self.metrics.maintenance.labels("failed").inc()
            return
        except Exception:
            log.exception("lake maintenance failed", extra={"job": "maintenance"})
            self.metrics.maintenance.labels("failed").inc()
            return
        if ran:
            self.metrics.maintenance.labels("ok").inc()

    def _maintain(self) -> bool:
        """Run maintenance when this daemon gets the lease, which it then keeps for `[daemon]
        lease` (like the digest's): the other daemons, fired by the same cron, skip this run."""
        if self.store.lake is None or self.settings.lake is None:
            return False  # never scheduled then; a DuckDB file has nothing to maintain
        if not self._take_lease("maintenance"):
            self._log_lease_held("maintenance")
            return False
        retention = dt.timedelta(seconds=self.settings.lake.snapshot_retention)
        with self.store.writer(give_up=self.give_up) as con:
            report = maintenance.run(con, retention)
        for line in report.lines():
            log.info("%s", line, extra={"job": "maintenance"})
        return True

    async def deliver_job(self) -> None:
        """Deliver what is due. The digest job calls it too; rows are claimed before sending,
        so the two never send one row twice, and the lock only saves a redundant pass."""
        try:
            async with self.delivering:
                outcomes = await outbox.deliver(self.settings, self.store, self.channels)
        except Exception:
            log.exception("outbox delivery failed", extra={"job": "outbox"})
            return
        for outcome, count in outcomes.items():
            self.metrics.notifications.labels("all", outcome).inc(count)

    async def fetch_job(self, provider: str) -> None:
        """Fetch one provider and ingest it; never raises (a job failure is logged)."""
        started = time.monotonic()
        job = {"provider": provider, "job": f"fetch:{provider}"}
        try:
            summary = await self._fetch_and_ingest(provider)
        except errors.StoreError as exc:
            log.error("could not store the fetch: %s", exc, extra=job)
            self.metrics.fetches.labels(provider, "db_error").inc()
            return
        except asyncio.CancelledError:
            log.warning("fetch abandoned at shutdown", extra=job)
            raise
        except Exception:
            log.exception("fetch job crashed", extra=job)
            self.metrics.fetches.labels(provider, "crashed").inc()
            return
        self._record(summary, time.monotonic() - started)
        await asyncio.to_thread(self._after_fetch, summary)

    async def _fetch_and_ingest(self, provider: str) -> IngestSummary:
        plan_ = plan(self.settings, provider, self.offline)
        if provider in self.caches:
            [run_id] = await asyncio.to_thread(
                start_runs, self.store, [provider], self.give_up, self.offline
            )
        else:  # the first run of this process also loads the validators stored before
            run_ids, loaded = await asyncio.to_thread(
                prepare_runs, self.store, [provider], self.give_up, self.offline
            )
            [run_id] = run_ids
            self.caches.update(loaded)
        cache = self.caches[provider]
        result = await fetch_one(self.settings, plan_, self.offline, lambda *_: None, cache)
        [summary] = await asyncio.to_thread(
            ingest_results, self.settings, self.store, [run_id], [result], self.give_up, [cache]
        )
        return summary

    def _record(self, summary: IngestSummary, seconds: float) -> None:
        provider, status = summary.provider, str(summary.status)
        self.metrics.fetches.labels(provider, status).inc()
        self.metrics.duration.labels(provider).observe(seconds)
        if summary.status in (RunStatus.OK, RunStatus.PARTIAL):
            self.last_success[provider] = utcnow()
            self.metrics.offers.labels(provider).set(summary.offers_seen)
        normal = summary.status in (RunStatus.OK, RunStatus.SUPERSEDED)
        level = logging.INFO if normal else logging.WARNING
        log.log(
            level,
            "%s: %d offers, %d changed, %d rejected%s",
            status,
            summary.offers_seen,
            summary.offers_changed,
            summary.offers_rejected,
            f" — {summary.error}" if summary.error else "",
            extra={
                "provider": provider,
                "job": f"fetch:{provider}",
                "run_id": summary.run_id,
                "status": status,
            },
        )

    def _after_fetch(self, summary: IngestSummary) -> None:
        _release_free_memory()
        for hook in self.after_fetch:
            try:
                hook(self.settings, summary)
            except Exception:
                log.exception(
                    "after-fetch hook %s failed",
                    getattr(hook, "__name__", hook),
                    extra={"provider": summary.provider},
                )

    def _advise(self, settings: Settings, summary: IngestSummary) -> None:
        if settings.workloads and summary.status in (RunStatus.OK, RunStatus.PARTIAL):
            from priceadvisor.sizing.advisor import (  # noqa: PLC0415 - as at start
                Options,
                store_advice,
            )

            with self.store.writer() as con:
                store_advice(con, settings.workloads, options=Options.of(settings))

    def _alert(self, settings: Settings, summary: IngestSummary) -> None:
        """Evaluate after each fetch, one daemon at a time: the lease is taken for the
        evaluation and given back, so every fetch on the store is evaluated once, as with one
        daemon fetching every provider."""
        if not (settings.alerts.rules and self.channels):
            return
        deadline = time.monotonic() + self.store.lock_timeout
        while not self._take_lease("alerts"):  # another daemon is evaluating: wait for it
            if time.monotonic() >= deadline or self.give_up.wait(0.5):
                self._log_lease_held("alerts")
                return
        try:
            with self.store.writer() as con:
                queued = alerts.evaluate_and_queue(
                    con,
                    settings.alerts,
                    sorted(self.channels),
                    utcnow(),
                    configured_intervals(settings),
                    settings.workloads,
                )
        finally:
            with self.store.writer() as con:
                leases.release(con, "alerts", self.holder, utcnow())
        if queued:
            log.info("%d alert notifications queued", queued, extra={"job": "alerts"})

    def _take_lease(self, job: str) -> bool:
        """Take (or renew) the store-wide lease on `job`; False when another daemon holds it."""
        with self.store.writer() as con:
            return leases.acquire(con, job, self.holder, self.settings.daemon.lease, utcnow())

    def _log_lease_held(self, job: str) -> None:
        with self.store.reader() as con:
            holder, until = leases.current(con, job)
        log.info("skipped: %s holds the lease until %s", holder, until, extra={"job": job})

    def _export(self, settings: Settings, summary: IngestSummary) -> None:
        if settings.daemon.export_dir is not None:
            export_database(self.store, settings.daemon.export_dir)

    def freshness(self) -> dict[str, metrics_module.Freshness]:
        """Each scheduled provider's last success (from the database at start, then from each
        run) and the age past which it is stale: twice its interval."""
        return {
            provider: metrics_module.Freshness(
                self.last_success.get(provider), 2 * interval(self.settings, provider)
            )
            for provider in self.providers
        }

    def price_gauges(self) -> PriceGauges:
        """What /metrics shows about prices, read when scraped (metrics caches it)."""
        per_provider = self.settings.daemon.metrics_per_provider
        return read_gauges(self.store, per_provider)

    def health(self) -> tuple[bool, dict[str, Any]]:
        """Every scheduled provider succeeded within twice its interval."""
        now, detail = utcnow(), {}
        for provider, state in self.freshness().items():
            detail[provider] = {
                "fresh": state.fresh(now),
                "last_success": state.last_success,
                "max_age_s": state.max_age,
            }
        return all(d["fresh"] for d in detail.values()), {"providers": detail}

    def _dashboard_routes(self) -> list[BaseRoute]:
        from priceadvisor.service.dashboard import Dashboard  # noqa: PLC0415

        mode = "recorded responses (--offline)" if self.offline else "live"
        return Dashboard(self.store, mode).routes()

    async def _start_health(self) -> HealthServer:
        # The web stack (uvicorn, Starlette) loads here, in the daemon, not for every CLI command.
        # The dashboard's routes only when it is on (`[daemon] dashboard`).
        from priceadvisor.service import web  # noqa: PLC0415
        from priceadvisor.service.opencost import OpenCostRoutes  # noqa: PLC0415

        daemon = self.settings.daemon
        routes = web.health_routes(self.metrics, self.health) + OpenCostRoutes(self.store).routes()
        if daemon.dashboard:
            routes += self._dashboard_routes()
        token = lookup_secret(self.settings, daemon.web_token_env)
        app = web.build_app(routes, token)
        server = await web.serve(daemon.health_host, daemon.health_port, app)
        self.health_port = server.port
        where = web.urls(daemon.health_host, self.health_port)[0]
        if daemon.dashboard and token is None and web.exposed(daemon.health_host):
            log.warning(
                "the dashboard listens on %s without a token: anyone who can reach this "
                "machine can read it; set the secret %s",
                daemon.health_host,
                daemon.web_token_env,
                extra={"job": "daemon"},
            )
        log.info("health and metrics on %shealthz", where, extra={"job": "daemon"})
        if daemon.dashboard:
            log.info("dashboard on %s", where, extra={"job": "daemon"})
        return server

    def _handle_signals(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stop)

    def stop(self) -> None:
        log.info("stopping", extra={"job": "daemon"})
        self.stopping.set()

    async def _shutdown(self, scheduler: AsyncIOScheduler, server: HealthServer | None) -> None:
        scheduler.shutdown(wait=False)
        if server is not None:
            server.close()
        running = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        if running:
            _, pending = await asyncio.wait(running, timeout=self.settings.daemon.shutdown_grace)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        # Writes already handed to worker threads finish first (those still waiting for the
        # database give up now); then what this process left `running` is recorded as
        # abandoned, so nothing looks in progress after it exits.
        self.give_up.set()
        await asyncio.get_running_loop().shutdown_default_executor()
        log.info("stopped%s", self._abandon_own_runs(), extra={"job": "daemon"})

    def _abandon_own_runs(self) -> str:
        try:
            with self.store.writer() as con:
                abandoned = abandon_own_runs(con)
        except errors.StoreError as exc:
            # Still a clean stop: the next writer marks them abandoned once this process is gone.
            log.warning(
                "could not mark unfinished runs abandoned: %s", exc, extra={"job": "daemon"}
            )
            return ""
        return f" ({abandoned} run abandoned)" if abandoned else ""
