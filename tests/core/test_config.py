from __future__ import annotations

from pathlib import Path

import pytest

from priceadvisor.config import ConfigError, load_settings, lookup_secret
from priceadvisor.durations import format_duration, parse_duration


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_toml_file_then_environment_override(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write(
        tmp_path / "c.toml",
        """
db = "/data/prices.duckdb"
[http]
timeout = "45s"
[providers.azure]
interval = "2h"
endpoints = { prices = "http://mirror.local" }
""",
    )
    monkeypatch.setenv("PRICEADVISOR_PROVIDERS__AZURE__ENABLED", "false")
    monkeypatch.setenv("PRICEADVISOR_HTTP__ATTEMPTS", "7")
    settings = load_settings(config)
    assert settings.db_path() == Path("/data/prices.duckdb")
    assert settings.http.timeout == 45
    assert settings.http.attempts == 7
    azure = settings.provider("azure")
    assert azure.interval == 7200
    assert azure.enabled is False
    assert azure.endpoints == {"prices": "http://mirror.local"}


def test_env_db_and_explicit_override(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PRICEADVISOR_DB", str(tmp_path / "env.duckdb"))
    assert load_settings().db_path() == tmp_path / "env.duckdb"
    assert load_settings(db=tmp_path / "cli.duckdb").db_path() == tmp_path / "cli.duckdb"


def test_config_found_through_env_var(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(
        "PRICEADVISOR_CONFIG", str(write(tmp_path / "x.toml", 'log_level = "DEBUG"'))
    )
    assert load_settings().log_level == "DEBUG"


def test_config_in_working_directory_is_found(tmp_path: Path) -> None:
    write(tmp_path / "priceadvisor.toml", 'log_level = "WARNING"')  # cwd is tmp_path
    assert load_settings().log_level == "WARNING"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[providers.azure]\ninterval = "often"', "providers.azure.interval"),
        ("[http]\nattempts = 0", "http.attempts"),
        ('log_level = "LOUD"', "log_level"),
        ("provders = 1", "provders: unknown key"),
        ("[providers.azure]\nenabled = 3", "providers.azure.enabled"),
        ("db = [", "invalid config"),
        ('[daemon]\nproviders = ["aws", "awz"]', "daemon.providers: Value error, unknown provider"),
        ('[daemon]\nproviders = ["aws", "aws"]', "provider listed twice: aws"),
        ('[daemon]\nlease = "0s"', "daemon.lease"),
    ],
)
def test_bad_config_is_one_line_naming_the_key(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(write(tmp_path / "bad.toml", text))
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_missing_config_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        load_settings(tmp_path / "nope.toml")


def test_secret_from_env_and_from_secrets_dir(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    secrets = tmp_path / "creds"
    secrets.mkdir()
    write(secrets / "GCP_API_KEY", "from-file\n")
    settings = load_settings(secrets_dir=secrets)
    assert lookup_secret(settings, "GCP_API_KEY").get_secret_value() == "from-file"
    monkeypatch.setenv("GCP_API_KEY", "from-env")
    secret = lookup_secret(settings, "GCP_API_KEY")
    assert secret.get_secret_value() == "from-env"
    assert "from-env" not in repr(secret) and "from-env" not in str(secret)
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(secrets))
    assert lookup_secret(load_settings(), "OTHER") is None


def test_provider_api_key_never_printed(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path / "c.toml", '[providers.azure]\napi_key = "s3cr3t"'))
    assert "s3cr3t" not in repr(settings) and "s3cr3t" not in settings.model_dump_json()


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90s", 90), ("15m", 900), ("1h30m", 5400), ("1d", 86400), (600, 600), ("2.5", 2.5)],
)
def test_durations(text: object, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("bad", ["", "soon", "5x", -1, 0, True, "1h often"])
def test_bad_durations(bad: object) -> None:
    with pytest.raises(ValueError):
        parse_duration(bad)


def test_format_duration() -> None:
    assert format_duration(5400) == "1h30m"
    assert format_duration(43200) == "12h"


def test_example_config_is_valid_and_documents_every_key() -> None:
    from priceadvisor.config import HttpSettings, ProviderSettings, Settings

    example = Path(__file__).resolve().parents[2] / "deploy" / "config.example.toml"
    load_settings(example)
    text = example.read_text()
    for model in (Settings, HttpSettings, ProviderSettings):
        for name in model.model_fields:
            assert f"{name} =" in text or f"[{name}" in text or f".{name}]" in text, name
