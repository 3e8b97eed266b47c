"""Logging: human lines on a terminal, one JSON object per line otherwise (journald, Docker).

Records may carry `provider` and `job` (pass them in `extra=`); both end up as fields. Messages
never contain credentials: URLs are logged without their query strings (collect.http), and
settings are never logged whole.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

_FIELDS = ("provider", "job", "run_id", "status")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        entry |= {k: getattr(record, k) for k in _FIELDS if hasattr(record, k)}
        if record.exc_info and record.exc_info[1] is not None:
            entry["error"] = error_line(record.exc_info[1])
        return json.dumps(entry, ensure_ascii=False)


def error_line(exc: BaseException) -> str:
    """The exception's class and the first line of its message: DuckDB's messages run over
    several lines and end with "See also https://…", which says nothing about the error."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        context = " ".join(f"{k}={getattr(record, k)}" for k in _FIELDS if hasattr(record, k))
        line = f"{record.levelname.lower():7s} {record.getMessage()}"
        return f"{line}  [{context}]" if context else line


def configure(level: str, json_lines: bool | None = None) -> None:
    """Root logging for a process; JSON unless stderr is a terminal (or as forced)."""
    as_json = not sys.stderr.isatty() if json_lines is None else json_lines
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if as_json else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for noisy in ("httpx", "httpcore", "apscheduler.executors.default"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    logging.getLogger("apscheduler").setLevel(logging.WARNING)
