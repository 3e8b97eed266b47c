"""The partner a rank reason names (effective.PARTNER_SQL) is the one its definition gives: among
the rows a moved row passed or was passed by, the nearest in list order — the definition as a
window over every pair, checked against the aggregate per side the advisor runs."""

from __future__ import annotations

import duckdb
from hypothesis import given, settings
from hypothesis import strategies as st

from priceadvisor.sizing import effective

# The definition: every pair on the side the move demands, the nearest in list order first.
DEFINITION_SQL = """
SELECT m.widx, m.oid, p.oid AS partner_oid
FROM _ranked AS m
JOIN _ranked AS p ON p.widx = m.widx AND sign(p.list_rank - m.list_rank)
    = sign(m.rank - m.list_rank) AND sign(p.rank - m.rank) = sign(m.list_rank - m.rank)
WHERE m.rank <> m.list_rank AND m.rank <= $keep
QUALIFY row_number() OVER (PARTITION BY m.widx, m.oid
    ORDER BY abs(p.list_rank - m.list_rank), p.list_rank) = 1
"""

# A workload's candidates: their order by effective cost as a permutation of the list order.
orders = st.lists(st.permutations(list(range(1, 13))), min_size=1, max_size=4)


def partners(orders_by_workload: list[list[int]], keep: int, sql: str) -> list[tuple[int, ...]]:
    con = duckdb.connect()
    con.execute("CREATE TABLE _ranked (widx INT, oid INT, rank BIGINT, list_rank BIGINT)")
    rows = [
        (widx, 100 * widx + 7 * list_rank % 13, rank, list_rank)
        for widx, order in enumerate(orders_by_workload)
        for list_rank, rank in enumerate(order, start=1)
    ]
    con.executemany("INSERT INTO _ranked VALUES (?, ?, ?, ?)", rows)
    return con.execute(f"SELECT * FROM ({sql}) ORDER BY ALL", {"keep": keep}).fetchall()


@settings(max_examples=150, deadline=None)
@given(orders, st.integers(1, 13))
def test_the_partner_is_the_nearest_in_list_order_on_the_moved_side(
    orders_by_workload: list[list[int]], keep: int
) -> None:
    expected = partners(orders_by_workload, keep, DEFINITION_SQL)
    assert partners(orders_by_workload, keep, effective.PARTNER_SQL) == expected


def test_a_row_that_fell_and_one_that_rose() -> None:
    # list order a, b, c; by effective cost c, a, b: a and b fell one place, c rose two.
    found = partners([[2, 3, 1]], 3, effective.PARTNER_SQL)
    oid = {list_rank: 7 * list_rank % 13 for list_rank in (1, 2, 3)}
    assert found == sorted(
        [(0, oid[1], oid[3]), (0, oid[2], oid[3]), (0, oid[3], oid[2])]  # c: b, nearer than a
    )
