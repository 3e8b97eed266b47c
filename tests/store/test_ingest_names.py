"""The snapshot's names held as ENUM types of its own names (store.ingest._name_types): what
the ingest stores and decides is what it did with the names as text."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from priceadvisor.store.ingest import _name_type
from tests.conftest import query
from tests.store.test_ingest import quote, run


def test_the_tie_break_between_duplicates_orders_stock_as_text(db_path: Path) -> None:
    """Equal price, name and availability: the stock level breaks the tie in text order, so
    each name type lists its names sorted as the text sorts ('mid' would win if the type kept
    the order the names were met in, 'zeta' if it kept the reverse)."""
    stocks = ["zeta", "mid", "alpha", "Émile"]  # lower-cased: 'émile' sorts after 'zeta'
    quotes = [quote(price=3.0, available=True, stock=s) for s in stocks]
    summary = run(db_path, quotes)
    assert (summary.offers_seen, summary.offers_duplicate) == (1, 3)
    assert query(db_path, "SELECT stock FROM offers") == [("alpha",)]


def test_names_with_quotes_and_odd_characters_are_stored_as_given(db_path: Path) -> None:
    regions = ["o'hare", "ǅ-südost'1", "  spaced  ", "a,b", "x'); DROP TABLE core.fetch_runs; --"]
    summary = run(db_path, [quote(r, sku=f"sku '{i}'") for i, r in enumerate(regions)])
    assert summary.offers_new == len(regions)
    stored = query(db_path, "SELECT region, instance_type FROM offers ORDER BY region")
    assert stored == sorted((r, f"sku '{i}'") for i, r in enumerate(regions))
    assert query(db_path, "SELECT count(*) FROM core.fetch_runs") == [(1,)]


def test_a_name_with_a_nul_character_is_stored_as_given(db_path: Path) -> None:
    """A statement's text cannot carry NUL: that type is made from a bound list instead."""
    summary = run(db_path, [quote("east\x00us"), quote("westus")])
    assert summary.offers_new == 2
    assert query(db_path, "SELECT region FROM offers ORDER BY region") == [
        ("east\x00us",),
        ("westus",),
    ]


@pytest.mark.parametrize("stored_first", ["westus", "north'us"])
def test_a_stored_name_the_snapshot_lacks_closes_its_offer(
    db_path: Path, stored_first: str
) -> None:
    """The classification matches codes of the snapshot's names: a stored region that is not
    one of them has no code (NULL) and so no quote: its offer is closed as vanished."""
    run(db_path, [quote(stored_first), quote("eastus")])
    summary = run(db_path, [quote("eastus")])
    assert (summary.offers_closed, summary.offers_changed, summary.offers_new) == (1, 0, 0)
    assert query(db_path, "SELECT region FROM offers") == [("eastus",)]


def test_each_name_type_is_an_enum_of_its_names_or_text() -> None:
    """What the memory saving rests on: a name column is ENUM, not VARCHAR; one without names
    gets a placeholder name (DuckDB reads no ENUM without values)."""
    with duckdb.connect() as con:
        _name_type(con, "region", ["a", "b'c"])
        _name_type(con, "stock", [])
        _name_type(con, "zone", ["x\x00y"])
        row = con.execute(
            "SELECT enum_range(NULL::_snap_region), enum_range(NULL::_snap_stock),"
            " enum_range(NULL::_snap_zone)"
        ).fetchone()
    assert row == (["a", "b'c"], [""], ["x\x00y"])
