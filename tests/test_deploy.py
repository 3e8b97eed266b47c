"""deploy/: the Docker image's layout (checked and rebuilt without a Docker engine), compose's
hardening, and the systemd unit's credentials and documentation."""

from __future__ import annotations

import configparser
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from priceadvisor.config import load_settings, lookup_secret

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"


def dockerfile() -> str:
    return (DEPLOY / "Dockerfile").read_text()


def stages() -> dict[str, str]:
    """Stage name -> its instructions (FROM … AS name up to the next FROM)."""
    parts = re.split(r"^FROM ", dockerfile(), flags=re.M)[1:]
    return {re.search(r" AS (\w+)", p.splitlines()[0]).group(1): p for p in parts}  # type: ignore[union-attr]


def venv_path() -> str:
    [path] = re.findall(r"UV_PROJECT_ENVIRONMENT=(\S+)", stages()["build"])
    return path


def test_image_copies_the_venv_to_the_path_it_was_built_at() -> None:
    built = venv_path()
    [(source, target)] = re.findall(r"COPY --from=build (\S+) (\S+)", stages()["runtime"])
    assert source == target == built  # uv's scripts carry absolute interpreter paths
    assert f"PATH={built}/bin:" in stages()["runtime"]
    bases = {s.splitlines()[0].split(" AS ")[0] for s in stages().values()}
    assert len(bases) == 1  # the same Python at the same path in both stages


def copied_sources() -> list[str]:
    return [
        src
        for line in stages()["build"].splitlines()
        if line.startswith("COPY ") and "--from" not in line
        for src in line.split()[1:-1]
    ]


@pytest.mark.slow
def test_venv_built_as_the_dockerfile_does_runs_its_entry_point(tmp_path: Path) -> None:
    """The build stage's commands, at a path of our own, then the entry point from elsewhere."""
    app, venv = tmp_path / "app", tmp_path / "opt" / "priceadvisor" / ".venv"
    app.mkdir()
    for source in copied_sources():
        target = app / source
        if (ROOT / source).is_dir():
            shutil.copytree(ROOT / source, target)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / source, target)
    env = os.environ | {"UV_PROJECT_ENVIRONMENT": str(venv), "UV_PYTHON_DOWNLOADS": "never"}
    env.pop("VIRTUAL_ENV", None)
    for command in re.findall(r"^RUN (uv sync .*)$", stages()["build"], flags=re.M):
        done = subprocess.run(
            [os.environ.get("UV", "uv"), *command.split()[1:]],  # uv run says where it is
            cwd=app,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr
    script = venv / "bin" / "priceadvisor"
    assert script.read_text().splitlines()[0] == f"#!{venv}/bin/python"
    run = subprocess.run(
        [str(script), "--version"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert run.returncode == 0 and run.stdout.startswith("priceadvisor "), run.stderr
    installed = list(venv.glob("lib/python*/site-packages/priceadvisor/_data/db/migrations"))
    assert installed, "the package (with its data) is installed into the venv, not linked"


def test_compose_is_hardened_and_needs_no_secret_file() -> None:
    compose = (DEPLOY / "compose.yaml").read_text()
    assert re.search(r"^\s+read_only: true$", compose, flags=re.M)
    assert re.search(r"^\s+cap_drop:\n\s+- ALL$", compose, flags=re.M)
    assert "- no-new-privileges:true" in compose
    assert not re.search(r"^secrets:", compose, flags=re.M)  # no file every user must create
    assert "- ./secrets:/run/secrets:ro" in compose  # a bind mount: a missing folder is fine


def unit() -> configparser.RawConfigParser:
    parser = configparser.RawConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string((DEPLOY / "priceadvisor.service").read_text())
    return parser


def test_unit_loads_optional_credentials_from_one_folder() -> None:
    text = (DEPLOY / "priceadvisor.service").read_text()
    assert re.findall(r"^LoadCredential=(.*)$", text, flags=re.M) == [
        "priceadvisor:/etc/priceadvisor/credentials"
    ]
    assert unit()["Service"]["NoNewPrivileges"] == "yes"


def test_unit_documentation_is_a_file_the_install_puts_there() -> None:
    doc = unit()["Unit"]["Documentation"]
    assert doc.startswith("file:/")
    operations = (ROOT / "docs" / "operations.md").read_text()
    assert f"docs/operations.md {doc.removeprefix('file:')}" in operations


def test_documented_install_lets_the_service_user_read_its_config() -> None:
    operations = (ROOT / "docs" / "operations.md").read_text()
    assert "install -d -m 0750 -g priceadvisor /etc/priceadvisor" in operations
    assert "install -m 0640 -g priceadvisor deploy/config.example.toml" in operations


def test_directory_credentials_are_read_under_systemds_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    credentials = tmp_path / "credentials"
    credentials.mkdir()
    (credentials / "priceadvisor_GCP_API_KEY").write_text("from-systemd\n")
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(credentials))
    monkeypatch.delenv("GCP_API_KEY", raising=False)
    settings = load_settings()
    secret = lookup_secret(settings, "GCP_API_KEY")
    assert secret is not None and secret.get_secret_value() == "from-systemd"
    assert lookup_secret(settings, "LAMBDA_API_KEY") is None
