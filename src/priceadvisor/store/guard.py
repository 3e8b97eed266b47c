"""The suspicious-offer guard: flags, at ingest, offers no team should be told to rent.

It runs on every snapshot after validation (store.ingest), over the snapshot's valid rows in
the temp table `_snap`, for every provider alike (adapters only pass on what the source says):
flag_offers before the snapshot is classified, flag_jumps (the price jump, the last rule) after,
over the keys the classification keeps to write.
A flagged offer is kept and shown with its reason, counted in fetch_runs.offers_flagged, and
left out of every "cheapest" answer (`prices`, `advise`, `tco --workload`, alerts, the digest,
the dashboard) until it is confirmed or allowed. One flag per offer; the first rule that
matches wins, in this order (docs/offers-guard.md has the user's view):

  not_offered   a field of the source says the offer does not exist although a price is
                listed (RawQuote.not_offered_reason: RunPod `communityCloud: false`, ...).
                Never confirmed by the data: only the allow-list lifts it.
  placeholder   the price the source states is one of the values the provider's manifest
                names as its placeholders (`[guard] placeholder_prices`), and the market does
                not confirm it (fewer than MIN_MARKET_PROVIDERS other providers price the GPU,
                or it is more than BELOW_FACTOR below their median).
  below_market  the per-GPU-hour price is more than BELOW_FACTOR times below the median of the
                other providers' medians for the same GPU model and pricing (at least
                MIN_MARKET_PROVIDERS of them), unless a second source confirms it: another
                provider offers that GPU and pricing at most CONFIRM_FACTOR dearer, or the
                same provider does under MIN_OWN_CONFIRMATIONS other instance types.
  below_provider  the same, against the median of the provider's own offers of the GPU model
                and pricing in this snapshot (at least MIN_OWN_OFFERS of them), with the same
                confirmations.
  price_jump    the price moved by BELOW_FACTOR or more (either way) since the previous fetch
                of the same offer. The next fetch that sees the same price confirms it (the
                flag goes); one that sees the old price again closes the jump's interval with
                its flag, so the glitch stays marked in price_history.

Medians, not means: one absurd offer must not move its own reference. Per-provider medians
first, then their median: a marketplace listing hundreds of offers counts as one voice.
The market is the other providers' current, unflagged, published offers as stored (offers
flagged only for being low may still confirm); it is read when this provider's snapshot is
ingested, so a flag follows the market at the next fetch. `market` averages are not judged.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

import duckdb

from priceadvisor.store import columns
from priceadvisor.store.availability import never_available

# How far below its reference a price must be to be flagged, and how far a jump must go: a
# factor of 3. On the recordings of 25 providers (docs/offers-guard.md) the typical offer is
# 0.93x the median of the other providers' medians, the 95th percentile 2.3x below it
# (on-demand) and 3.3x (spot); 23 real offers are more than 3x below (Vast asks and bids, up to
# 4.9x), all of them confirmed by another source. A placeholder or a wrong field is 4-100x off
# (MI300X $0.50 against $1.33-3.45, a B200 at $0.01); so a low price alone is not enough: only
# one nothing confirms is flagged.
BELOW_FACTOR = 3.0
MIN_MARKET_PROVIDERS = 3  # fewer other providers than this: no market to compare with
MIN_OWN_OFFERS = 4  # the provider's offers of the GPU x pricing, the flagged one included
# A low price is confirmed by another provider at most this much dearer (two sources agree),
# or by MIN_OWN_CONFIRMATIONS offers of the provider under other instance types (a
# marketplace's independent hosts agree; one wrong field repeated across regions does not).
CONFIRM_FACTOR = 1.5
MIN_OWN_CONFIRMATIONS = 2

_VALID = "s.reject_reason IS NULL AND s.flag IS NULL AND s.pricing IN ('on_demand', 'spot')"

_NOT_OFFERED_SQL = """
UPDATE _snap AS s SET flag = 'not_offered', flag_reason = s.not_offered_reason
WHERE s.reject_reason IS NULL AND s.not_offered_reason IS NOT NULL
"""

# The other providers' current offers per GPU model and pricing: the median of their medians
# over unflagged offers, how many providers, and the cheapest offer that may confirm a low
# price: an unflagged one or one itself flagged only for being low (two independent sources
# agreeing on a low price confirm each other; the first to arrive is confirmed at its next
# fetch). A placeholder, a "not offered" or a jump confirms nothing.
_MARKET_SQL = """
CREATE OR REPLACE TEMP TABLE _market AS
SELECT gpu_model, pricing, median(provider_median) AS market_median,
    count(provider_median) AS providers, min(provider_min) AS cheapest
