"""The Python API's ranked advice crosses to DuckDB as Arrow columns instead of executemany
(a pandas probe per value); the table it makes is the one executemany made, value for value,
and a value the Arrow crossing cannot keep exactly goes through executemany as before."""

from __future__ import annotations

import datetime as dt

import duckdb
import pytest

from priceadvisor.api import advice

TYPES = ["VARCHAR", "DOUBLE", "INTEGER", "BIGINT", "BOOLEAN", "TIMESTAMP", "VARCHAR[]"]
ROWS: list[tuple[object, ...]] = [
    (
        "vast · “PL”",
        0.1 + 0.2,
        8,
        2**40,
        True,
        dt.datetime(2026, 11, 27, 10, 0, 0, 123456),
        ["a", "é"],
    ),
    (None, 3, None, None, False, None, None),
    ("x", float("inf"), -1, 0, None, dt.datetime(2001, 1, 1), ["", None, 'q"uote']),
]


def _table(rows: list[tuple[object, ...]], through: str) -> list[tuple[object, ...]]:
    con = duckdb.connect()
    declared = ", ".join(f"c{i} {t}" for i, t in enumerate(TYPES))
    con.execute(f"CREATE TABLE ranked ({declared})")
    if through == "arrow":
        advice._insert(con, TYPES, rows)
    else:
        con.executemany(f"INSERT INTO ranked VALUES ({', '.join('?' * len(TYPES))})", rows)
    return con.execute("SELECT * FROM ranked").fetchall()


def test_arrow_rows_are_what_executemany_stored() -> None:
    assert _table(ROWS, "arrow") == _table(ROWS, "executemany")
    assert all(
        advice._crosses(v, advice._CROSSING[t]) for r in ROWS for v, t in zip(r, TYPES, strict=True)
    )


@pytest.mark.parametrize(
    "odd",
    [
        (None, None, None, None, None, dt.datetime(2026, 1, 1, tzinfo=dt.UTC), None),
        (None, "1.5", None, None, None, None, None),
        (None, None, True, None, None, None, None),
        (None, None, None, None, None, None, [1, 2]),
        (None, None, None, 2**62, None, None, None),
        (7, None, None, None, None, None, None),
    ],
)
def test_a_value_arrow_would_change_goes_through_executemany(odd: tuple[object, ...]) -> None:
    assert not all(advice._crosses(v, advice._CROSSING[t]) for v, t in zip(odd, TYPES, strict=True))
    assert _table([*ROWS, odd], "arrow") == _table([*ROWS, odd], "executemany")
