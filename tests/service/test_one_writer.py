"""One writer per database and a history that never runs backwards, with real processes: the
daemon, concurrent CLI fetches and a reader holding the file, against a local HTTP server."""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from priceadvisor.resources import recordings_dir
from tests.conftest import query
from tests.history import INVARIANTS, violations
from tests.localserver import serving
from tests.service.test_daemon import config_for, count, daemon, wait_for

pytestmark = pytest.mark.slow

CLI = [sys.executable, "-m", "priceadvisor"]


class ChangingPrices:
    """Oracle's price list, every price a little higher on each request and one item left out
    in turn, so every snapshot changes prices and most open or close an offer."""

    def __init__(self) -> None:
        self.document = json.loads((recordings_dir() / "oracle" / "products.json").read_bytes())
        self.served = 0
        self._lock = threading.Lock()

    def __call__(self, path: str, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        with self._lock:
            self.served += 1
            n = self.served
        document = copy.deepcopy(self.document)
        for item in document["items"]:
            for local in item["currencyCodeLocalizations"]:
                for price in local["prices"]:
                    price["value"] = round(price["value"] * (1 + n / 1000), 6)
        del document["items"][n % len(document["items"])]
        return 200, {"Content-Type": "application/json"}, json.dumps(document).encode()


def cli_fetch(config: Path, db: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*CLI, "--config", str(config), "--db", str(db), "fetch", "-p", "oracle", "-f", "json"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def statuses(db: Path) -> Counter[str]:
    return Counter(s for (s,) in query(db, "SELECT status FROM fetch_runs"))


def test_a_daemon_and_ten_cli_fetches_keep_the_history_sound(tmp_path: Path, db_path: Path) -> None:
    prices = ChangingPrices()
    with serving("oracle") as server:
        server.faults.append(prices)
        config = config_for(tmp_path, {"oracle": server}, "1s")
        with daemon(config, db_path) as d:
            wait_for(lambda: count(db_path, "oracle", "ok") >= 1, 60, "the daemon's first run")
            fetches = [cli_fetch(config, db_path) for _ in range(10)]
            outcomes = [(p.wait(timeout=600), p.communicate()[1]) for p in fetches]
            d.proc.send_signal(signal.SIGTERM)
            assert d.proc.wait(timeout=60) == 0
    assert [code for code, _ in outcomes] == [0] * 10, [e for _, e in outcomes]
    runs = statuses(db_path)
    # every run merged or was superseded by a later observation; SIGTERM may cut one short
    assert set(runs) <= {"ok", "superseded", "abandoned"} and runs["abandoned"] <= 1, runs
    assert runs["ok"] >= 2 and runs.total() >= 11 + 1
    [(intervals, closed)] = query(
        db_path, "SELECT count(*), count(valid_to) FROM core.price_intervals"
    )
    assert closed > 0  # prices changed: intervals were closed and opened
    assert violations(db_path) == dict.fromkeys(INVARIANTS, 0)
    print(f"runs {dict(runs)}, requests {prices.served}, intervals {intervals} ({closed} closed)")


def test_a_reader_holding_the_database_does_not_cost_the_daemon_a_fetch(
    tmp_path: Path, db_path: Path
) -> None:
    holding, answered = threading.Event(), threading.Event()

    def answer_once_a_reader_holds(path: str, query: dict[str, str]) -> Any:
        holding.wait(120)
        answered.set()
        return None  # then the recording

    with serving("oracle") as server:
        server.faults.append(answer_once_a_reader_holds)
        config = config_for(tmp_path, {"oracle": server}, "1h")
        with daemon(config, db_path) as d:
            wait_for(lambda: bool(server.requests), 60, "the daemon's fetch to reach the server")
            reader = hold_read_only(db_path, seconds=15)
            try:
                holding.set()
                assert answered.wait(60)  # the fetch completes while the reader holds the file
                assert reader.poll() is None
                assert reader.wait(timeout=120) == 0
                wait_for(lambda: count(db_path, "oracle", "ok") == 1, 60, "the snapshot to land")
            finally:
                reader.kill()
                reader.communicate()
            d.proc.send_signal(signal.SIGTERM)
            assert d.proc.wait(timeout=60) == 0
    assert statuses(db_path) == {"ok": 1}  # no run lost, none left `running`
    [(seen,)] = query(db_path, "SELECT offers_seen FROM fetch_runs WHERE status = 'ok'")
    assert seen > 0 and query(db_path, "SELECT count(*) FROM offers") == [(seen,)]
    assert not any(e["level"] == "error" for e in d.logs())
    assert any("waiting our turn" in e["msg"] for e in d.logs())


def hold_read_only(db: Path, seconds: float) -> subprocess.Popen[str]:
    """Another process with a read-only connection open for `seconds` (returned once open)."""
    reader = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time, duckdb; con = duckdb.connect(sys.argv[1], read_only=True);"
            "print('open', flush=True); time.sleep(float(sys.argv[2])); con.close()",
            str(db),
            str(seconds),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert reader.stdout is not None and reader.stdout.readline().strip() == "open"
    return reader


def test_a_second_daemon_is_refused_and_a_killed_one_does_not_block_a_restart(
    tmp_path: Path, db_path: Path
) -> None:
    with serving("oracle") as server:
        config = config_for(tmp_path, {"oracle": server}, "1h")
        with daemon(config, db_path) as first:
            second = subprocess.run(
                [*CLI, "--config", str(config), "--db", str(db_path), "run"],
                capture_output=True,
                text=True,
                timeout=120,
            )
            first.proc.send_signal(signal.SIGKILL)
            first.proc.wait(timeout=30)
        assert second.returncode == 1
        assert second.stderr.strip().splitlines()[-1] == (
            f"error: another priceadvisor daemon (PID {first.proc.pid}) is already running "
            f"on {db_path}"
        )
        assert "Traceback" not in second.stderr
        with daemon(config, db_path) as restarted:  # the killed daemon's lock is gone with it
            restarted.proc.send_signal(signal.SIGTERM)
            assert restarted.proc.wait(timeout=60) == 0


def test_a_second_daemon_under_another_name_of_the_file_is_refused(
    tmp_path: Path, db_path: Path
) -> None:
    """A symlink and a hard link (its own real path) lead to the first daemon's lock."""
    symlink, hard_link = tmp_path / "symlink.duckdb", tmp_path / "other" / "prices.duckdb"
    symlink.symlink_to(db_path)
    hard_link.parent.mkdir()
    with serving("oracle") as server:
        config = config_for(tmp_path, {"oracle": server}, "1h")
        with daemon(config, db_path) as first:
            os.link(db_path, hard_link)  # the running daemon has created the file
            seconds = [
                subprocess.run(
                    [*CLI, "--config", str(config), "--db", str(other), "run"],
                    capture_output=True,
                    text=True,
                    timeout=120,
                )
                for other in (symlink, hard_link)
            ]
            first.proc.send_signal(signal.SIGTERM)
            assert first.proc.wait(timeout=60) == 0
    for second in seconds:
        assert second.returncode == 1, second.stderr
        last = second.stderr.strip().splitlines()[-1]
        assert last.startswith("error: another priceadvisor daemon"), second.stderr


def test_a_shutdown_while_a_snapshot_waits_stops_cleanly_and_leaves_no_run_running(
    tmp_path: Path, db_path: Path
) -> None:
    holding = threading.Event()
    with serving("oracle") as server:
        server.faults.append(lambda path, query: holding.wait(120) and None)
        config = config_for(tmp_path, {"oracle": server}, "1h")
        config.write_text('lock_timeout = "2s"\n' + config.read_text())
        with daemon(config, db_path) as d:
            wait_for(lambda: bool(server.requests), 60, "the daemon's fetch to reach the server")
            reader = hold_read_only(db_path, seconds=120)
            try:
                holding.set()
                wait_for(
                    lambda: any("waiting our turn" in e["msg"] for e in d.logs()),
                    60,
                    "the snapshot to wait for the writer",
                )
                d.proc.send_signal(signal.SIGTERM)
                assert d.proc.wait(timeout=120) == 0  # gives up waiting after the grace
                assert statuses(db_path) == {"running": 1}  # the reader still holds the file
            finally:
                reader.kill()
                reader.communicate()
        with daemon(config, db_path) as restarted:  # marks it abandoned, then fetches afresh
            wait_for(lambda: count(db_path, "oracle", "ok") == 1, 60, "a new run")
            restarted.proc.send_signal(signal.SIGTERM)
            assert restarted.proc.wait(timeout=60) == 0
    assert statuses(db_path) == {"abandoned": 1, "ok": 1}
    assert any(e["msg"] == "fetch abandoned at shutdown" for e in d.logs())
