"""--help shows every bracketed word it was given: Typer renders help through Rich markup,
which takes `[lake]` for a style and drops it unless escaped."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import typer

from priceadvisor.cli.app import _whole_app
from tests.conftest import cli

BRACKETED = re.compile(r"\\?\[[^\]\s]+\]")


# Typer ships its own click: commands are matched by shape, not by click's classes.
def _commands(group: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield path
    for name, command in getattr(group, "commands", {}).items():
        yield from _commands(command, (*path, name))


def _help_texts(command: Any) -> list[str]:
    texts = [command.help or "", command.short_help or ""]
    return texts + [getattr(p, "help", None) or "" for p in command.params]


@pytest.fixture(autouse=True)
def wide_help(monkeypatch: pytest.MonkeyPatch) -> None:
    """A help line on one screen line: no box drawn through the words."""
    monkeypatch.setenv("COLUMNS", "250")
    monkeypatch.setenv("TERMINAL_WIDTH", "250")


def test_root_help_keeps_lake_in_brackets(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "--help")
    assert code == 0 and "([lake] settings)" in " ".join(out.split())


def test_every_bracketed_word_in_help_is_shown(capsys: pytest.CaptureFixture[str]) -> None:
    root = typer.main.get_command(_whole_app())
    checked = 0
    for path in _commands(root):
        command: Any = root
        for name in path:
            command = command.commands[name]
        words = {w.lstrip("\\") for t in _help_texts(command) for w in BRACKETED.findall(t)}
        if not words:
            continue
        code, out, _ = cli(capsys, *path, "--help")
        shown = "".join(out.split())
        missing = [w for w in words if w.replace(" ", "") not in shown]
        assert code == 0 and not missing, (path, missing)
        checked += 1
    assert checked >= 1
