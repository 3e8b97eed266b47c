"""The read commands start without the collection, web and scheduling stacks: a fresh process
that runs `prices`, `history` and `sql` never imports the adapters, HTTP, HTML parsing, templates,
the scheduler or the web server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from priceadvisor.store import db as store

HEAVY = (
    "priceadvisor.collect.adapters",
    "httpx",
    "bs4",
    "uvicorn",
    "starlette",
    "jinja2",
    "apscheduler",
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
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(db), json.dumps(HEAVY)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["codes"] == [0, 0, 0], done.stderr
    assert report["loaded"] == []