FROM (
    SELECT provider, gpu_model, pricing,
        median(price_gpu_hour_usd) FILTER (WHERE flag IS NULL) AS provider_median,
        min(price_gpu_hour_usd) AS provider_min
    FROM core.current_offers
    WHERE provider <> $provider AND gpu_model IS NOT NULL
      AND (flag IS NULL OR flag IN ('below_market', 'below_provider'))
      AND price_gpu_hour_usd > 0 AND price_origin = 'published'
      AND pricing IN ('on_demand', 'spot')
    GROUP BY ALL
)
GROUP BY ALL
"""

_MONEY = "printf('$%.2f', {})"
_BELOW = f"""printf('%.1fx', {{ref}} / s.price_gpu_hour_usd) || ' below ' || {{what}}
    || ' (' || {_MONEY.format("{ref}")} || '/GPU-h for ' || s.gpu_model || ' ' || s.pricing
    || ')'"""
_IN_BAND = (
    f"m.providers >= {MIN_MARKET_PROVIDERS}"
    f" AND s.price_gpu_hour_usd * {BELOW_FACTOR} >= m.market_median"
)

_PLACEHOLDER_SQL = f"""
UPDATE _snap AS s SET flag = 'placeholder',
    flag_reason = 'price ' || s.price || ' is a value ' || $provider
        || ' is known to list as a placeholder, and the market does not confirm it'
WHERE {_VALID} AND list_contains($placeholders, s.price) AND NOT coalesce((
    SELECT {_IN_BAND} FROM _market AS m
    WHERE m.gpu_model = s.gpu_model AND m.pricing = s.pricing), false)
"""

# The rows low enough to be suspect, with both references: usually none, so the pairwise
# confirmation below touches a handful of rows, never the snapshot squared.
_SUSPECTS_SQL = f"""
CREATE OR REPLACE TEMP TABLE _suspects AS
WITH own AS (
    SELECT gpu_model, pricing, median(price_gpu_hour_usd) AS own_median, count(*) AS offers
    FROM _snap WHERE reject_reason IS NULL AND gpu_model IS NOT NULL GROUP BY ALL
),
refs AS (  -- one row per GPU model and pricing: both references and the lower bound they set
    SELECT o.*, m.market_median, m.providers, m.cheapest, greatest(
            CASE WHEN m.providers >= {MIN_MARKET_PROVIDERS} THEN m.market_median END,
            CASE WHEN o.offers >= {MIN_OWN_OFFERS} THEN o.own_median END
        ) / {BELOW_FACTOR} AS suspect_below
    FROM own AS o LEFT JOIN _market AS m ON m.gpu_model = o.gpu_model AND m.pricing = o.pricing
)
SELECT s.rowid AS row_id, s.instance_type, s.price_gpu_hour_usd, r.*
FROM _snap AS s JOIN refs AS r ON r.gpu_model = s.gpu_model AND r.pricing = s.pricing
WHERE {_VALID} AND s.price_gpu_hour_usd < r.suspect_below
"""

# A suspect is confirmed by another provider at most CONFIRM_FACTOR dearer, or by its own
# provider's offers under MIN_OWN_CONFIRMATIONS other instance types as cheap: among the
# cheapest instance types of its GPU model and pricing (one more than needed, in case its own is
# one of them), the others' MIN_OWN_CONFIRMATIONS-th price. One aggregation, no pairwise join.
_CONFIRMED_SQL = f"""
CREATE OR REPLACE TEMP TABLE _confirmed AS
WITH types AS (
    SELECT gpu_model, pricing, instance_type, min(price_gpu_hour_usd) AS price
    FROM _snap WHERE reject_reason IS NULL AND not_offered_reason IS NULL
      AND gpu_model IS NOT NULL
    GROUP BY ALL
),
cheapest_types AS (
    SELECT gpu_model, pricing,
        min_by({{'instance_type': instance_type, 'price': price}}, price,
               {MIN_OWN_CONFIRMATIONS + 1}) AS cheapest
    FROM types GROUP BY ALL
)
SELECT x.row_id FROM _suspects AS x
LEFT JOIN cheapest_types AS t ON t.gpu_model = x.gpu_model AND t.pricing = x.pricing
WHERE x.cheapest <= x.price_gpu_hour_usd * {CONFIRM_FACTOR}
   OR list_filter(t.cheapest, lambda c: c.instance_type <> x.instance_type)
          [{MIN_OWN_CONFIRMATIONS}].price <= x.price_gpu_hour_usd * {CONFIRM_FACTOR}
