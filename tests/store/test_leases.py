"""Job leases on a DuckDB file: one holder at a time, renewal, expiry, release; and in a
daemon, the alert evaluation runs only while it holds the lease."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from pathlib import Path

import pytest

from priceadvisor.records import utcnow
from priceadvisor.store import connections, leases

NOW = dt.datetime(2026, 11, 23, 8, 0)


def take(db: Path, job: str, holder: str, ttl: float = 60, now: dt.datetime = NOW) -> bool:
    with connections.writer(db) as con:
        return leases.acquire(con, job, holder, ttl, now)


def test_one_holder_until_it_expires(db_path: Path) -> None:
    assert take(db_path, "alerts", "a")
    assert not take(db_path, "alerts", "b", now=NOW + dt.timedelta(seconds=59))
    assert take(db_path, "alerts", "b", now=NOW + dt.timedelta(seconds=60))
    assert not take(db_path, "alerts", "a", now=NOW + dt.timedelta(seconds=61))


def test_the_holder_renews_and_the_expiry_moves(db_path: Path) -> None:
    assert take(db_path, "digest", "a")
    assert take(db_path, "digest", "a", now=NOW + dt.timedelta(seconds=50))
    assert not take(db_path, "digest", "b", now=NOW + dt.timedelta(seconds=70))
    with connections.writer(db_path) as con:
        assert leases.current(con, "digest") == ("a", NOW + dt.timedelta(seconds=110))


def test_jobs_have_separate_leases(db_path: Path) -> None:
    assert take(db_path, "alerts", "a")
    assert take(db_path, "digest", "b")


def test_release_frees_it_at_once_and_only_for_the_holder(db_path: Path) -> None:
    assert take(db_path, "alerts", "a")
    with connections.writer(db_path) as con:
        assert not leases.release(con, "alerts", "b", NOW)
        assert leases.release(con, "alerts", "a", NOW)
    assert take(db_path, "alerts", "b", now=NOW + dt.timedelta(seconds=1))


def test_an_unknown_job_is_refused(db_path: Path) -> None:
    with pytest.raises(ValueError, match="no lease for job 'backup'"):
        take(db_path, "backup", "a")


def test_holders_of_two_processes_are_distinct() -> None:
    code = "from priceadvisor.store.leases import holder_id; print(holder_id())"
    ids = {
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout.strip()
        for _ in range(2)
    }
    assert len(ids) == 2
    assert ids != {leases.holder_id()}


def test_a_dead_holder_s_lease_is_taken_after_expiry(db_path: Path) -> None:
    """A process that took the lease and was killed never releases it: the lease runs out."""
    script = (
        "import sys, datetime as dt, os, signal\n"
        "from pathlib import Path\n"
        "from priceadvisor.records import utcnow\n"
        "from priceadvisor.store import connections, leases\n"
        "with connections.writer(Path(sys.argv[1])) as con:\n"
        "    assert leases.acquire(con, 'digest', leases.holder_id(), 2.0, utcnow())\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    died = subprocess.run([sys.executable, "-c", script, str(db_path)], check=False)
    assert died.returncode == -9
    now = utcnow()
    assert not take(db_path, "digest", "survivor", now=now)
    assert take(db_path, "digest", "survivor", now=now + dt.timedelta(seconds=2))
