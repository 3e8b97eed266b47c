"""The daemon's store-wide jobs (alert evaluation, the weekly digest) run only while it holds
their lease: a daemon whose peer holds it leaves the job to that peer."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path

from priceadvisor.config import load_settings
from priceadvisor.notify import outbox
from priceadvisor.records import IngestSummary, RunStatus, utcnow
from priceadvisor.service.daemon import Daemon
from priceadvisor.store import connections, leases
from tests.conftest import query
from tests.notify.test_notify import database  # noqa: F401 - the fixture: recorded offers
from tests.notify.test_outbox import Webhook, webhook_server


def daemon_for(tmp_path: Path, db: Path, url: str, owned: str = "") -> Daemon:
    config = tmp_path / "leases.toml"
    config.write_text(
        'lock_timeout = "1s"\n'
        f'[daemon]\nlease = "1h"\n{owned}\n'
        f'[notify.slack]\nwebhook_url = "{url}"\n'
        '[[alerts.rules]]\nkind = "new_offer"\n'
    )
    daemon = Daemon(load_settings(config, db=db))
    daemon.channels = {"slack": object()}  # _alert only needs to know a channel exists
    return daemon


def hold(db: Path, job: str, holder: str, seconds: float) -> None:
    with connections.writer(db) as con:
        assert leases.acquire(con, job, holder, seconds, utcnow())


def series(db: Path) -> int:
    return int(query(db, "SELECT count(*) FROM core.alert_state")[0][0])


SUMMARY = IngestSummary(1, "azure", RunStatus.OK, 1, 0, 0, 0, 0, 0, 1, 100, None, 0.1)


def test_alerts_wait_for_a_peer_s_evaluation_then_skip_it_while_held(
    database: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    with webhook_server(Webhook()) as url:
        daemon = daemon_for(tmp_path, database, url)
        hold(database, "alerts", "peer", 3600)
        daemon._alert(daemon.settings, SUMMARY)
        assert series(database) == 0  # the peer evaluates; this daemon did not
        with connections.writer(database) as con:
            assert leases.release(con, "alerts", "peer", utcnow())
        daemon._alert(daemon.settings, SUMMARY)
        assert series(database) > 0
        with connections.writer(database) as con:  # given back after the evaluation
            assert leases.current(con, "alerts")[0] is None


def test_digest_is_queued_by_the_lease_holder_only(
    database: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    hook = Webhook()
    with webhook_server(hook) as url:
        first, second = daemon_for(tmp_path, database, url), daemon_for(tmp_path, database, url)
        for daemon in (first, second):
            daemon.channels = outbox.channels(daemon.settings)
        hold(database, "digest", first.holder, 3600)
        second._queue_digest()
        assert notifications(database) == 0  # the holder's job, not this daemon's
        first._queue_digest()  # the holder renews its lease and queues
        with connections.writer(database) as con:
            holder, until = leases.current(con, "digest")
        assert holder == first.holder and until > utcnow() + dt.timedelta(minutes=59)
        assert notifications(database) == 1
        asyncio.run(second.deliver_job())  # any daemon may deliver: rows are claimed
        asyncio.run(first.deliver_job())
    assert len(hook.received) == 1


def notifications(db: Path) -> int:
    return int(query(db, "SELECT count(*) FROM core.notifications")[0][0])


def test_a_daemon_fetches_only_the_providers_it_owns(
    database: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    with webhook_server(Webhook()) as url:
        daemon = daemon_for(tmp_path, database, url, 'providers = ["azure", "oracle"]')
        everyone = daemon_for(tmp_path, database, url)
    assert daemon._owned_providers() == ["azure", "oracle"]
    assert {"azure", "oracle"} < set(everyone._owned_providers())
