"""`sql` on big results: a terminal table stops at 1000 rows and says how many there were; csv
and json give every row, written batch by batch, in the same text as a whole-table render."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest

from priceadvisor.cli.output import to_csv, to_json
from priceadvisor.store import connections, reads
from tests.conftest import cli

BIG = "select range AS n, 'row ' || range AS label from range(25000)"


def table_numbers(text: str) -> list[int]:
    return [int(found) for found in re.findall(r"^│\s*(\d+)\s*│", text, flags=re.MULTILINE)]


def test_table_shows_the_first_1000_rows_of_how_many(
    capsys: pytest.CaptureFixture[str], migrated_db: Path
) -> None:
    code, out, _ = cli(capsys, "--db", str(migrated_db), "sql", BIG)
    assert code == 0
    assert table_numbers(out) == list(range(1000))
    assert "showing 1000 of 25000 rows: --format csv or json for all" in out


def test_a_small_result_has_every_row_and_no_note(
    capsys: pytest.CaptureFixture[str], migrated_db: Path
) -> None:
    code, out, _ = cli(capsys, "--db", str(migrated_db), "sql", "select range from range(1000)")
    assert code == 0
    assert table_numbers(out) == list(range(1000))
    assert "showing" not in out


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_machine_formats_stream_every_row_as_a_whole_render_would(
    capsys: pytest.CaptureFixture[str], migrated_db: Path, fmt: str
) -> None:
    code, out, _ = cli(capsys, "--db", str(migrated_db), "sql", "-f", fmt, BIG)
    assert code == 0
    with connections.reader(migrated_db) as con:
        whole = reads.fetch_table(con, BIG)
    assert out == (to_json(whole) + "\n" if fmt == "json" else to_csv(whole))
    if fmt == "json":
        assert [r["n"] for r in json.loads(out)] == list(range(25000))
    else:
        assert len(list(csv.reader(io.StringIO(out)))) == 25001


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_machine_formats_of_an_empty_result(
    capsys: pytest.CaptureFixture[str], migrated_db: Path, fmt: str
) -> None:
    query = "select range AS n from range(0)"
    code, out, _ = cli(capsys, "--db", str(migrated_db), "sql", "-f", fmt, query)
    assert code == 0
    assert out == ("[]\n" if fmt == "json" else "n\n")


def test_rows_are_fetched_in_batches_not_whole(migrated_db: Path) -> None:
    with connections.reader(migrated_db) as con:
        columns, batches = reads.fetch_batches(con, BIG, size=4096)
        sizes = [len(rows) for rows in batches]
    assert columns == ["n", "label"]
    assert sizes == [4096] * 6 + [25000 - 6 * 4096]


def test_counting_takes_what_sql_takes(migrated_db: Path) -> None:
    with connections.reader(migrated_db) as con:
        assert reads.count_rows(con, "select * from range(7); -- seven") == 7
        assert reads.count_rows(con, "with a as (select 1) select * from a, range(3)") == 3
        assert reads.count_rows(con, "pragma version") == 1
