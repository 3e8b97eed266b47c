"""The data folders are found from a checkout / editable install and from a built wheel."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from priceadvisor import resources

ROOT = Path(__file__).resolve().parents[2]


def test_editable_install_finds_the_checkout_folders() -> None:
    assert resources.providers_dir() == ROOT / "providers"
    assert resources.migrations_dir() == ROOT / "db" / "migrations"
    assert resources.templates_dir() == ROOT / "templates"
    assert resources.recordings_dir() == ROOT / "providers" / "recordings"
    assert resources.sizing_data_dir() == ROOT / "sizing-data"


def test_unknown_folder_is_a_clear_error() -> None:
    with pytest.raises(KeyError):
        resources.data_dir("nope")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from hatchling.builders.wheel import WheelBuilder

    out = tmp_path_factory.mktemp("dist")
    built = list(WheelBuilder(str(ROOT)).build(directory=str(out), versions=["standard"]))
    assert len(built) == 1
    return Path(built[0])


@pytest.mark.slow
def test_wheel_carries_every_data_folder(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for expected in (
        "priceadvisor/_data/providers/gpus.toml",
        "priceadvisor/_data/providers/regions.toml",
        "priceadvisor/_data/providers/azure.toml",
        "priceadvisor/_data/db/migrations/0001_initial.sql",
        "priceadvisor/_data/db/views/offers.sql",
        "priceadvisor/_data/templates/cli/demo_next_steps.txt.j2",
        "priceadvisor/_data/providers/recordings/azure/recordings.toml",
        "priceadvisor/_data/sizing-data/models.toml",
        "priceadvisor/_data/sizing-data/calibration.toml",
        "priceadvisor/_data/sizing-data/demo-workloads.toml",  # the demo's advise step
        "priceadvisor/resources.py",
    ):
        assert expected in names, expected


PROBE = """
import sys
from priceadvisor import resources
from priceadvisor.notify import render
from priceadvisor.cli.app import main
print(resources.migrations_dir())
print(resources.templates_dir())
print(resources.providers_dir())
print(render.environment().get_template("cli/demo_next_steps.txt.j2").name)
sys.argv = ["priceadvisor", "--db", sys.argv[1], "fetch", "--offline", "--format", "csv"]
main()
"""


@pytest.mark.slow
def test_installed_wheel_finds_data_and_runs_offline(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    env = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path / "w.duckdb")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    data = site / "priceadvisor" / "_data"
    assert lines[0] == str(data / "db" / "migrations")
    assert lines[1] == str(data / "templates")
    assert lines[2] == str(data / "providers")
    assert lines[3] == "cli/demo_next_steps.txt.j2"
    assert any(line.startswith("azure,ok,57,") for line in lines)  # 56 hourly, 1 reservation
