"""`sql` is bounded: a query stops at its timeout (--timeout or [readers] sql_timeout) with one
line and exit 1, Ctrl-C stops a running query at once, and every reader runs with the memory
limit and thread count of [readers], which no statement can raise."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import cli

# Hours of work for DuckDB: only an interrupt ends it within any test's patience.
ENDLESS = "select sum(hash(a.range + b.range)) from range(1000000) a, range(1000000) b"
HUGE_COUNT = "select count(*) from range(100000000000)"


@pytest.mark.parametrize("fmt", ["table", "csv", "json"])
def test_timeout_stops_the_query_with_one_line(
    capsys: pytest.CaptureFixture[str], migrated_db: Path, fmt: str
) -> None:
    code, out, err = cli(
        capsys, "--db", str(migrated_db), "sql", "--timeout", "1s", "--format", fmt, HUGE_COUNT
    )
    assert code == 1 and out == ""
    assert err.strip().splitlines() == [
        "error: query stopped after its 1 s timeout (sql --timeout, readers.sql_timeout)"
    ]


def test_the_configured_timeout_applies_without_the_option(
    capsys: pytest.CaptureFixture[str], migrated_db: Path, tmp_path: Path
) -> None:
    config = tmp_path / "priceadvisor.toml"
    config.write_text('[readers]\nsql_timeout = "1s"\n')
    code, _, err = cli(capsys, "--config", str(config), "--db", str(migrated_db), "sql", ENDLESS)
    assert code == 1 and "query stopped after its 1 s timeout" in err


def test_a_bad_timeout_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], migrated_db: Path
) -> None:
    code, _, err = cli(capsys, "--db", str(migrated_db), "sql", "--timeout", "soon", "select 1")
    assert code == 2 and err.startswith("error: --timeout: invalid duration 'soon'")


def settings_seen(capsys: pytest.CaptureFixture[str], *args: str) -> list[str]:
    query = "select current_setting('memory_limit'), current_setting('threads')"
    code, out, err = cli(capsys, *args, "sql", "--format", "csv", query)
    assert code == 0, err
    return out.splitlines()[1].split(",")


def test_readers_run_with_the_configured_memory_limit_and_threads(
    capsys: pytest.CaptureFixture[str], migrated_db: Path, tmp_path: Path
) -> None:
    config = tmp_path / "priceadvisor.toml"
    config.write_text('[readers]\nmemory_limit = "300MiB"\nthreads = 1\n')
    seen = settings_seen(capsys, "--config", str(config), "--db", str(migrated_db))
    assert seen == ["300.0 MiB", "1"]


def test_readers_default_to_a_share_of_ram_and_two_threads(
    capsys: pytest.CaptureFixture[str], migrated_db: Path
) -> None:
    memory, threads = settings_seen(capsys, "--db", str(migrated_db))
    ram_mib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20
    assert threads == "2"
    value, unit = memory.split()  # DuckDB shows it to one decimal
    assert float(value) * {"MiB": 1, "GiB": 1024}[unit] == pytest.approx(ram_mib / 4, rel=0.05)


def test_a_bad_memory_limit_is_a_config_error(
    capsys: pytest.CaptureFixture[str], migrated_db: Path, tmp_path: Path
) -> None:
    config = tmp_path / "priceadvisor.toml"
    config.write_text('[readers]\nmemory_limit = "lots"\n')
    code, _, err = cli(capsys, "--config", str(config), "--db", str(migrated_db), "sql", "select 1")
    assert code == 2 and "memory_limit" in err and "25%" in err


def test_a_query_past_the_memory_limit_fails_with_one_line_naming_the_setting(
    capsys: pytest.CaptureFixture[str], migrated_db: Path, tmp_path: Path
) -> None:
    config = tmp_path / "priceadvisor.toml"
    config.write_text('[readers]\nmemory_limit = "256MiB"\n')
    query = "select length(string_agg(repeat('x', 100), ',')) from range(10000000)"  # ~1 GB
    code, out, err = cli(capsys, "--config", str(config), "--db", str(migrated_db), "sql", query)
    assert code == 1 and out == ""
    [line] = err.strip().splitlines()
    assert line.startswith("error: query needs more memory than readers.memory_limit allows: ")
    assert "SET memory_limit" not in line  # DuckDB's advice, which this command refuses


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100  # utime + stime, in clock ticks of 1/100 s


def test_ctrl_c_stops_a_running_query(migrated_db: Path) -> None:
    query = subprocess.Popen(
        [sys.executable, "-m", "priceadvisor", "--db", str(migrated_db), "sql", ENDLESS],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # Past start-up (well under a CPU second) the process is inside the query.
        for _ in range(1200):
            if query.poll() is not None or cpu_seconds(query.pid) > 2:
                break
            time.sleep(0.1)
        assert query.poll() is None, query.communicate()
        query.send_signal(signal.SIGINT)
        # Generous: the query alone would run for hours; this is "it stops", not a speed.
        out, err = query.communicate(timeout=120)
    finally:
        query.kill()
        query.wait()
    assert query.returncode == 130 and out == ""
    assert err.strip().splitlines() == ["error: aborted"]
