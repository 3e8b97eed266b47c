"""Merge an LLM API price listing (a kind = "api" source) into core.api_prices, SCD-2.

Prices arrive in US dollars per token (exact decimals) and are stored per 1M tokens. A row
with no input or output price, or a negative one (OpenRouter's "-1" router sentinel), is
rejected and counted, as is a token price above MAX_USD_PER_MTOK (no real listing is near it).
A listing in which most models are free is not believed (a real one has a few `:free` tiers
beside the paid models): the run fails and nothing changes. API model ids map to the bundled
model catalog (`llm.catalog_id`, after dropping a ":free"-style variant suffix); an id that
maps to nothing is stored with model_id NULL and counted as unmapped, never guessed.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import duckdb

from priceadvisor.llm import catalog_id
from priceadvisor.records import ApiPrice, FetchResult, RunStatus
from priceadvisor.store import columns

MILLION = Decimal(1_000_000)
# The dearest models listed publicly cost a few hundred dollars per 1M tokens (OpenAI's o1-pro:
# $150 input / $600 output per 1M tokens, openai.com/api/pricing, 2025). Eight times that is
# still not a price: a listing showing it has changed unit or format.
MAX_USD_PER_MTOK = Decimal(5_000)
MAX_FREE_SHARE = 0.5
_PRICES = ["input_usd_per_mtok", "output_usd_per_mtok", "cached_input_usd_per_mtok", "request_usd"]
# The columns of core.api_prices that a fetch's rows (_row) fill, in _row's order.
_NEW: columns.Schema = {
    "api_provider": "string",
    "api_model_id": "string",
    "model_id": "string",
    "name": "string",
    "input_usd_per_mtok": "float",
    "output_usd_per_mtok": "float",
    "cached_input_usd_per_mtok": "float",
    "request_usd": "float",
    "is_free": "bool",
    "context_length": "int",
    "run_id": "int",
}


def model_id_for(api_model_id: str) -> str | None:
    """The catalog model an API model id is: its ":variant" suffix names a tier, not a model."""
    return catalog_id(api_model_id.split(":", 1)[0])


def is_usable(price: ApiPrice) -> bool:
    return all(_plausible(p) for p in (price.input_per_token, price.output_per_token))


def _plausible(per_token: Decimal | None) -> bool:
    if per_token is None or not per_token.is_finite():
        return False
    return 0 <= per_token * MILLION <= MAX_USD_PER_MTOK


def _mostly_free(prices: list[ApiPrice]) -> str | None:
    free = sum(1 for p in prices if p.input_per_token == 0 and p.output_per_token == 0)
    if free <= MAX_FREE_SHARE * len(prices):
        return None
    return f"{free} of {len(prices)} API models are priced 0 (format changed?); nothing changed"


def per_million(value: Decimal | None) -> float | None:
    return None if value is None or value < 0 else float(value * MILLION)


def _row(provider: str, price: ApiPrice, run_id: int) -> tuple[Any, ...]:
    output = per_million(price.output_per_token)
    inputs = per_million(price.input_per_token)
    return (
        provider,
        price.api_model_id,
        model_id_for(price.api_model_id),
        price.name,
        inputs,
        output,
        per_million(price.cached_input_per_token),
        None if price.request_fee is None or price.request_fee < 0 else float(price.request_fee),
        inputs == 0 and output == 0,
        price.context_length,
        run_id,
    )


def merge_api_prices(
    con: duckdb.DuckDBPyConnection, run_id: int, result: FetchResult, now: Any
) -> tuple[dict[str, Any], RunStatus, str | None]:
    """Close changed and vanished prices, open new ones; counts as fetch_runs records them."""
    counts: dict[str, Any] = {"total": len(result.api_prices), "rejected": 0, "unmapped": 0}
    if result.status is not RunStatus.OK:
        return counts, result.status, result.error
    valid = [p for p in result.api_prices if is_usable(p)]
    usable = {p.api_model_id: p for p in valid}
    # each row once: refused by validation, or valid and collapsed into a later listing of it
    counts["rejected"] = len(result.api_prices) - len(valid)
    counts["duplicates"] = len(valid) - len(usable)
    if not usable:
        return counts, RunStatus.FAILED, "the listing has no usable API price; nothing changed"
    if (refused := _mostly_free(list(usable.values()))) is not None:
        return counts, RunStatus.FAILED, refused
    rows = [_row(result.provider, p, run_id) for p in usable.values()]
    counts["unmapped"] = sum(1 for r in rows if r[2] is None)
    counts["seen"] = len(rows)
    counts |= _apply(con, result.provider, rows, now)
    return counts, result.status, result.error


def _apply(
    con: duckdb.DuckDBPyConnection, provider: str, rows: list[tuple[Any, ...]], now: Any
) -> dict[str, int]:
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _api_new AS SELECT * EXCLUDE (valid_from, valid_to) "
        "FROM core.api_prices LIMIT 0"
    )
    # As Arrow columns, not executemany: DuckDB probes every Python parameter for pandas types
    # (~2 ms a row of 11 values; OpenRouter lists ~300 models). docs/benchmarks.md.
    con.register("_api_rows", columns.from_tuples(rows, _NEW))
    try:
        con.execute("INSERT INTO _api_new BY NAME SELECT * FROM _api_rows")
    finally:
        con.unregister("_api_rows")
    same = " AND ".join(f"c.{p} IS NOT DISTINCT FROM n.{p}" for p in _PRICES)
    unchanged = (
        f"EXISTS (SELECT 1 FROM _api_new n WHERE n.api_model_id = c.api_model_id AND {same})"
    )
    closed = con.execute(
        f"UPDATE core.api_prices AS c SET valid_to = ? WHERE c.api_provider = ? "
        f"AND c.valid_to IS NULL AND NOT {unchanged}",
        [now, provider],
    ).fetchone()
    changed = con.execute(
        "SELECT count(*) FROM _api_new n JOIN core.api_prices c USING (api_provider, "
        "api_model_id) WHERE c.valid_to = ?",
        [now],
    ).fetchone()
    opened = con.execute(
        "INSERT INTO core.api_prices SELECT n.* EXCLUDE (run_id), ? AS valid_from, "
        "NULL AS valid_to, n.run_id FROM _api_new n WHERE NOT EXISTS (SELECT 1 FROM "
        "core.api_prices c WHERE c.api_provider = n.api_provider AND c.api_model_id = "
        "n.api_model_id AND c.valid_to IS NULL)",
        [now],
    ).fetchone()
    moved = _count(changed)
    return {"changed": moved, "closed": _count(closed) - moved, "new": _count(opened) - moved}


def _count(row: tuple[Any, ...] | None) -> int:
    return int(row[0]) if row else 0
