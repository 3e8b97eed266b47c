"""The offers table is built with hash joins on the sides the statement writes
(`advisor._joins_as_written`): the same rankings, every column, as with DuckDB's own choice of
sides, and the connection's setting is restored afterwards."""

from __future__ import annotations

import contextlib
import random
from pathlib import Path
from typing import Any

import pytest

from priceadvisor.cli.app import main
from priceadvisor.config import WorkloadProfile
from priceadvisor.sizing import advisor
from priceadvisor.store import connections

MODELS = ["llama-3.1-8b", "llama-3.1-70b", "qwen2.5-7b", "mistral-7b"]
TASKS = ["serve", "batch", "lora"]


@pytest.fixture(scope="module")
def offline_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("join-sides") / "a.duckdb"
    with pytest.raises(SystemExit):
        main(["--db", str(db), "fetch", "--offline"])
    return db


def profiles(seed: int) -> list[WorkloadProfile]:
    rng = random.Random(seed)
    found = []
    for i in range(6):
        task = rng.choice(TASKS)
        found.append(
            WorkloadProfile(
                name=f"w{i}",
                task=task,
                model=rng.choice(MODELS),
                precision=rng.choice(["fp8", "bf16"]),
                train_tokens=2e8 if task == "lora" else None,
                spot_ok=rng.random() < 0.5,
                max_gpus=rng.choice([None, 1, 4, 8]),
            )
        )
    return found


def ranked(db: Path, chosen: list[WorkloadProfile]) -> list[tuple[Any, ...]]:
    with connections.writer(db) as con:
        names, rows = advisor.rank(con, chosen, keep=30)
        [(setting,)] = con.execute("SELECT current_setting('disabled_optimizers')").fetchall()
        assert setting == ""  # as it was
    moment = names.index("computed_at")
    return [row[:moment] + row[moment + 1 :] for row in rows]


@pytest.mark.parametrize("seed", range(4))
def test_the_rankings_equal_those_with_duckdbs_join_sides(
    offline_db: Path, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    chosen = profiles(seed)
    written = ranked(offline_db, chosen)
    monkeypatch.setattr(advisor, "_joins_as_written", lambda con: contextlib.nullcontext())
    assert len(written) > 30
    assert repr(written) == repr(ranked(offline_db, chosen))


def test_a_sealed_reader_ranks_without_changing_its_settings(offline_db: Path) -> None:
    with connections.reader(offline_db) as con:
        names, rows = advisor.rank(con, profiles(0), keep=10)
    assert rows and "rank" in names


def test_optimizers_the_connection_had_disabled_stay_disabled(offline_db: Path) -> None:
    with connections.writer(offline_db) as con:
        con.execute("SET disabled_optimizers = 'top_n'")
        _, rows = advisor.rank(con, profiles(1), keep=10)
        [(setting,)] = con.execute("SELECT current_setting('disabled_optimizers')").fetchall()
    assert rows and setting == "top_n"
