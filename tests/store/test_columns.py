"""Columns of Python objects handed to DuckDB: an attribute no object sets arrives as nulls of
its declared type, like one that some objects set; repeated values are dictionary-encoded and
read back exactly as the plain columns."""

from __future__ import annotations

import gc
import math
from dataclasses import dataclass

import duckdb
import nanoarrow as na
import pytest

from priceadvisor.store import columns

SCHEMA: columns.Schema = {"text": "string", "number": "float", "count": "int", "flag": "bool"}


@dataclass
class Row:
    text: str | None = None
    number: float | None = None
    count: int | None = None
    flag: bool | None = None


def _scan(rows: list[Row]) -> tuple[list[tuple[object, ...]], list[str]]:
    con = duckdb.connect()
    con.register("t", columns.from_objects(rows, SCHEMA))
    types = [row[1] for row in con.execute("DESCRIBE t").fetchall()]
    return con.execute("FROM t").fetchall(), types


@pytest.mark.parametrize("length", [0, 1, 7, 8, 9, 1000])
def test_unset_attributes_arrive_as_typed_nulls(length: int) -> None:
    rows, types = _scan([Row() for _ in range(length)])
    assert rows == [(None, None, None, None)] * length
    assert types == ["VARCHAR", "DOUBLE", "BIGINT", "BOOLEAN"]


def test_attributes_set_on_some_objects_keep_their_values() -> None:
    given = [Row(), Row("x", 1.5, 0, False), Row(number=0.0, flag=True)]
    rows, types = _scan(given)
    assert rows == [(None, None, None, None), ("x", 1.5, 0, False), (None, 0.0, None, True)]
    assert types == ["VARCHAR", "DOUBLE", "BIGINT", "BOOLEAN"]


def test_one_attribute_unset_on_the_first_object_and_set_later() -> None:
    given = [Row("a", 1.0, 2), Row("b", 2.0, 3, False), Row("c", 3.0, 4)]
    rows, _ = _scan(given)
    assert rows == [("a", 1.0, 2, None), ("b", 2.0, 3, False), ("c", 3.0, 4, None)]


def test_one_attribute_no_object_sets_next_to_set_ones() -> None:
    given = [Row("a", 0.0, 0), Row("", -1.0, 5)]
    rows, types = _scan(given)
    assert rows == [("a", 0.0, 0, None), ("", -1.0, 5, None)]
    assert types == ["VARCHAR", "DOUBLE", "BIGINT", "BOOLEAN"]


def test_positions_arrive_as_a_last_integer_column() -> None:
    con = duckdb.connect()
    rows = [Row("a"), Row(None, 1.5), Row("c")]
    con.register("t", columns.from_objects(rows, SCHEMA, ("position", [7, 3, 11])))
    assert [row[:2] for row in con.execute("DESCRIBE t").fetchall()][-1] == ("position", "BIGINT")
    assert con.execute("SELECT text, position FROM t").fetchall() == [
        ("a", 7),
        (None, 3),
        ("c", 11),
    ]


ENCODED: columns.Schema = {"text": "string", "number": "shared_float", "count": "int"}


def _scan_table(table: object) -> tuple[list[tuple[object, ...]], list[str]]:
    con = duckdb.connect()
    con.register("t", table)
    types = [row[1] for row in con.execute("DESCRIBE t").fetchall()]
    # repr: a NaN equals itself only as text
    return [tuple(map(repr, row)) for row in con.execute("FROM t").fetchall()], types


def _encoded_and_plain(rows: list[Row]) -> tuple[object, object]:
    plain = {name: [getattr(row, name) for row in rows] for name in ENCODED}
    return columns.from_objects(rows, ENCODED), columns.table(plain, ENCODED)


def _dictionaries(table: object) -> list[bool]:
    """Whether each column of a table is dictionary-encoded."""
    array = na.c_array(table)
    return [array.child(i).dictionary is not None for i in range(array.n_children)]


def test_repeated_values_are_dictionary_encoded_and_read_back_as_given() -> None:
    texts = ["eu-west", None, "", "ü-ñ 日本", "eu-west", None, "us"]
    numbers = [8.0, None, 0.5, math.nan, 8, None, -0.5]
    rows = [Row(t, n, i) for i, (t, n) in enumerate(zip(texts * 40, numbers * 40, strict=True))]
    encoded, plain = _encoded_and_plain(rows)
    assert _dictionaries(encoded) == [True, True, False]
    assert _scan_table(encoded) == _scan_table(plain)
    assert _scan_table(encoded)[1] == ["VARCHAR", "DOUBLE", "BIGINT"]


def test_values_too_many_to_number_in_16_bits_stay_a_plain_column() -> None:
    rows = [Row(f"machine-{i}", float(i % 3), i) for i in range(40_000)]
    encoded, plain = _encoded_and_plain(rows)
    assert _dictionaries(encoded) == [False, True, False]
    assert _scan_table(encoded) == _scan_table(plain)


def test_an_encoded_table_reads_back_after_its_builders_are_gone() -> None:
    """The ingest scans a staged table twice, long after it was made."""
    rows = [Row(f"r{i % 5}", float(i % 4), i) for i in range(1000)]
    con = duckdb.connect()
    con.register("t", columns.from_objects(rows, ENCODED))
    del rows
    gc.collect()
    for _ in range(2):
        assert con.execute(
            "SELECT count(*), count(DISTINCT text), sum(number) FROM t"
        ).fetchall() == [(1000, 5, 1500.0)]
