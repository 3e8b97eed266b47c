"""The README's user install (its ci:install block) installs the versions uv.lock holds:
`uv tool install` alone resolves afresh, so the block hands it the lock as constraints."""

from __future__ import annotations

import os
import re
import subprocess
import tomllib
from pathlib import Path

import pytest
from packaging.markers import Marker, default_environment
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]


def readme_block(tag: str) -> list[str]:
    done = subprocess.run(
        [str(ROOT / ".ci" / "readme-commands"), "--print", tag],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.splitlines()


def test_the_install_block_installs_with_the_locks_constraints() -> None:
    [install, check] = readme_block("install")
    assert "export --locked" in install and "tool install --constraints /dev/stdin ." in install
    assert check == "priceadvisor --version"


def locked_versions(python_version: str) -> dict[str, str]:
    """Each runtime package of uv.lock at its version for this Python (numpy has two)."""
    lock = tomllib.loads((ROOT / "uv.lock").read_text())
    environment = default_environment() | {
        "python_full_version": python_version,
        "python_version": ".".join(python_version.split(".")[:2]),
    }
    versions = {}
    for package in lock["package"]:
        markers = package.get("resolution-markers", [])
        if not markers or any(Marker(m).evaluate(environment) for m in markers):
            versions[canonicalize_name(package["name"])] = package.get("version", "")
    return versions


def installed_versions(tool: Path) -> tuple[str, dict[str, str]]:
    config = (tool / "pyvenv.cfg").read_text()
    [python_version] = re.findall(r"^version_info = (\S+)", config, flags=re.M)
    found = {}
    for info in tool.glob("lib/python*/site-packages/*.dist-info"):
        name, version = info.name.removesuffix(".dist-info").rsplit("-", 1)
        found[canonicalize_name(name)] = version
    return python_version, found


@pytest.mark.slow
def test_the_readmes_install_gets_the_locked_versions(tmp_path: Path) -> None:
    """The block as a user runs it, from uv's cache only (no network), into folders of the
    test's own; every installed package but the project itself is at its locked version."""
    env = os.environ | {
        "UV_TOOL_DIR": str(tmp_path / "tools"),
        "UV_TOOL_BIN_DIR": str(tmp_path / "bin"),
        "UV_OFFLINE": "1",
        "UV_PYTHON_DOWNLOADS": "never",
    }
    env.pop("VIRTUAL_ENV", None)
    [install, _] = readme_block("install")
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", install],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    python_version, installed = installed_versions(tmp_path / "tools" / "priceadvisor")
    locked = locked_versions(python_version)
    installed.pop("priceadvisor")
    differing = {n: (v, locked.get(n)) for n, v in installed.items() if locked.get(n) != v}
    assert len(installed) > 30 and differing == {}
