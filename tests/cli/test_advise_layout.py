"""`advise` as people read it: a table per workload that fits 80 columns, with every workload,
provider and GPU on screen; --columns and --wide like `prices`; machine formats unchanged."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from priceadvisor.cli import sizing as sizing_cli
from priceadvisor.sizing import apicompare
from tests.conftest import cli

WORKLOADS = """
[[workloads]]
name = "chat-70b"
task = "serve"
model = "llama-3.1-70b"
precision = "fp8"
concurrency = 32
ttft_ms_max = 2000
tpot_ms_max = 60
monthly_output_tokens = 5e9

[[workloads]]
name = "small-chat-8b"
task = "serve"
model = "llama-3.1-8b"

[[workloads]]
name = "lora-8b"
task = "lora"
model = "llama-3.1-8b"
train_tokens = 2e8
spot_ok = true
continents = ["EU"]
"""
NAMES = ("chat-70b", "small-chat-8b", "lora-8b")


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The recorded offers of every provider and a config with three workloads."""
    from priceadvisor.cli.app import main

    folder = tmp_path_factory.mktemp("advise")
    db, config = folder / "offline.duckdb", folder / "priceadvisor.toml"
    config.write_text(WORKLOADS)
    with pytest.raises(SystemExit) as done:
        main(["--db", str(db), "fetch", "--offline", "--format", "json"])
    assert done.value.code in (0, None)
    return config, db


def advise(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    setup: tuple[Path, Path],
    width: int,
    *args: str,
) -> tuple[int, list[str], str]:
    """The command's table as a terminal of `width` columns shows it."""
    screen = Console(width=width, record=True, color_system=None, soft_wrap=True)
    monkeypatch.setattr(sizing_cli, "out", screen)
    config, db = setup
    code, _, err = cli(capsys, "--config", str(config), "--db", str(db), "advise", *args)
    return code, screen.export_text().splitlines(), err


def rows_as_json(
    capsys: pytest.CaptureFixture[str], setup: tuple[Path, Path], *args: str
) -> list[dict]:
    config, db = setup
    code, out, err = cli(
        capsys, "--config", str(config), "--db", str(db), "advise", "--format", "json", *args
    )
    assert code == 0, err
    return list(json.loads(out))


@pytest.mark.parametrize("width", [80, 120])
def test_every_workload_provider_and_gpu_is_on_screen(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    setup: tuple[Path, Path],
    width: int,
) -> None:
    expected = rows_as_json(capsys, setup, "--top", "10")
    code, lines, err = advise(capsys, monkeypatch, setup, width, "--top", "10")
    assert code == 0, err
    assert all(len(line) <= width for line in lines)
    headings = [line for line in lines if " — " in line]
    assert [h.split(" — ")[0] for h in headings] == sorted(NAMES)
    assert {r["workload"] for r in expected} == set(NAMES)
    for row in expected:  # each offer is a line with its rank, provider and GPU × count, whole
        wanted = (
            f"{row['rank']} {row['provider']} ",
            f" {row['gpu_model']} ×{row['gpu_count']:g} ",
        )
        assert any(all(w in line for w in wanted) for line in lines), row
    assert "…" not in "".join(line.split(" ×")[-1] for line in lines)  # numbers never cut


def test_units_follow_the_workload(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, setup: tuple[Path, Path]
) -> None:
    code, lines, _ = advise(capsys, monkeypatch, setup, 80, "--workload", "chat-70b", "--top", "1")
    assert code == 0
    assert lines[0] == "chat-70b — serve, effective USD per 1M output tokens and per month"
    assert "$/Mtok" in lines[1] and "$/mo" in lines[1] and "hours" not in lines[1]
    [row] = rows_as_json(capsys, setup, "--workload", "chat-70b", "--top", "1")
    cost = f"{row['usd_per_mtok']:.4f}" if row["usd_per_mtok"] < 1 else f"{row['usd_per_mtok']:.2f}"
    assert cost in lines[3] and f"{row['monthly_usd']:,.0f}" in lines[3]
    code, lines, _ = advise(capsys, monkeypatch, setup, 80, "--workload", "lora-8b", "--top", "1")
    assert lines[0] == "lora-8b — lora, effective USD per run"
    assert "$/run" in lines[1] and "hours" in lines[1] and "$/mo" not in lines[1]


