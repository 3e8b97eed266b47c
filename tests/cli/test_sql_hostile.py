"""`priceadvisor sql` against hostile statements: each is refused in one line, and neither the
database file nor the file system nor a local web server sees any effect."""

from __future__ import annotations

import hashlib
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.conftest import cli, cli_process

DB = "{db}"
HERE = "{dir}"
WEB = "{web}"

# Statements that must not run. {db} is the database file, {dir} a folder beside it holding a
# CSV file, {web} a local HTTP server that counts requests.
HOSTILE = [
    f"COPY offers TO '{HERE}/out.csv'",
    f"COPY (select 'x') TO '{DB}' (FORMAT csv)",
    f"COPY core.gpus FROM '{HERE}/secret.csv'",
    f"EXPORT DATABASE '{HERE}/dump'",
    f"IMPORT DATABASE '{HERE}/dump'",
    f"ATTACH '{HERE}/other.duckdb' AS other",
    "ATTACH ':memory:' AS scratch",
    "INSTALL httpfs",
    "FORCE INSTALL sqlite_scanner",
    "LOAD httpfs",
    "SET enable_external_access = true",
    "RESET lock_configuration",
    "SET threads = 1",
    "SET VARIABLE x = 1",
    "PRAGMA enable_profiling",
    "CHECKPOINT",
    "CREATE TABLE t AS SELECT 1",
    "CREATE SECRET s (TYPE s3, KEY_ID 'a', SECRET 'b')",
    "DROP VIEW offers",
    "DELETE FROM core.price_history",
    "UPDATE core.fetch_runs SET status = 'ok'",
    "WITH x AS (SELECT 1 AS a) INSERT INTO core.gpus (gpu_model) SELECT 'x' FROM x",
    "WITH gone AS (DELETE FROM core.fetch_runs RETURNING *) SELECT * FROM gone",
    "BEGIN TRANSACTION",
    f"SELECT * FROM read_csv('{HERE}/secret.csv')",
    "SELECT * FROM read_csv_auto('/etc/passwd')",
    f"SELECT * FROM read_text('{HERE}/secret.csv')",
    "SELECT * FROM read_blob('/etc/hostname')",
    "SELECT * FROM read_json_objects('/proc/self/environ')",
    f"SELECT * FROM '{HERE}/secret.csv'",
    f"SELECT * FROM glob('{HERE}/*')",
    f"SELECT * FROM read_csv('{WEB}/x.csv')",
    f"SELECT * FROM read_parquet('{WEB}/x.parquet')",
    f"SELECT * FROM read_json('{WEB}/x.json')",
    f"SELECT * FROM '{WEB}/x.csv'",
    "SELECT * FROM read_parquet('s3://bucket/x.parquet')",
    "SELECT * FROM read_csv('https://example.com/x.csv')",
    f"SELECT * FROM query('SELECT * FROM read_csv(''{HERE}/secret.csv'')')",
    f"SELECT * FROM query_table('{HERE}/secret.csv')",
    f"SELECT * FROM sqlite_scan('{HERE}/x.sqlite', 't')",
    "SELECT * FROM duckdb_extensions()",
    f"SELECT 1; COPY offers TO '{HERE}/out.csv'",
    "SELECT 1 /* a comment */; DELETE FROM core.offers_current",
    "SELECT 1 -- a comment\n; DROP VIEW offers",
    f"/* EXPLAIN */ COPY offers TO '{HERE}/out.csv'",
]
# EXPLAIN ANALYZE runs its statement: each single statement again behind it.
EXPLAINED = [f"EXPLAIN ANALYZE {s}" for s in HOSTILE if ";" not in s] + [
    f"EXPLAIN (FORMAT json) COPY offers TO '{HERE}/out.csv'",
    f"EXPLAIN EXPLAIN ANALYZE COPY offers TO '{HERE}/out.csv'",
    f"/* x */ explain analyze -- y\n COPY (select 'x') TO '{DB}' (FORMAT csv)",
    f"/* ééé */ EXPLAIN ANALYZE /* ünïcödé */ COPY (SELECT 'é') TO '{DB}' (FORMAT csv)",
]


@dataclass
class Web:
    url: str
    requests: list[str] = field(default_factory=list)


