"""The docs hold: every SQL example in docs/sql.md runs (through `priceadvisor sql`, so it is
also read-only) against a database fetched from the recordings, the freshness example reports
the latest run's error and no older one, and nothing cites files that are not in the repository."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from priceadvisor.records import RunStatus
from tests.conftest import cli, ingest_quotes

ROOT = Path(__file__).resolve().parents[1]
SQL_DOC = ROOT / "docs" / "sql.md"


def sql_examples() -> list[str]:
    return re.findall(r"```sql\n(.*?)```", SQL_DOC.read_text(), flags=re.S)


@pytest.fixture(scope="module")
def fetched(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from priceadvisor.cli.app import main

    db = tmp_path_factory.mktemp("docs") / "docs.duckdb"
    with pytest.raises(SystemExit) as done:
        main(["--db", str(db), "fetch", "--offline", "--format", "json"])
    assert done.value.code in (0, None)
    return db


def test_sql_doc_has_examples() -> None:
    assert len(sql_examples()) >= 6


@pytest.mark.parametrize("query", sql_examples(), ids=lambda q: q.split("\n")[0][:40])
def test_every_sql_example_runs(
    capsys: pytest.CaptureFixture[str], fetched: Path, query: str
) -> None:
    code, out, err = cli(capsys, "--db", str(fetched), "sql", "-f", "json", query.strip())
    assert code == 0, err
    assert isinstance(json.loads(out), list)


def test_freshness_example_shows_the_latest_runs_error_only(
    capsys: pytest.CaptureFixture[str], db_path: Path
) -> None:
    [freshness] = [q for q in sql_examples() if "last_error" in q]
    cli(capsys, "--db", str(db_path), "fetch", "--offline", "-p", "oracle")
    ingest_quotes(db_path, "oracle", [], status=RunStatus.FAILED, error="HTTP 503 from upstream")
    code, out, _ = cli(capsys, "--db", str(db_path), "sql", "-f", "json", freshness.strip())
    assert code == 0
    [failed] = json.loads(out)
    assert failed["last_status"] == "failed" and failed["last_error"] == "HTTP 503 from upstream"
    cli(capsys, "--db", str(db_path), "fetch", "--offline", "-p", "oracle")  # healed
    code, out, _ = cli(capsys, "--db", str(db_path), "sql", "-f", "json", freshness.strip())
    [healed] = json.loads(out)
    assert healed["last_status"] == "ok" and healed["last_error"] is None
    assert healed["last_source"] == "recorded"


CITATIONS = re.compile(r"DESIGN §|shared/reference|\.\./shared|sizing\.md")


def test_nothing_cites_files_outside_the_repository() -> None:
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    if not tracked:
        pytest.skip("not a git checkout")
    found = []
    for name in tracked:
        path = ROOT / name
        if "recordings" in path.parts and path.name != "README.md":
            continue  # recorded responses are data, not docs
        if path.suffix in {".py", ".md", ".toml", ".sql", ".j2", ".yaml"} or path.name in {
            "Dockerfile",
            "priceadvisor.service",
        }:
            text = path.read_text(encoding="utf-8", errors="replace")
            found += [f"{name}: {m.group()}" for m in CITATIONS.finditer(text)]
    found = [f for f in found if not f.startswith("tests/test_docs.py")]
    assert found == []
