"""Ids survive a kill -9: each is taken in the transaction that writes its row, a sequence left
behind its table is repaired by the next writer, and `doctor` names one it finds."""

from __future__ import annotations

import datetime as dt
import logging
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from priceadvisor.notify import Message, alerts, outbox
from priceadvisor.records import utcnow
from priceadvisor.store import connections, errors, ids, runs
from tests.conftest import cli, cli_process

# Takes an id of each kind and writes its row, then dies before the writer's closing
# CHECKPOINT: what survives is what the write-ahead log holds.
_TAKE_IDS_THEN_DIE = """
import datetime as dt, os, signal, sys
from pathlib import Path
from priceadvisor.records import utcnow
from priceadvisor.notify import Message, alerts, outbox
from priceadvisor.store import connections, runs

with connections.writer(Path(sys.argv[1])) as con:
    runs.start_runs(con, ["azure"])
    key = f"kill:{sys.argv[2]}"
    outbox.enqueue(con, "test", Message(key, "s", "t", "<p>t</p>", []), ["mail"])
    alerts.silence(con, {"provider": "azure"}, utcnow() + dt.timedelta(hours=1), None, utcnow())
    os.kill(os.getpid(), signal.SIGKILL)
"""


def _take_ids_then_die(db: Path, round_: int) -> None:
    died = subprocess.run(
        [sys.executable, "-c", _TAKE_IDS_THEN_DIE, str(db), str(round_)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert died.returncode == -9, died.stderr


def _write_one_of_each(db: Path, round_: int) -> None:
    with connections.writer(db) as con:
        runs.start_run(con, "azure")
        message = Message(f"after:{round_}", "s", "t", "<p>t</p>", [])
        assert outbox.enqueue(con, "test", message, ["mail"]) == 1
        alerts.silence(con, {"provider": "x"}, utcnow() + dt.timedelta(hours=1), None, utcnow())


def test_every_insert_succeeds_after_a_kill_before_the_checkpoint(db_path: Path) -> None:
    with connections.writer(db_path):
        pass
    for round_ in range(3):
        _take_ids_then_die(db_path, round_)
        _write_one_of_each(db_path, round_)  # raised a duplicate key before
    done = cli_process("--db", str(db_path), "fetch", "--offline", "--provider", "ecb")
    assert done.returncode == 0, done.stderr
    con = duckdb.connect(str(db_path), read_only=True)
    try:
        for table, column in [("fetch_runs", "run_id"), ("notifications", "id")]:
            [(rows, distinct)] = con.execute(
                f"SELECT count(*), count(DISTINCT {column}) FROM core.{table}"
            ).fetchall()
            assert rows == distinct == (7 if table == "fetch_runs" else 6)
    finally:
        con.close()


def _sequence_behind(db: Path) -> None:
    """As a kill -9 leaves it: rows with ids the sequence has not handed out yet."""
    with connections.writer(db):
        pass
    con = duckdb.connect(str(db))
    try:
        con.execute(
            "INSERT INTO core.fetch_runs (run_id, provider, started_at, status, source) "
            "SELECT range, 'azure', now(), 'ok', 'live' FROM range(1, 4)"
        )
    finally:
        con.close()


def test_a_writer_moves_a_sequence_behind_its_table_past_it(
    db_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _sequence_behind(db_path)
    connections._prepared.clear()  # the next process to open the file
    with caplog.at_level(logging.WARNING), connections.writer(db_path) as con:
        assert runs.start_run(con, "azure") == 4
        assert ids.sequences_behind(con) == []
    assert "sequence core.fetch_run_ids would hand out 1" in caplog.text
    assert "core.fetch_runs already holds ids up to 3" in caplog.text


def test_doctor_names_a_sequence_behind_its_table(
    db_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _sequence_behind(db_path)
    code, out, _ = cli(capsys, "--db", str(db_path), "doctor")
    assert code == 1
    assert "core.fetch_run_ids" in out and "run `priceadvisor fetch` once" in out


def test_an_id_outside_the_transaction_of_its_row_is_refused(db_path: Path) -> None:
    with connections.writer(db_path) as con:
        with pytest.raises(errors.StoreError, match="outside the transaction"):
            ids.next_id(con, "core.fetch_run_ids")
        with pytest.raises(errors.StoreError, match="outside the transaction"):
            outbox.enqueue_within(con, "test", Message("k", "s", "t", "", []), ["mail"])


def test_a_log_that_does_not_replay_names_the_recovery_step(db_path: Path) -> None:
    with connections.writer(db_path):
        pass
    writes_then_dies = (
        "import duckdb, os, signal, sys\n"
        "con = duckdb.connect(sys.argv[1])\n"
        "con.execute('CREATE TABLE core.scratch AS SELECT range AS n FROM range(100000)')\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    subprocess.run([sys.executable, "-c", writes_then_dies, str(db_path)], check=False)
    wal = db_path.with_name(db_path.name + ".wal")
    torn = bytearray(wal.read_bytes())
    torn[100:300] = bytes(b ^ 0xFF for b in torn[100:300])
    wal.write_bytes(bytes(torn))
    with pytest.raises(errors.StoreError) as refused, connections.reader(db_path):
        pass
    message = str(refused.value)
    assert "\n" not in message
    assert f"mv {wal} {wal}.broken" in message and "docs/operations.md" in message
    wal.rename(wal.with_name(wal.name + ".broken"))
    with connections.reader(db_path) as con:  # as of the last checkpoint
        tables = con.execute("SELECT table_name FROM duckdb_tables()").fetchall()
    assert ("scratch",) not in tables and ("fetch_runs",) in tables
