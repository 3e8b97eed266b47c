"""The candidates' ranks (advisor.RANKED_SQL) break ties by one number per offer, a dense rank of
the hourly price and the offer's key: the same ranks as the two windows that order by the price
and the key's five columns themselves, on random candidates full of ties (equal costs, equal
prices, NULL zones, offers shared by workloads). Offers are unique by their key, as current
offers are: two offers equal in every column of the order would be ordered at random by
either statement."""

from __future__ import annotations

import duckdb
from hypothesis import given, settings
from hypothesis import strategies as st

from priceadvisor.sizing import advisor

# The definition: each window orders by the costs, then the price and the offer's key.
DEFINITION_SQL = """
SELECT c.widx, c.oid, row_number() OVER (
        PARTITION BY c.widx
        ORDER BY c.effective_cost, o.price_hour_usd, o.provider, o.region, o.zone,
            o.instance_type, o.pricing
    ) AS rank,
    row_number() OVER (
        PARTITION BY c.widx
        ORDER BY c.list_cost, o.price_hour_usd, o.provider, o.region, o.zone, o.instance_type,
            o.pricing
    ) AS list_rank,
    printf('%s %s %g× %s %s', o.provider, o.region, o.gpu_count, o.gpu_model, o.pricing) AS label
FROM _effective AS c
JOIN _advice_offers AS o ON o.rowid = c.oid
"""

offers = st.lists(
    st.tuples(
        st.sampled_from(["aws", "gcp", "vast"]),
        st.sampled_from(["eu-1", "us-2"]),
        st.sampled_from([None, "a", "b"]),
        st.sampled_from(["x1", "x2"]),
        st.sampled_from(["on_demand", "spot"]),
        st.sampled_from([1.0, 1.5, 2.0]),
    ),
    min_size=1,
    max_size=30,
    unique_by=lambda offer: offer[:5],  # one current offer per key, as the store keeps them
)
# (workload, offer index, effective cost, list cost): few distinct costs, so ties are common.
candidates = st.lists(
    st.tuples(
        st.integers(0, 3),
        st.integers(0, 29),
        st.sampled_from([1.0, 2.0, 3.0]),
        st.sampled_from([1.0, 2.0]),
    ),
    min_size=1,
    max_size=60,
)


def ranks(
    offer_rows: list[tuple[object, ...]], candidate_rows: list[tuple[object, ...]], sql: str
) -> list[tuple[object, ...]]:
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE _advice_offers (provider VARCHAR, region VARCHAR, zone VARCHAR, "
        "instance_type VARCHAR, pricing VARCHAR, price_hour_usd DOUBLE, gpu_count DOUBLE, "
        "gpu_model VARCHAR)"
    )
    con.executemany("INSERT INTO _advice_offers VALUES (?, ?, ?, ?, ?, ?, 1, 'H100')", offer_rows)
    con.execute(
        "CREATE TABLE _effective (widx INT, oid BIGINT, effective_cost DOUBLE, list_cost DOUBLE)"
    )
    # one row per (workload, offer), as the advisor's candidates
    rows = {
        (w, o % len(offer_rows)): (w, o % len(offer_rows), e, lc) for w, o, e, lc in candidate_rows
    }
    con.executemany("INSERT INTO _effective VALUES (?, ?, ?, ?)", list(rows.values()))
    return con.execute(
        f"SELECT widx, oid, rank, list_rank, label FROM ({sql}) ORDER BY ALL"
    ).fetchall()


@settings(max_examples=200, deadline=None)
@given(offers, candidates)
def test_ranks_are_those_of_the_windows_over_the_offer_key(
    offer_rows: list[tuple[object, ...]], candidate_rows: list[tuple[object, ...]]
) -> None:
    expected = ranks(offer_rows, candidate_rows, DEFINITION_SQL)
    got = ranks(offer_rows, candidate_rows, f"WITH {advisor.RANKED_SQL} SELECT * FROM _ranked")
    assert got == expected
