"""The read commands' quick settings either equal the full load's or defer to it (None): never a
different answer, whatever the config file, environment and --db say."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from priceadvisor.config import load_settings
from priceadvisor.config_basics import ReadSettings, quick_settings

# (config file text or None, environment, --db given): the quick path must answer these.
ANSWERED: list[tuple[str | None, dict[str, str], bool]] = [
    (None, {}, False),
    (None, {}, True),
    ('db = "/data/from-file.duckdb"', {}, False),
    ('db = "relative.duckdb"\nlock_timeout = "2m"\nlog_level = "DEBUG"', {}, False),
    ("lock_timeout = 3", {"PRICEADVISOR_LOCK_TIMEOUT": "1h30m"}, False),
    ('db = "/data/from-file.duckdb"', {"PRICEADVISOR_DB": "/data/from-env.duckdb"}, False),
    ('db = "/data/from-file.duckdb"', {"PRICEADVISOR_DB": "/data/from-env.duckdb"}, True),
    (None, {"priceadvisor_log_level": "WARNING"}, False),  # names match whatever the case
    ("lock_timeout = 2.5", {"PRICEADVISOR_LOG_LEVEL": "ERROR"}, False),
]

# Anything else is for the full load, which validates every key and words every error.
DEFERRED: list[tuple[str | None, dict[str, str]]] = [
    ("[http]\nattempts = 3", {}),
    ("bogus = 1", {}),
    ("this is not toml", {}),
    ('log_level = "LOUD"', {}),
    ('log_level = "info"', {}),
    ("lock_timeout = 0", {}),
    ("lock_timeout = true", {}),
    ("db = 5", {}),
    ('db = ""', {}),
    (None, {"PRICEADVISOR_LOCK_TIMEOUT": "nan"}),
    (None, {"PRICEADVISOR_HTTP__ATTEMPTS": "3"}),
    (None, {"PRICEADVISOR_FOO": "1"}),  # an unknown name warns: the full load does that
    (None, {"PRICEADVISOR_SMTP_PASSWORD": "x"}),
    (None, {"PRICEADVISOR_DB": "/a.duckdb", "priceadvisor_db": "/b.duckdb"}),
]


def _environment(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    for name in list(os.environ):
        if name.upper().startswith("PRICEADVISOR_"):
            monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)


def _config(tmp_path: Path, text: str | None) -> Path | None:
    if text is None:
        return None
    path = tmp_path / "c.toml"
    path.write_text(text + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(("text", "env", "flag"), ANSWERED)
def test_quick_settings_equal_the_full_load(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    text: str | None,
    env: dict[str, str],
    flag: bool,
) -> None:
    _environment(monkeypatch, env)
    config = _config(tmp_path, text)
    db = tmp_path / "flag.duckdb" if flag else None
    quick = quick_settings(config, db)
    full = load_settings(config, **({"db": db} if db else {}))
    assert isinstance(quick, ReadSettings)
    assert (quick.db_path(), quick.lock_timeout, quick.log_level) == (
        full.db_path(),
        full.lock_timeout,
        full.log_level,
    )


@pytest.mark.parametrize(("text", "env"), DEFERRED)
def test_anything_else_is_left_to_the_full_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str | None, env: dict[str, str]
) -> None:
    _environment(monkeypatch, env)
    assert quick_settings(_config(tmp_path, text), None) is None


def test_a_config_file_found_by_the_search_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _environment(monkeypatch, {})
    (tmp_path / "priceadvisor.toml").write_text('lock_timeout = "45s"\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    quick = quick_settings(None, None)
    assert quick is not None and quick.lock_timeout == 45.0
