"""Rows written as Arrow columns instead of executemany (which costs DuckDB a pandas probe per
Python value) are stored exactly as executemany stored them: NULLs, booleans, integers, text
that is not ASCII, bytes that are not text, and the same timestamps."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from priceadvisor.records import ApiPrice, CachedBody
from priceadvisor.store import api_prices, connections
from priceadvisor.store.http_cache import load_validators, save_validators

PRICES = [
    ApiPrice("meta-llama/llama-3.1-8b-instruct", "Llama 3.1 8B", Decimal("2e-8"), Decimal("5e-8")),
    ApiPrice(
        "openai/gpt-4o",
        "GPT-4o — “omni”",
        Decimal("0.0000025"),
        Decimal("0.00001"),
        cached_input_per_token=Decimal("0.00000125"),
        request_fee=Decimal("0.001"),
        context_length=128000,
    ),
    ApiPrice("x/free:free", "Free tier", Decimal(0), Decimal(0), request_fee=Decimal(-1)),
]


def test_api_prices_are_stored_as_executemany_stored_them(db_path: Path) -> None:
    rows = [api_prices._row("openrouter", price, 7) for price in PRICES]
    with connections.writer(db_path) as con:
        counts = api_prices._apply(con, "openrouter", rows, "2026-11-27 10:00:00")
        con.execute("CREATE TEMP TABLE expected AS SELECT * FROM _api_new LIMIT 0")
        con.executemany(f"INSERT INTO expected VALUES ({', '.join('?' * 11)})", rows)
        stored = con.execute(
            "SELECT * EXCLUDE (valid_from, valid_to) FROM core.api_prices ORDER BY api_model_id"
        ).fetchall()
        expected = con.execute("SELECT * FROM expected ORDER BY api_model_id").fetchall()
    assert counts == {"changed": 0, "closed": 0, "new": 3}
    assert stored == expected
    assert [r[1:4] for r in stored][1] == ("openai/gpt-4o", None, "GPT-4o — “omni”")
    assert [(r[7], r[8], r[9]) for r in stored] == [
        (None, False, None),
        (0.001, False, 128000),
        (None, True, None),
    ]


def test_validators_keep_their_bytes_and_missing_fields(db_path: Path) -> None:
    bodies = {
        "https://x/a?page=1&ü=1": CachedBody(
            bytes(range(256)) * 3, None, "Wed, 21 Oct 2026 07:28:00 GMT"
        ),
        "https://x/b": CachedBody(b"", '"e-1"', None),
    }
    with connections.writer(db_path) as con:
        cache = load_validators(con, "vast")
        for url, body in bodies.items():
            cache.put(url, body)
        assert save_validators(con, cache) == 2
        cache.put("https://x/b", CachedBody(b"{}", '"e-2"', None))  # replaces, by key
        assert save_validators(con, cache) == 1
        [(rows, newest)] = con.execute(
            "SELECT count(*), max(updated_at) FROM core.http_validators"
        ).fetchall()
    with connections.writer(db_path) as con:
        again = load_validators(con, "vast")
    assert again.entries == bodies | {"https://x/b": CachedBody(b"{}", '"e-2"', None)}
    assert rows == 2 and newest is not None
