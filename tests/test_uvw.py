"""./uvw: installs (sync, pip, tool) compile bytecode unless told otherwise, so an installed
venv that the service's user cannot write to does not compile from source at every start; `run`
is left alone (uv would re-check the whole venv at every run)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def uv_environment(tmp_path: Path, *args: str, **env: str) -> str:
    """What ./uvw hands to `uv`: a stand-in uv first on PATH prints its UV_COMPILE_BYTECODE."""
    fake = tmp_path / "bin"
    fake.mkdir(exist_ok=True)
    stub = fake / "uv"
    stub.write_text('#!/bin/sh\necho "compile=${UV_COMPILE_BYTECODE:-unset} args=$*"\n')
    stub.chmod(0o755)
    base = {k: v for k, v in os.environ.items() if k not in ("UV_COMPILE_BYTECODE", "UVW_LOCAL")}
    base["PATH"] = f"{fake}:{base['PATH']}"
    done = subprocess.run(
        [str(ROOT / "uvw"), *args],
        env={**base, **env},
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return done.stdout.strip()


@pytest.mark.parametrize(
    "args", [["sync", "--locked"], ["pip", "install", "--python", "/x/bin/python", "."]]
)
def test_installs_compile_bytecode_by_default(tmp_path: Path, args: list[str]) -> None:
    assert uv_environment(tmp_path, *args) == f"compile=1 args={' '.join(args)}"


def test_run_is_left_alone(tmp_path: Path) -> None:
    assert uv_environment(tmp_path, "run", "pytest") == "compile=unset args=run pytest"


@pytest.mark.parametrize("choice", ["0", "1"])
def test_an_explicit_choice_is_kept(tmp_path: Path, choice: str) -> None:
    found = uv_environment(tmp_path, "sync", UV_COMPILE_BYTECODE=choice)
    assert found.startswith(f"compile={choice} ")
