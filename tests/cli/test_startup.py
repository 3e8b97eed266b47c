"""The read commands start without the collection, web and scheduling stacks: a fresh process
that runs `prices`, `history` and `sql` never imports the adapters, HTTP, HTML parsing, templates,
the scheduler or the web server; nor the configuration model (pydantic-settings), when the
configuration sets nothing those commands do not read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from priceadvisor.cli.app import main
from priceadvisor.store import db as store

HEAVY = (
    "priceadvisor.collect.adapters",
    "httpx",
    "bs4",
    "uvicorn",
    "starlette",
    "jinja2",
    "apscheduler",
    # The full configuration: config_light resolves what the read commands need.
    "priceadvisor.config",
    "pydantic_settings",
    "priceadvisor.manifest",
    "nanoarrow",  # only writers sync the catalog through Arrow
)

# Runs each read command in-process, then reports which heavy modules got imported.
SCRIPT = """
import json, sys
from priceadvisor.cli.app import main
db = sys.argv[1]
codes = []
for args in (
    ["prices", "--gpu", "H100", "--pricing", "spot"],
    ["history", "--gpu", "H100"],
    ["sql", "select count(*) from offers"],
):
    try:
        main(["--db", db, *args])
    except SystemExit as done:
        codes.append(done.code)
heavy = json.loads(sys.argv[2])
print(json.dumps({"codes": codes, "loaded": [m for m in heavy if m in sys.modules]}))
"""


def test_read_commands_import_no_collection_web_or_scheduler(tmp_path: Path) -> None:
    db = tmp_path / "prices.duckdb"
    with store.writer(db):
        pass  # an empty database with the schema: the read path runs to the end
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("PRICEADVISOR_")}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(db), json.dumps(HEAVY)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["codes"] == [0, 0, 0], done.stderr
    assert report["loaded"] == []


def _run(capsys: pytest.CaptureFixture[str], args: list[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as done:
        main(args)
    return int(done.value.code or 0), capsys.readouterr().out


def test_help_lists_every_command_after_one_command_ran_alone(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A command of the main module runs in an app holding only it; help, before or after,
    still lists the commands of every module."""
    db = tmp_path / "prices.duckdb"
    with store.writer(db):
        pass
    assert _run(capsys, ["--db", str(db), "sql", "select 42 as answer"])[0] == 0
    for args in (["--help"], ["--db", str(db), "--help"]):
        code, out = _run(capsys, args)
        assert code == 0
        for command in ("prices", "sql", "estimate", "advise", "digest", "alerts", "serve"):
            assert f" {command} " in out, (args, command)


def test_a_command_runs_after_global_options_in_either_form(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "prices.duckdb"
    with store.writer(db):
        pass
    for args in (
        ["--db", str(db), "sql", "select 42 as answer"],
        [f"--db={db}", "sql", "select 42"],
    ):
        code, out = _run(capsys, args)
        assert code == 0 and "42" in out
    code, out = _run(capsys, ["--db", str(db), "sql", "--help"])
    assert code == 0 and "One read-only SQL statement" in out
