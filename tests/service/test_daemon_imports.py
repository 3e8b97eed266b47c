"""The daemon imports the advisor, and with it numpy (~13 MB of resident memory), only when it
has workloads to advise, and then at start: a broken install fails before the first fetch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

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
    clean = {k: v for k, v in os.environ.items() if not k.upper().startswith("PRICEADVISOR_")}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        env=clean | {"PRICEADVISOR_CONFIG": str(tmp_path / "absent.toml")},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert loaded == {
        "imported": False,
        "started without workloads": False,
        "started with workloads": True,
    }