"""

_BELOW_MARKET_SQL = f"""
UPDATE _snap AS s SET flag = 'below_market', flag_reason = {
    _BELOW.format(
        ref="x.market_median",
        what="'the median of ' || x.providers || ' other providers'",
    )
}
FROM _suspects AS x
WHERE s.rowid = x.row_id AND {_VALID}
  AND x.providers >= {MIN_MARKET_PROVIDERS}
  AND s.price_gpu_hour_usd * {BELOW_FACTOR} < x.market_median
  AND x.row_id NOT IN (SELECT row_id FROM _confirmed)
"""

_BELOW_PROVIDER_SQL = f"""
UPDATE _snap AS s SET flag = 'below_provider', flag_reason = {
    _BELOW.format(
        ref="x.own_median", what="'the median of ' || x.offers || ' offers of ' || $provider"
    )
}
FROM _suspects AS x
WHERE s.rowid = x.row_id AND {_VALID}
  AND x.offers >= {MIN_OWN_OFFERS} AND s.price_gpu_hour_usd * {BELOW_FACTOR} < x.own_median
  AND x.row_id NOT IN (SELECT row_id FROM _confirmed)
"""

# Against the offer's open interval. Right after a flagged jump no jump is flagged: the next
# price either confirms the jump (same price) or ends it (back, or elsewhere). Run after the
# classification (flag_jumps), over the keys it kept to write (_verdicts, with their open
# interval's key and the quote's position): a jump moves the offer's price_hour_usd, so its key
# either changed price or kept it with its attributes moved (price_hour_usd is one of them),
# and both are kept; a new key has no open interval. Rows an earlier rule flagged are left out
# by their reason, which the allow-list keeps on the rows it lifts.
_PRICE_JUMP_SQL = f"""
UPDATE _snap AS s SET flag = 'price_jump',
    flag_reason = printf('price moved %.1fx since the previous fetch (', greatest(
            s.price_hour_usd / h.price_hour_usd, h.price_hour_usd / s.price_hour_usd))
        || {_MONEY.format("h.price_hour_usd")} || ' -> ' || {_MONEY.format("s.price_hour_usd")}
        || '/h); unconfirmed until a later fetch sees it again'
FROM (
    SELECT v.quote_index, h.price_hour_usd
    FROM _verdicts AS v JOIN core.current_offers AS h
        ON h.region = v.region AND h.zone = v.zone AND h.instance_type = v.instance_type
        AND h.pricing = v.pricing
    WHERE h.provider = $provider AND h.pricing IN ('on_demand', 'spot')
      AND h.flag IS DISTINCT FROM 'price_jump' AND h.price_hour_usd > 0
) AS h
WHERE s.quote_index = h.quote_index AND {_VALID} AND s.flag_reason IS NULL
  AND greatest(s.price_hour_usd / h.price_hour_usd, h.price_hour_usd / s.price_hour_usd)
      >= {BELOW_FACTOR}
"""

# The config's allow-list (providers.<id>.allow_flagged): "*" for every offer of the provider,
# "region/instance_type" or "region/instance_type/pricing" for one. Allowed offers keep their
# reason (prefixed) but no flag, so every reader treats them as ordinary offers.
_ALLOW_SQL = """
UPDATE _snap AS s SET flag = NULL,
    flag_reason = 'allowed by config (' || s.flag || '): ' || s.flag_reason
WHERE s.flag IS NOT NULL AND (list_contains($allow, '*')
    OR list_contains($allow, s.region || '/' || s.instance_type)
    OR list_contains($allow, s.region || '/' || s.instance_type || '/' || s.pricing))
