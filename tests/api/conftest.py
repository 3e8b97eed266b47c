"""A database of every recorded provider (the CLI's own `fetch --offline`) and a config with
workloads, built once for the API's tests."""

from __future__ import annotations

from pathlib import Path

import pytest

WORKLOADS = """
[[workloads]]
name = "chat-8b"
task = "serve"
model = "llama-3.1-8b"
monthly_output_tokens = 1e9

[[workloads]]
name = "lora-8b"
task = "lora"
model = "llama-3.1-8b"
train_tokens = 2e8
spot_ok = true
continents = ["EU"]
"""


@pytest.fixture(scope="package")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(config, database): the recorded offers and two workloads; advice not yet stored."""
    from priceadvisor.cli.app import main

    folder = tmp_path_factory.mktemp("api")
    db, config = folder / "offline.duckdb", folder / "priceadvisor.toml"
    config.write_text(WORKLOADS)
    with pytest.raises(SystemExit) as done:
        main(["--db", str(db), "fetch", "--offline", "--format", "json"])
    assert done.value.code in (0, None)
    return config, db