def test_columns_and_wide(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, setup: tuple[Path, Path]
) -> None:
    args = ("--workload", "lora-8b", "--top", "3")
    code, lines, _ = advise(capsys, monkeypatch, setup, 80, *args, "--columns", "provider,hour")
    assert code == 0 and lines[1].split() == ["provider", "$/h"]
    code, lines, _ = advise(capsys, monkeypatch, setup, 200, *args, "--wide")
    assert code == 0
    assert lines[1].split()[:6] == ["#", "provider", "region", "country", "instance", "GPU"]
    code, _, err = advise(capsys, monkeypatch, setup, 80, *args, "--columns", "rank,nope")
    assert code == 2 and "unknown column nope" in err


def test_machine_formats_keep_the_view_columns(
    capsys: pytest.CaptureFixture[str], setup: tuple[Path, Path]
) -> None:
    rows = rows_as_json(capsys, setup, "--top", "1", "--wide")
    provenance = [c.strip() for c in sizing_cli.ADVICE_PROVENANCE.split(",") if c.strip()]
    comparison = list(apicompare.RECORD_FIELDS)  # the API comparison follows the view's columns
    # JSON adds the workload's commitment (an object beside the ranking, docs/sql.md)
    assert list(rows[0]) == [*sizing_cli.ADVICE_NAMES, *provenance, *comparison, "commitment"]


def test_json_carries_the_api_comparison_for_serve_workloads(
    capsys: pytest.CaptureFixture[str], setup: tuple[Path, Path]
) -> None:
    rows = {r["workload"]: r for r in rows_as_json(capsys, setup, "--top", "1")}
    chat = rows["chat-70b"]
    assert chat["api_provider"] == "openrouter"
    assert chat["api_model_id"] == "meta-llama/llama-3.1-70b-instruct"
    # The workload's default mix: 1000 prompt tokens per 250 output tokens.
    assert chat["api_usd_per_mtok"] == pytest.approx(0.75 + 4 * 0.52)
    assert chat["api_monthly_usd"] == pytest.approx(5e9 / 1e6 * chat["api_usd_per_mtok"])
    share = chat["usd_per_mtok"] / chat["api_usd_per_mtok"]
    assert chat["break_even_utilisation"] == pytest.approx(share)
    assert 0 < chat["break_even_monthly_tokens"] < 5e9
    assert chat["self_hosting_cheaper"] is (chat["monthly_usd"] < chat["api_monthly_usd"])
    assert rows["lora-8b"]["api_provider"] is None  # training has no API to compare


def test_table_shows_the_api_line_under_serve_workloads(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, setup: tuple[Path, Path]
) -> None:
    code, lines, _ = advise(capsys, monkeypatch, setup, 200, "--top", "2")
    assert code == 0
    api_lines = [line for line in lines if line.startswith("API for ")]
    assert len(api_lines) == 2  # chat-70b and small-chat-8b, not lora-8b
    assert "openrouter meta-llama/llama-3.1-70b-instruct $2.83/1M output tokens" in api_lines[0]


def test_json_rows_carry_list_and_effective_cost_and_the_terms(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, setup: tuple[Path, Path]
) -> None:
    rows = rows_as_json(capsys, setup, "--top", "5")
    for row in rows:
        cost = row["cost_usd"] if row["cost_usd"] is not None else row["usd_per_mtok"]
        assert row["effective_cost_usd"] == cost  # ranked and shown: the effective cost
        assert row["effective_cost_usd"] >= row["list_cost_usd"] > 0  # list: the lower bound
        assert isinstance(row["terms_applied"], list)
        assert all(isinstance(t, str) and t for t in row["terms_applied"])
        assert isinstance(row["list_rank"], int)
    lora = [r for r in rows if r["workload"] == "lora-8b"]
    assert lora and all(r["pricing"] == "spot" for r in lora)  # the recorded EU spot offers
    assert all(any("Young/Daly" in t for t in r["terms_applied"]) for r in lora)
    # the table marks the costs that differ from list and says where the reason is
    code, lines, _ = advise(capsys, monkeypatch, setup, 120, "--workload", "lora-8b")
    assert code == 0 and all(re.search(r"\d\* ", line) for line in lines[3:8])
    assert "* effective cost differs from the list cost: see --columns terms" in lines
    code, lines, _ = advise(
        capsys,
        monkeypatch,
        setup,
        200,
        "--workload",
        "lora-8b",
        "--columns",
        "rank,provider,cost,list,terms",
    )
    assert code == 0 and "terms applied" in lines[1] and "Young/Daly" in lines[3]
