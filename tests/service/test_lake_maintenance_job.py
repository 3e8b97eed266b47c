"""The daemon's lake maintenance job: once per lake (the 'maintenance' lease), scheduled only on
a lake, and a failure logged and counted without stopping the daemon."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from apscheduler.schedulers.asyncio import AsyncIOScheduler

from priceadvisor.config import load_settings
from priceadvisor.service.daemon import Daemon
from priceadvisor.store import lake, leases
from tests.conftest import ingest_quotes
from tests.store.test_lake_maintenance import quotes


def daemon_on(tmp_path: Path, catalog: str, extra: str = "") -> Daemon:
    config = tmp_path / "daemon.toml"
    config.write_text(
        'storage = "ducklake"\nlock_timeout = "1s"\n[daemon]\nlease = "1h"\n'
        f'[lake]\ncatalog = "{catalog}"\ndata_path = "{tmp_path / "data"}"\n{extra}'
    )
    return Daemon(load_settings(config))


def runs(daemon: Daemon, outcome: str) -> float:
    value = daemon.metrics.registry.get_sample_value(
        "priceadvisor_lake_maintenance_total", {"outcome": outcome}
    )
    return value or 0.0


def test_two_daemons_on_one_lake_maintain_it_once(
    pg_dsn: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    first, second = (daemon_on(tmp_path, f"postgres:{pg_dsn}") for _ in range(2))
    assert isinstance(first.store.where, lake.Lake)
    for base in (1.0, 2.0, 3.0):
        ingest_quotes(first.store.where, "azure", quotes(base))
    caplog.set_level(logging.INFO, logger="priceadvisor.service.daemon")

    asyncio.run(first.maintenance_job())
    asyncio.run(second.maintenance_job())

    with first.store.writer() as con:
        assert leases.current(con, "maintenance")[0] == first.holder
    merged = [r for r in caplog.records if r.getMessage().startswith("merged ")]
    skipped = [r for r in caplog.records if r.getMessage().startswith("skipped: ")]
    assert len(merged) == 1 and len(skipped) == 1 and first.holder in skipped[0].getMessage()
    # (the data files before the merge: the flush of the rows inlined in the catalog adds some)
    before, after = (int(n) for n in merged[0].getMessage().split("; data files ")[1].split(" -> "))
    assert after < before
    assert (runs(first, "ok"), runs(second, "ok")) == (1, 0)


def test_a_failing_maintenance_is_logged_and_counted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    daemon = daemon_on(tmp_path, "postgres:host=127.0.0.1 port=1 dbname=none")
    asyncio.run(daemon.maintenance_job())  # does not raise
    assert runs(daemon, "failed") == 1
    [failure] = [r for r in caplog.records if r.getMessage().startswith("lake maintenance failed")]
    assert "cannot attach" in failure.getMessage() and failure.exc_info is None


@pytest.mark.parametrize(
    ("storage", "scheduled"),
    [("lake", True), ("off", False), ("file", False)],
)
def test_maintenance_is_scheduled_on_a_lake_only(
    tmp_path: Path, storage: str, scheduled: bool
) -> None:
    if storage == "file":
        config = tmp_path / "file.toml"
        config.write_text("")
        daemon = Daemon(load_settings(config, db=tmp_path / "p.duckdb"))
    else:
        extra = 'maintenance = "off"\n' if storage == "off" else 'maintenance = "15 2 * * *"\n'
        daemon = daemon_on(tmp_path, str(tmp_path / "catalog.ducklake"), extra)

    async def schedule() -> AsyncIOScheduler:
        scheduler = AsyncIOScheduler()
        daemon._schedule_maintenance(scheduler)
        return scheduler

    job = asyncio.run(schedule()).get_job("maintenance")
    assert (job is not None) == scheduled
    if job is not None:
        assert str(job.trigger).startswith("cron[") and "hour='2'" in str(job.trigger)
