"""docs/python-api.md runs: its ```python blocks, in order and in one namespace as a notebook
runs its cells, against a database fetched from the recordings and a config with workloads."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "python-api.md"


def python_blocks() -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", DOC.read_text(), flags=re.S | re.M)


def test_the_doc_has_a_notebook_of_examples() -> None:
    blocks = python_blocks()
    assert len(blocks) >= 8
    for method in ("pa.open(", ".offers(", ".history(", ".advice(", ".estimate(", ".df()"):
        assert any(method in block for block in blocks), method


def test_the_python_blocks_run_in_order(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    recorded: tuple[Path, Path],
) -> None:
    config, db = recorded
    monkeypatch.setenv("PRICEADVISOR_DB", str(db))
    monkeypatch.setenv("PRICEADVISOR_CONFIG", str(config))
    namespace: dict[str, object] = {"__name__": "__notebook__"}
    for number, block in enumerate(python_blocks(), start=1):
        code = compile(block, f"{DOC.name} block {number}", "exec")
        exec(code, namespace)
    printed = capsys.readouterr().out
    assert f"<PriceData {db}>" in printed
    assert "unknown country 'Atlantis'" in printed
    assert "unknown precision 'fp3'" in printed
    assert "chat-8b 1 " in printed and "lora-8b 1 " in printed
    assert re.search(r"^\d+ current offers$", printed, flags=re.M)