@pytest.fixture(scope="module")
def web() -> Iterator[Web]:
    state = Web("")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state.requests.append(self.path)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"a,b\n1,2\n")

        def do_HEAD(self) -> None:
            self.do_GET()

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()


@pytest.fixture
def sandbox(tmp_path: Path, migrated_db: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A database copy, a readable CSV beside it, and HOME here (an extension install would
    land in HOME/.duckdb and show up in the listing)."""
    shutil.copy(migrated_db, tmp_path / "prices.duckdb")
    (tmp_path / "secret.csv").write_text("k,v\nclassified,7781\n")
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


def _fill(statement: str, sandbox: Path, web: Web) -> str:
    return statement.format(db=sandbox / "prices.duckdb", dir=sandbox, web=web.url)


def _snapshot(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize("statement", HOSTILE + EXPLAINED)
def test_hostile_statement_is_refused_and_changes_nothing(
    capsys: pytest.CaptureFixture[str], sandbox: Path, web: Web, statement: str
) -> None:
    before = _snapshot(sandbox)
    db = sandbox / "prices.duckdb"
    code, out, err = cli(capsys, "--db", str(db), "sql", _fill(statement, sandbox, web))
    assert code == 1, out
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(("error: refused: ", "error: SQL error: ")), err
    assert "classified" not in out + err
    assert _snapshot(sandbox) == before
    assert web.requests == []


def test_explain_analyze_of_copy_is_refused_by_the_cli_itself(
    capsys: pytest.CaptureFixture[str], sandbox: Path, web: Web
) -> None:
    db = sandbox / "prices.duckdb"
    statement = f"EXPLAIN ANALYZE COPY (select 'x') TO '{db}' (FORMAT csv)"
    code, _, err = cli(capsys, "--db", str(db), "sql", statement)
    assert (code, err.strip()) == (
        1,
        "error: refused: EXPLAIN is allowed of a query only, not of COPY",
    )


def test_local_files_are_refused_by_duckdb(
    capsys: pytest.CaptureFixture[str], sandbox: Path, web: Web
) -> None:
    """A plain SELECT passes the CLI's check; the sealed connection refuses the file."""
    statement = f"SELECT * FROM read_csv('{sandbox}/secret.csv')"
    code, _, err = cli(capsys, "--db", str(sandbox / "prices.duckdb"), "sql", statement)
    assert code == 1
    assert err.startswith("error: refused: Permission Error: Cannot access file")


@pytest.mark.parametrize(
    "statement",
    [
        "SELECT count(*) AS n FROM offers",
        "EXPLAIN ANALYZE SELECT count(*) FROM price_history",
        "EXPLAIN (FORMAT json) SELECT 1",
        "explain analyze (select 1)",
        "/* ééé */ EXPLAIN ANALYZE /* ü */ SELECT 'ö' AS o",
        "WITH x AS (SELECT 1 AS a) SELECT a FROM x",
        "SELECT * FROM query('SELECT 42 AS answer')",
        "SELECT now() AS t",
    ],
)
def test_read_queries_still_run(
    capsys: pytest.CaptureFixture[str], sandbox: Path, statement: str
) -> None:
    before = _snapshot(sandbox)
    code, out, err = cli(capsys, "--db", str(sandbox / "prices.duckdb"), "sql", statement)
    assert (code, err) == (0, "")
    assert out.strip()
    assert _snapshot(sandbox) == before


@pytest.mark.parametrize(
    "command", [["fetch", "--offline", "-p", "azure"], ["prices"], ["sql", "select 1"]]
)
def test_a_sqlite_file_is_named_and_no_extension_is_installed(
    capsys: pytest.CaptureFixture[str], sandbox: Path, command: list[str]
) -> None:
    import sqlite3

    path = sandbox / "other.db"
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE t (a)")
    con.close()
    code, _, err = cli(capsys, "--db", str(path), *command)
    assert code == 1
    assert err.strip() == f"error: {path} is a SQLite file, not a priceadvisor DuckDB database"
    assert not (sandbox / ".duckdb").exists()


def test_refusal_in_a_real_process(sandbox: Path, web: Web) -> None:
    db = sandbox / "prices.duckdb"
    before = _snapshot(sandbox)
    done = cli_process(
        "--db", str(db), "sql", f"EXPLAIN ANALYZE COPY (select 'x') TO '{db}' (FORMAT csv)"
    )
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: refused")
    assert _snapshot(sandbox) == before
