"""Columns of Python objects handed to DuckDB: an attribute no object sets arrives as nulls of
its declared type, like one that some objects set."""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
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
