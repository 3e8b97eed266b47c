"""The PostgreSQL fixture really serves SQL (through DuckDB's postgres extension elsewhere)."""

from __future__ import annotations

import subprocess

from tests.pg import pg_bin


def test_fixture_database_answers_queries(pg_dsn: str) -> None:
    fields = dict(part.split("=", 1) for part in pg_dsn.split())
    argv = [str(pg_bin() / "psql"), "-At", "-h", fields["host"], "-p", fields["port"]]
    argv += ["-U", fields["user"], "-d", fields["dbname"], "-c", "select current_database(), 6*7"]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout.strip()
    assert out == f"{fields['dbname']}|42"
