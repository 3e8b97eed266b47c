"""The read commands start without the collection, web and scheduling stacks: a fresh process
that runs `prices`, `history` and `sql` never imports the adapters, HTTP, HTML parsing, templates,
the scheduler or the web server; nor the configuration model (pydantic-settings) or pydantic
itself, when the configuration sets nothing those commands do not read; nor parse gpus.toml
(`--gpu` resolves against the catalog the database holds)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from priceadvisor.cli.app import main
from priceadvisor.store import connections

HEAVY = (
    "priceadvisor.collect.adapters",
    "httpx",
    "bs4",
    "uvicorn",
    "starlette",
    "jinja2",
    "apscheduler",
    "numpy",  # the advisor's arithmetic: imported by advise only
    # The full configuration: config_basics resolves what the read commands need.
    "priceadvisor.config",
    "pydantic_settings",
    # Typer 0.29 coerced every option through pydantic; 0.28 parses with click alone.
    "pydantic",
    "priceadvisor.manifest",
    "nanoarrow",  # only writers sync the catalog through Arrow
    "stamina",  # retries are for writers on a lake: imported at the first retried failure
    # A command of cli/app.py runs in an app holding only it: the other modules' commands
    # are neither imported nor built.
    "priceadvisor.cli.sizing",
    "priceadvisor.cli.notify",
    "priceadvisor.cli.serve",
)

# Runs each read command in-process, then reports which heavy modules got imported.
SCRIPT = """
import json, sys
from priceadvisor.cli.app import main
global_args = json.loads(sys.argv[1])
codes = []
for args in (
    ["prices", "--gpu", "H100", "--pricing", "spot"],
    ["history", "--gpu", "H100"],
    ["sql", "select count(*) from offers"],
):
    try:
        main([*global_args, *args])
    except SystemExit as done:
        codes.append(done.code)
heavy = json.loads(sys.argv[2])
loaded = [m for m in heavy if m in sys.modules]
from priceadvisor import gpu_specs
if gpu_specs.gpu_catalog.cache_info().currsize:  # --gpu resolves against the database's catalog
    loaded.append("gpus.toml parsed")
print(json.dumps({"codes": codes, "loaded": loaded}))
"""


def _read_commands(global_args: list[str], env: dict[str, str]) -> list[str]:
    """Runs the read commands in a fresh process: which HEAVY modules they imported."""
    clean = {k: v for k, v in os.environ.items() if not k.upper().startswith("PRICEADVISOR_")}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(global_args), json.dumps(HEAVY)],
        env=clean | env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["codes"] == [0, 0, 0], done.stderr
    loaded: list[str] = report["loaded"]
    return loaded


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "prices.duckdb"
    with connections.writer(path):
        pass  # an empty database with the schema: the read path runs to the end
    return path


def test_read_commands_import_no_collection_web_or_scheduler(db: Path) -> None:
    assert _read_commands(["--db", str(db)], {}) == []


def test_a_config_file_of_read_settings_only_keeps_the_read_path_light(
    db: Path, tmp_path: Path
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'db = "{db}"\nlock_timeout = "30s"\n')
    assert _read_commands([], {"PRICEADVISOR_CONFIG": str(config)}) == []
    assert _read_commands(["--config", str(config)], {"PRICEADVISOR_LOG_LEVEL": "DEBUG"}) == []


def test_any_other_setting_loads_the_full_configuration(db: Path, tmp_path: Path) -> None:
    """The read commands then validate the whole file as every other command does."""
    config = tmp_path / "config.toml"
    config.write_text(f'db = "{db}"\n[http]\nattempts = 3\n')
    assert "pydantic_settings" in _read_commands(["--config", str(config)], {})
    env = {"PRICEADVISOR_HTTP__ATTEMPTS": "3"}
    assert "pydantic_settings" in _read_commands(["--db", str(db)], env)


def _run(capsys: pytest.CaptureFixture[str], args: list[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as done:
        main(args)
    return int(done.value.code or 0), capsys.readouterr().out


def test_help_lists_every_command_after_one_command_ran_alone(
    capsys: pytest.CaptureFixture[str], db: Path
) -> None:
    """A command of the main module runs in an app holding only it; help, before or after,
    still lists the commands of every module."""
    assert _run(capsys, ["--db", str(db), "sql", "select 42 as answer"])[0] == 0
    for args in (["--help"], ["--db", str(db), "--help"]):
        code, out = _run(capsys, args)
        assert code == 0
        for command in ("prices", "sql", "estimate", "advise", "digest", "alerts", "serve"):
            assert f" {command} " in out, (args, command)


def test_a_command_runs_after_global_options_in_either_form(
    capsys: pytest.CaptureFixture[str], db: Path
) -> None:
    for args in (
        ["--db", str(db), "sql", "select 42 as answer"],
        [f"--db={db}", "sql", "select 42"],
    ):
        code, out = _run(capsys, args)
        assert code == 0 and "42" in out
    code, out = _run(capsys, ["--db", str(db), "sql", "--help"])
    assert code == 0 and "One read-only SQL statement" in out
