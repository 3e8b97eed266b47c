"""Logging: human lines on a terminal, one JSON object per line otherwise (journald, Docker).

JSON lines come from python-json-logger: besides ts, level, logger and msg, every field a
caller or library passes in `extra=` is kept (`provider`, `job`, `run_id`, `status`, the HTTP
retry details `url` and `attempt`, …). A logged exception becomes a one-line `error` (its type
and the first line of its message; DuckDB puts the message first and a "See also" link last)
plus `error_at`, the innermost frame. Messages never contain credentials: URLs are logged
without their query strings (collect.http), and settings are never logged whole.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import traceback
from types import TracebackType
from typing import Any

from pythonjsonlogger.json import JsonFormatter as _LibraryJsonFormatter

_FIELDS = ("provider", "job", "run_id", "status")
_ORDER = ("ts", "level", "logger", "msg")


def one_line_error(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


class JsonFormatter(_LibraryJsonFormatter):
    def __init__(self) -> None:
        super().__init__(
            ["message", "name", "levelname"],
            rename_fields={"message": "msg", "name": "logger", "levelname": "level"},
            timestamp="ts",
            json_ensure_ascii=False,
        )

    def format(self, record: logging.LogRecord) -> str:
        if record.exc_info and record.exc_info[1] is not None:
            record.error_at = _innermost_frame(record.exc_info[2])
        return super().format(record)

    def formatException(self, ei: Any) -> str:
        return one_line_error(ei[1])

    def process_log_record(self, log_data: dict[str, Any]) -> dict[str, Any]:
        log_data["level"] = str(log_data["level"]).lower()
        log_data["ts"] = log_data["ts"].strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        if "exc_info" in log_data:
            log_data["error"] = log_data.pop("exc_info")
        ordered = {key: log_data.pop(key) for key in _ORDER if key in log_data}
        return ordered | log_data


def _innermost_frame(tb: TracebackType | None) -> str | None:
    frames = traceback.extract_tb(tb) if tb else []
    if not frames:
        return None
    last = frames[-1]
    return f"{last.filename.rsplit('/', 1)[-1]}:{last.lineno} in {last.name}"


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        context = " ".join(f"{k}={getattr(record, k)}" for k in _FIELDS if hasattr(record, k))
        line = f"{record.levelname.lower():7s} {record.getMessage()}"
        if record.exc_info and record.exc_info[1] is not None:
            line += f": {one_line_error(record.exc_info[1])}"
        return f"{line}  [{context}]" if context else line


class CancelledAtShutdown(logging.Filter):
    """APScheduler logs any BaseException out of a coroutine job as an ERROR with a traceback;
    a job cancelled because the daemon is stopping is no error: it becomes one INFO line."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], asyncio.CancelledError):
            record.levelno, record.levelname = logging.INFO, "INFO"
            record.msg, record.exc_info, record.exc_text = "%s cancelled at shutdown", None, None
            record.args = tuple(record.args or ())[:1]
        return True


def configure(level: str, json_lines: bool | None = None) -> None:
    """Root logging for a process; JSON unless stderr is a terminal (or as forced)."""
    as_json = not sys.stderr.isatty() if json_lines is None else json_lines
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if as_json else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for noisy in ("httpx", "httpcore", "apscheduler", "uvicorn"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    # one warning per malformed request would let a flooder fill the journal
    logging.getLogger("uvicorn.error").setLevel(logging.ERROR)
    executors = logging.getLogger("apscheduler.executors.default")
    executors.setLevel(logging.WARNING)
    if not any(isinstance(f, CancelledAtShutdown) for f in executors.filters):
        executors.addFilter(CancelledAtShutdown())
