"""What the daemon imports only when it needs it. The advisor, and with it numpy (~13 MB of
resident memory), only when it has workloads to advise, and then at start: a broken install
fails before the first fetch. Jinja with the first render, aiosmtplib with the first mail, the
dashboard's routes only when the dashboard is on."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

SCRIPT = """
import json, sys
from priceadvisor.config import Settings, WorkloadProfile
from priceadvisor.service import daemon

loaded = {"imported": "numpy" in sys.modules}
daemon._import_advisor(Settings())
loaded["started without workloads"] = "numpy" in sys.modules
profile = WorkloadProfile(name="t", task="lora", model="llama-3.1-8b", train_tokens=1e8)
daemon._import_advisor(Settings(workloads=[profile]))
loaded["started with workloads"] = "priceadvisor.sizing.advisor" in sys.modules
print(json.dumps(loaded))
"""


def test_only_a_daemon_with_workloads_imports_the_advisor_and_then_at_start(
    tmp_path: Path,
) -> None:
    loaded = _printed(tmp_path, SCRIPT)
    assert loaded == {
        "imported": False,
        "started without workloads": False,
        "started with workloads": True,
    }


LAZY = """
import asyncio, json, sys
import priceadvisor.cli.app, priceadvisor.service.daemon, priceadvisor.service.web
from priceadvisor.config import EmailSettings
from priceadvisor.notify import DeliveryError, Message
from priceadvisor.notify.email import EmailChannel
from priceadvisor.notify.render import environment

LAZY = ("jinja2", "aiosmtplib")
loaded = {"at start": sorted(m for m in LAZY if m in sys.modules)}
assert environment().from_string("{{ 1.5 | usd }}").render() == "$1.50"
settings = EmailSettings(host="127.0.0.1", port=int(sys.argv[1]), sender="a@b.c",
                         recipients=["d@e.f"], security="none", timeout=5)
try:
    asyncio.run(EmailChannel(settings, None).send(Message("k", "s", "t", "<p>h</p>")))
except DeliveryError:
    pass
loaded["after a render and a mail"] = sorted(m for m in LAZY if m in sys.modules)
print(json.dumps(loaded))
"""


def test_the_daemon_loads_jinja_and_smtp_only_when_it_renders_or_mails(tmp_path: Path) -> None:
    """The daemon's start (its modules and the web server's) imports neither Jinja nor
    aiosmtplib: each loads with the first page or message rendered and the first mail sent."""
    with socket.socket() as closed:  # a port nothing listens on: the send fails, after importing
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    loaded = _printed(tmp_path, LAZY, str(port))
    assert loaded == {"at start": [], "after a render and a mail": ["aiosmtplib", "jinja2"]}


SERVER = """
import asyncio, json, sys
from priceadvisor.config import DaemonSettings, Settings
from priceadvisor.service.daemon import Daemon

async def start(dashboard: bool) -> list[str]:
    settings = Settings(db=sys.argv[1], daemon=DaemonSettings(health_port=0, dashboard=dashboard))
    server = await Daemon(settings, offline=True)._start_health()
    server.close()
    await server.wait_closed()
    return sorted(m for m in ("priceadvisor.service.dashboard", "jinja2") if m in sys.modules)

loaded = {"dashboard off": asyncio.run(start(False)), "dashboard on": asyncio.run(start(True))}
print(json.dumps(loaded))
"""


def test_the_web_server_imports_the_dashboard_only_when_it_is_on(tmp_path: Path) -> None:
    """/healthz, /metrics and OpenCost are served without the dashboard's module (nor Jinja);
    with the dashboard on its routes load, and Jinja still waits for the first page."""
    loaded = _printed(tmp_path, SERVER, str(tmp_path / "web.duckdb"))
    assert loaded == {"dashboard off": [], "dashboard on": ["priceadvisor.service.dashboard"]}


def _printed(tmp_path: Path, script: str, *args: str) -> Any:
    """What `script` prints last, as JSON, run in a fresh interpreter with no priceadvisor
    settings from the environment (and no config file)."""
    clean = {k: v for k, v in os.environ.items() if not k.upper().startswith("PRICEADVISOR_")}
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        env=clean | {"PRICEADVISOR_CONFIG": str(tmp_path / "absent.toml")},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