"""


def flag_offers(
    con: duckdb.DuckDBPyConnection,
    provider: str,
    placeholders: Sequence[float] = (),
    allow: Sequence[str] = (),
) -> None:
    """Flag the suspicious valid rows of `_snap` (its columns flag and flag_reason) by every
    rule but the price jump, which flag_jumps adds once the snapshot is classified."""
    params = _params(provider, placeholders, allow)
    con.execute(_NOT_OFFERED_SQL)
    _execute(con, _MARKET_SQL, params)
    if placeholders:
        _execute(con, _PLACEHOLDER_SQL, params)
    _execute(con, _SUSPECTS_SQL, params)
    if _any_row(con, "_suspects"):
        _execute(con, _CONFIRMED_SQL, params)
        if _any_row(con, _UNCONFIRMED):
            _execute(con, _BELOW_MARKET_SQL, params)
            _execute(con, _BELOW_PROVIDER_SQL, params)
        con.execute("DROP TABLE _confirmed")
    if allow:
        _execute(con, _ALLOW_SQL, params)
    con.execute("DROP TABLE _market; DROP TABLE _suspects")


def flag_jumps(con: duckdb.DuckDBPyConnection, provider: str, allow: Sequence[str] = ()) -> int:
    """The last rule, the price jump, over the rows the classification kept (_verdicts), and
    the allow-list over what it flagged; returns how many valid rows of `_snap` stay flagged.
    Exactly as run with the other rules: a jump is only flagged where none of them flagged
    (their reason is kept on a row the allow-list lifts), and the allow-list lifts only the
    flags still set, which it already passed once."""
    params = _params(provider, (), allow)
    _execute(con, _PRICE_JUMP_SQL, params)
    if allow:
        _execute(con, _ALLOW_SQL, params)
    row = con.execute("SELECT count(flag) FROM _snap WHERE reject_reason IS NULL").fetchone()
    return int(row[0]) if row else 0


def _params(provider: str, placeholders: Sequence[float], allow: Sequence[str]) -> dict[str, Any]:
    return {
        "provider": provider,
        "placeholders": [float(p) for p in placeholders],
        "allow": list(allow),
    }


# Within one fetch cycle each provider is checked against the market as stored when it is
# ingested, so a low price can be flagged only because the provider that confirms it comes
# later in the same cycle. Once the cycle's ingests are in, a low-price flag that another
# provider's current offer now confirms (the same rule as at ingest) is lifted.
_RECONFIRM_SQL = f"""
UPDATE core.current_offers AS s SET flag = NULL,
    flag_reason = 'confirmed later in its fetch cycle (' || s.flag || '): ' || s.flag_reason
WHERE s.flag = 'below_market' AND EXISTS (
    SELECT 1 FROM core.current_offers AS o
    WHERE o.provider <> s.provider AND o.gpu_model = s.gpu_model AND o.pricing = s.pricing
      AND o.price_origin = 'published' AND o.price_gpu_hour_usd > 0
      AND (o.flag IS NULL OR o.flag IN ('below_market', 'below_provider'))
      AND o.price_gpu_hour_usd <= s.price_gpu_hour_usd * {CONFIRM_FACTOR})
"""


# An offer listed for NEVER_AVAILABLE_DAYS without a gap while its source said at every fetch
# that it cannot be rented is a price with no capacity behind it: flagged `never_available`
# (store.availability.never_available), lifted when the source says it can be rented again
# (the offer then opens a new interval, which starts unflagged).
NEVER_AVAILABLE_DAYS = 14.0

_NEVER_AVAILABLE_SQL = """
UPDATE core.current_offers AS s SET flag = 'never_available', flag_reason = n.reason
FROM _never_available AS n
WHERE s.flag IS NULL AND s.provider = n.provider AND s.region = n.region
  AND s.zone = n.zone AND s.instance_type = n.instance_type AND s.pricing = n.pricing
  AND s.term_months = n.term_months
"""


def reconfirm_after_cycle(con: duckdb.DuckDBPyConnection, now: dt.datetime) -> None:
    """After a cycle's ingests: lift the low-price flags the rest of the cycle confirms, and
    flag the offers that were never once available in NEVER_AVAILABLE_DAYS."""
    con.execute(_RECONFIRM_SQL)
    found = never_available(con, NEVER_AVAILABLE_DAYS, now)
    if not found:
        return
    con.register("_never_available", columns.from_rows([asdict(n) for n in found], _KEY_REASON))
    try:
        con.execute(_NEVER_AVAILABLE_SQL)
    finally:
        con.unregister("_never_available")


_KEY_REASON: columns.Schema = {
    "provider": "string",
    "region": "string",
    "zone": "string",
    "instance_type": "string",
    "pricing": "string",
    "term_months": "int",
    "reason": "string",
}


# The suspects nothing confirms: the only rows the two low-price rules can flag.
_UNCONFIRMED = "_suspects ANTI JOIN _confirmed USING (row_id)"


def _any_row(con: duckdb.DuckDBPyConnection, rows: str) -> bool:
    """Whether `rows` (a FROM clause) has a row. The confirmation and both low-price rules read
    only the suspects, and the rules only the unconfirmed ones: without any they are skipped
    (~20 ms of a 100,000-quote snapshot with no suspect, ~10 ms of one whose suspects are all
    confirmed; docs/benchmarks.md)."""
    return con.execute(f"SELECT EXISTS (FROM {rows})").fetchone() == (True,)


def _execute(con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, Any]) -> None:
    con.execute(sql, {name: value for name, value in params.items() if f"${name}" in sql})
