"""A literal (store.literals) is the value DuckDB binds for the same Python value, of the same
type: random times, counts, flags, texts with quotes and backslashes, lists of texts."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

import duckdb
import pytest

from priceadvisor.store.literals import inline, literal


def values(rng: random.Random) -> list[Any]:
    start = dt.datetime(1990, 1, 1)
    moment = start + dt.timedelta(seconds=rng.uniform(0, 2e9), microseconds=rng.randrange(10**6))
    text = "".join(rng.choice("ab'\\\n$%é ") for _ in range(rng.randrange(8)))
    return [
        moment,
        moment.replace(microsecond=0),
        rng.choice([True, False]),
        rng.randrange(-(10**12), 10**12),
        rng.randrange(1000),
        text,
        [text, "aws", "o'hara"],
        [],
    ]


def test_a_literal_is_the_bound_value_of_the_same_type() -> None:
    rng = random.Random(5)
    con = duckdb.connect()
    for _ in range(60):
        for value in values(rng):
            bound = con.execute("SELECT $v, typeof($v)", {"v": value}).fetchall()
            written = con.execute(f"SELECT {literal(value)}, typeof({literal(value)})").fetchall()
            if value == []:  # a bound empty list has no element type; the literal's is text
                assert written == [([], "VARCHAR[]")]
                continue
            assert written == bound, value


def test_inline_replaces_every_named_parameter() -> None:
    con = duckdb.connect()
    now = dt.datetime(2026, 11, 27, 13, 53, 53, 338741)
    sql = "SELECT $now - INTERVAL 1 HOUR, $keep, printf('+$%.4g', 1.5), list_contains($ids, 'a')"
    values = {"now": now, "keep": 100, "ids": ["a", "b"]}
    assert con.execute(inline(sql, values)).fetchall() == con.execute(sql, values).fetchall()


def test_a_missing_value_or_an_inexact_type_is_refused() -> None:
    with pytest.raises(KeyError):
        inline("SELECT $now, $keep", {"now": dt.datetime(2026, 1, 1)})
    for value in (1.5, dt.datetime(2026, 1, 1, tzinfo=dt.UTC), [1, 2], b"x"):
        with pytest.raises(TypeError):
            literal(value)
