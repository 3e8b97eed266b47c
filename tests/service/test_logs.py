"""The daemon's log lines: JSON keeps every field a library passes, errors are one line, and a
job cancelled at shutdown is not an error."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import duckdb
import pytest
from apscheduler.schedulers.asyncio import AsyncIOScheduler

from priceadvisor.service.logs import JsonFormatter, configure


@pytest.fixture
def json_logs() -> Iterator[Any]:
    root = logging.getLogger()
    saved_handlers, saved_level = root.handlers[:], root.level
    configure("INFO", json_lines=True)
    buffer = io.StringIO()
    handler = root.handlers[0]
    assert isinstance(handler, logging.StreamHandler)
    handler.setStream(buffer)

    def lines() -> list[dict[str, Any]]:
        return [json.loads(line) for line in buffer.getvalue().splitlines()]

    yield lines
    root.handlers[:] = saved_handlers
    root.setLevel(saved_level)


def test_json_lines_keep_library_extras(json_logs: Any) -> None:
    logging.getLogger("stamina").warning(
        "stamina.retry_scheduled",
        extra={"stamina.retry_num": 2, "stamina.wait_for": 1.5, "stamina.args": ("x",)},
    )
    logging.getLogger("priceadvisor.x").info("ok", extra={"provider": "aws", "url": "https://h/p"})
    first, second = json_logs()
    assert list(first)[:4] == ["ts", "level", "logger", "msg"]
    assert first["level"] == "warning" and first["ts"].endswith("Z")
    assert first["stamina.retry_num"] == 2 and first["stamina.wait_for"] == 1.5
    assert first["stamina.args"] == ["x"]
    assert second["provider"] == "aws" and second["url"] == "https://h/p"


def test_a_logged_exception_is_its_first_line_and_where(json_logs: Any) -> None:
    try:
        raise RuntimeError("Out of Memory Error: failed\nSee also https://duckdb.org/docs/oom")
    except RuntimeError:
        logging.getLogger("priceadvisor.x").exception("job failed", extra={"job": "alerts"})
    [entry] = json_logs()
    assert entry["error"] == "RuntimeError: Out of Memory Error: failed"
    assert entry["error_at"].startswith("test_logs.py:")
    assert entry["job"] == "alerts" and entry["level"] == "error"


def test_a_job_cancelled_at_shutdown_is_logged_as_info(json_logs: Any) -> None:
    try:
        raise asyncio.CancelledError
    except asyncio.CancelledError:
        logging.getLogger("apscheduler.executors.default").exception(
            'Job "%s" raised an exception', "fetch aws"
        )
    [entry] = json_logs()
    assert entry["level"] == "info" and entry["msg"] == "fetch aws cancelled at shutdown"
    assert "error" not in entry


def test_other_job_errors_stay_errors(json_logs: Any) -> None:
    try:
        raise ValueError("bad")
    except ValueError:
        logging.getLogger("apscheduler.executors.default").exception(
            'Job "%s" raised an exception', "digest"
        )
    [entry] = json_logs()
    assert entry["level"] == "error" and entry["error"] == "ValueError: bad"


def test_a_real_scheduler_job_cancelled_at_shutdown_logs_no_error(json_logs: Any) -> None:
    async def main() -> None:
        started = asyncio.Event()

        async def fetch_job() -> None:
            started.set()
            await asyncio.sleep(3600)

        scheduler = AsyncIOScheduler()
        scheduler.add_job(fetch_job, name="fetch aws")  # no trigger: runs once, now
        scheduler.start()
        await asyncio.wait_for(started.wait(), 60)
        scheduler.shutdown(wait=False)
        running = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in running:  # what the daemon does after its shutdown grace
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)

    asyncio.run(main())
    entries = json_logs()
    assert not [e for e in entries if e["level"] == "error"]
    assert any(e["msg"].endswith("cancelled at shutdown") for e in entries)


def test_json_log_keeps_the_first_line_of_a_multi_line_duckdb_error() -> None:
    con = duckdb.connect()
    try:
        con.execute("SELECT * FROM no_such_table")
    except duckdb.Error as exc:
        assert "\n" in str(exc).strip()  # DuckDB's message spans several lines
        record = logging.LogRecord(
            "t", logging.ERROR, "f", 1, "failed", None, (type(exc), exc, None)
        )
    else:
        pytest.fail("the query should have failed")
    entry = json.loads(JsonFormatter().format(record))
    assert entry["error"].startswith("CatalogException: Catalog Error: Table with name")
    assert "See also" not in entry["error"] and "\n" not in entry["error"]
