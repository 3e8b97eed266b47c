"""Log lines keep what an operator needs from an error: its first line."""

from __future__ import annotations

import json
import logging

import duckdb
import pytest

from priceadvisor.service.logs import JsonFormatter


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
