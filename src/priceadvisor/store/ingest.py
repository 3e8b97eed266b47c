"""Normalise, validate and merge one provider snapshot into the change log.

Everything here is set-based: quotes go into DuckDB as Arrow tables of HANDOFF_BATCH quotes,
names are resolved once per distinct value (not per row), and the merge is a handful of SQL
statements in one transaction. The run's outcome decides what may change:
  ok       — keys not seen in the snapshot are closed;
  partial  — they are closed only in the regions that completed;
  failed   — nothing changes.
A snapshot most of whose quotes are rejected is treated as failed: that is what a format change
looks like, and closing every offer because of it would lose live prices.

Snapshots merge in observation order. A snapshot is stamped with its observation time (when its
fetch finished), not the time it reaches the database, and one observed no later than the
provider's latest merged snapshot is `superseded`: recorded, nothing changed. Every close and
open therefore happens after everything already in the history, so an interval never ends before
it starts and two intervals of a key never overlap, however late an ingest gets its turn.

A key's interval is its price and its availability (`available`, `stock`): a change of either
closes the interval and opens another, so the history says when an offer could be rented.

The change log is two tables: the open intervals (core.current_offers) and the closed ones
(core.price_closed, append-only). A merge writes only what changed: intervals closed and opened,
open rows whose attributes moved, and one core.provider_coverage row per region and pricing the
run covered. An unchanged offer's last_seen is read from there (core.current_intervals), so a
fetch costs the same after a year of history as after a day.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb

from priceadvisor.gpu_specs import gpu_catalog
from priceadvisor.manifest import Manifest
from priceadvisor.records import FetchResult, IngestSummary, RawQuote, RunStatus, utcnow
from priceadvisor.store import allocator, clustering, columns, transactions
from priceadvisor.store.api_prices import merge_api_prices
from priceadvisor.store.drift import DEFAULT_MIN_OFFER_SHARE, drift_reason
from priceadvisor.store.expectations import broken_expectations
from priceadvisor.store.guard import flag_jumps, flag_offers

MAX_REJECTED_SAMPLES = 1000
# More than this share of quotes rejected means the source changed shape: fail, change nothing.
MAX_REJECTED_SHARE = 0.5
# Bounds of a believable price (USD). The highest real list prices are ~$30 per GPU-hour
# (GB200/B300 on-demand) and whole 72-GPU racks under $2000/h; the lowest marketplace GPUs
# rent for a few cents. Anything outside is a parsing or source error, not a deal.
MIN_GPU_HOUR_USD = 0.01
MAX_GPU_HOUR_USD = 200.0
MAX_NODE_HOUR_USD = 5000.0
MAX_GPUS_PER_OFFER = 128

_QUOTE_SCHEMA: columns.Schema = {
    "region": "string",
    "zone": "string",
    "instance_type": "string",
    "pricing": "string",
    "price": "float",
    "price_basis": "string",
    "currency": "string",
    "gpu_name_raw": "string",
    "gpu_count": "shared_float",
    "gpu_memory_gb": "shared_float",
    "vcpus": "shared_float",
    "ram_gb": "shared_float",
    "available": "bool",
    "stock": "string",
    "interruption_rate": "float",
    "source_url": "string",
    "offer_count": "int",
    "price_median": "float",
    "price_date": "string",
    "term_months": "int",
    "upfront": "float",
    "monthly": "float",
    "disk_usd_gb_month": "float",
    "egress_usd_gb": "float",
    "price_rule": "string",
    "not_offered_reason": "string",
}

SPOT_NOT_BELOW_ON_DEMAND = "spot price not below the on-demand price of the same offer"
DUPLICATE_KEY = "duplicate key in the snapshot (collapsed into the cheapest)"


def quotes_table(quotes: Sequence[RawQuote], positions: Sequence[int]) -> Any:
    """The quotes as an Arrow table, with their positions in the snapshot (`quote_index`)."""
    return columns.from_objects(quotes, _QUOTE_SCHEMA, ("quote_index", positions))


@dataclass(frozen=True)
class StagedQuotes:
    """A snapshot's quotes as Arrow tables of HANDOFF_BATCH quotes each (quotes_table), in
    snapshot order: what the ingest reads, twice (the snapshot, then the quotes of the keys to
    write). Either made up front (`tables`, stage_quotes: at 100,000 quotes, their repeated
    values dictionary-encoded, they take about a quarter of the RawQuote objects' memory) or
    when read from `quotes`, which the caller keeps (HANDOFF_BATCH)."""

    count: int
    tables: list[Any] = field(default_factory=list)
    quotes: Sequence[RawQuote] = ()

    def starts(self) -> range:
        """Each batch's first position in the snapshot."""
        return range(0, self.count, HANDOFF_BATCH)

    def table(self, start: int) -> Any:
        """The batch that starts at `start`."""
        if self.tables:
            return self.tables[start // HANDOFF_BATCH]
        stop = min(start + HANDOFF_BATCH, self.count)
        return quotes_table(self.quotes[start:stop], range(start, stop))

    def picked(self, start: int, positions: list[int]) -> Any:
        """A table holding at least the quotes at `positions` of the batch at `start`: the
        staged table itself (the statement that reads it picks them), or one of those quotes
        alone made from the caller's list (cheaper than the whole batch's)."""
        if self.tables:
            return self.tables[start // HANDOFF_BATCH]
        return quotes_table([self.quotes[i] for i in positions], positions)


def stage_quotes(quotes: list[RawQuote]) -> StagedQuotes:
    """Take the quotes out of `quotes`, batch by batch: each batch leaves the list as its Arrow
    table is made, so a caller holding no other reference (the fetch path) never holds all the
    objects and all their tables at once, and holds no object through the ingest
    (docs/benchmarks.md). The list is empty afterwards."""
    tables, count = [], 0
    while quotes:
        batch = quotes[:HANDOFF_BATCH]
        del quotes[:HANDOFF_BATCH]
        tables.append(quotes_table(batch, range(count, count + len(batch))))
        count += len(batch)
    return StagedQuotes(count, tables)


# The values resolved or looked up once each, distinct as DuckDB compares them, in one scan:
# DuckDB reads a nanoarrow table whole on every scan (no column pushdown), ~10 ms at 100,000
# quotes. `is_key` tells a resolution key from a currency.
_DISTINCT_SQL = """
SELECT instance_type, gpu_name_raw, gpu_memory_gb, upper(currency),
    grouping(instance_type) = 0 AS is_key
FROM _raw GROUP BY GROUPING SETS ((instance_type, gpu_name_raw, gpu_memory_gb), (upper(currency)))
"""
# The same scan for the snapshot's own table (_snap), which also needs the names its ENUM types
# list (_snapshot_values): the currency's set carries the other names of a quote that are not part
# of a resolution key (their combinations are few: a provider's zones, pricing kinds and stock
# levels). Its rows have _DISTINCT_SQL's columns first.
_SNAPSHOT_DISTINCT_SQL = """
SELECT instance_type, gpu_name_raw, gpu_memory_gb, upper(currency),
    grouping(instance_type) = 0 AS is_key,
    region, coalesce(zone, ''), pricing, lower(trim(stock))
FROM _raw GROUP BY GROUPING SETS (
    (instance_type, gpu_name_raw, gpu_memory_gb),
    (upper(currency), region, coalesce(zone, ''), pricing, lower(trim(stock))))
"""


def resolution_table(
    manifest: Manifest, keys: list[tuple[Any, ...]], known: dict[tuple[Any, ...], Any] | None = None
) -> Any:
    """Resolve each distinct (instance type, raw GPU name, memory) once, in Python; `known`
    keeps the resolutions of earlier batches of the snapshot (a NaN memory never matches, and
    is resolved again: same result)."""
    known = {} if known is None else known
    rows = [_resolution(manifest, key, known) for key in keys]
    values: dict[str, list[Any]] = {name: [] for name in _RESOLVED_SCHEMA}
    for row in rows:
        for name, value in zip(_RESOLVED_SCHEMA, row, strict=True):
            values[name].append(value)
    return columns.table(values, _RESOLVED_SCHEMA)


def _resolution(
    manifest: Manifest, key: tuple[Any, ...], known: dict[tuple[Any, ...], Any]
) -> tuple[Any, ...]:
    found: tuple[Any, ...] = (
        known[key] if key in known else known.setdefault(key, _resolve(manifest, *key))
    )
    return found


_RESOLVED_SCHEMA: columns.Schema = {
    "instance_type": "string",
    "gpu_name_raw": "string",
    "gpu_memory_gb": "float",
    "gpu_model": "string",
    "spec_gpus": "float",
    "spec_vcpus": "float",
    "spec_ram_gb": "float",
    "catalog_memory_gb": "float",
}


def _resolve(
    manifest: Manifest, instance_type: str | None, raw: str | None, memory: float | None
) -> tuple[Any, ...]:
    catalog = gpu_catalog()
    spec = manifest.instance_types.get(instance_type or "")
    hardware: tuple[float | None, float | None, float | None] = (None, None, None)
    if spec is not None:
        model = spec.gpu
        hardware = (spec.gpus, spec.vcpus, spec.ram_gb)
    else:
        model = manifest.gpu_names.get(raw or "") or catalog.resolve(raw, memory)
    memory_gb = catalog.gpus[model].memory_gb if model is not None and model in catalog else None
    return (instance_type, raw, memory, model, *hardware, memory_gb)


def fx_table(con: duckdb.DuckDBPyConnection, on: Any, currencies: list[str | None]) -> None:
    """USD per unit of each of the snapshot's `currencies` (upper case), at the latest rate on
    or before `on`."""
    con.execute(
        """
        CREATE OR REPLACE TEMP TABLE _fx AS
        WITH wanted AS (SELECT unnest(CAST(? AS VARCHAR[])) AS currency),
        latest AS (
            SELECT currency, arg_max(per_eur, rate_date) AS per_eur
            FROM core.fx_rates WHERE rate_date <= CAST(? AS DATE) GROUP BY currency
        )
        SELECT w.currency,
               CASE WHEN w.currency = 'USD' THEN 1.0 ELSE usd.per_eur / l.per_eur END
                   AS usd_per_unit
        FROM wanted AS w
        LEFT JOIN latest AS l ON l.currency = w.currency
        LEFT JOIN latest AS usd ON usd.currency = 'USD'
        """,
        [currencies, on],
    )


# Columns of an open interval that follow the latest snapshot without opening a new interval.
# Availability (`available`, `stock`) is not among them: a change of it opens a new interval
# like a price change, so the history says when an offer could be rented (_AVAILABILITY).
_ATTRIBUTES = (
    "gpu_model",
    "gpu_name_raw",
    "gpu_count",
    "gpu_memory_gb",
    "vcpus",
    "ram_gb",
    "price_hour_usd",
    "price_gpu_hour_usd",
    "interruption_rate",
    "source_url",
    "offer_count",
    "price_hour_median_usd",
    "price_date",
    "upfront_usd",
    "monthly_usd",
    "disk_usd_gb_month",
    "egress_usd_gb",
    "price_origin",
    "price_rule",
    "flag",
    "flag_reason",
)
# The attributes the offer guard does not set, hashed once when the snapshot is normalised (the
# guard sets flag and flag_reason later): _snap carries one BIGINT instead of their columns.
_DETAILS = tuple(c for c in _ATTRIBUTES if c not in ("flag", "flag_reason"))
_DETAILS_HASH = f"hash({', '.join(_DETAILS)})"

# Each quote normalised: names resolved, FX applied, prices per node and per GPU-hour in USD.
# `quote_index` is the quote's position in the snapshot (store.columns positions).
_NORMALISE_CTES = """
WITH joined AS (
    SELECT
        r.quote_index, r.region, coalesce(r.zone, '') AS zone, r.instance_type, r.pricing, r.price,
        r.price_basis, upper(r.currency) AS currency,
        m.gpu_model,
        coalesce(r.gpu_name_raw, r.instance_type) AS gpu_name_raw,
        coalesce(r.gpu_count, m.spec_gpus) AS gpu_count,
        coalesce(r.gpu_memory_gb, m.catalog_memory_gb) AS gpu_memory_gb,
        coalesce(r.vcpus, m.spec_vcpus) AS vcpus,
        coalesce(r.ram_gb, m.spec_ram_gb) AS ram_gb,
        r.available, lower(trim(r.stock)) AS stock, r.interruption_rate, r.source_url,
        r.offer_count, r.price_median,
        TRY_CAST(r.price_date AS DATE) AS price_date,
        CAST(coalesce(r.term_months, 0) AS INTEGER) AS term_months, r.upfront, r.monthly,
        r.disk_usd_gb_month AS disk_original, r.egress_usd_gb AS egress_original,
        r.price_rule, r.not_offered_reason, CASE WHEN r.price_rule IS NULL THEN 'published' ELSE 'derived' END
            AS price_origin,
        fx.usd_per_unit
    FROM _raw AS r
    LEFT JOIN _resolved AS m
        ON  coalesce(m.instance_type, '') = coalesce(r.instance_type, '')
        AND coalesce(m.gpu_name_raw, '') = coalesce(r.gpu_name_raw, '')
        AND coalesce(m.gpu_memory_gb, -1) = coalesce(r.gpu_memory_gb, -1)
    LEFT JOIN _fx AS fx ON fx.currency = upper(r.currency)
),
priced AS (
    SELECT *,
        CASE WHEN price_basis = 'gpu' THEN price * gpu_count ELSE price END AS node_original,
        CASE WHEN price_basis = 'gpu' THEN price_median * gpu_count ELSE price_median END
            AS node_median_original,
        CASE WHEN price_basis = 'gpu' THEN upfront * gpu_count ELSE upfront END AS node_upfront,
        CASE WHEN price_basis = 'gpu' THEN monthly * gpu_count ELSE monthly END AS node_monthly
    FROM joined
),
usd AS (
    SELECT *,
        node_original * usd_per_unit AS price_hour_usd,
        node_original * usd_per_unit / nullif(gpu_count, 0) AS price_gpu_hour_usd,
        node_median_original * usd_per_unit AS price_hour_median_usd,
        node_upfront * usd_per_unit AS upfront_usd,
        node_monthly * usd_per_unit AS monthly_usd,
        disk_original * usd_per_unit AS disk_usd_gb_month,
        egress_original * usd_per_unit AS egress_usd_gb
    FROM priced
)
"""  # noqa: E501

# The columns of _snap that hold names, each as an ENUM type of the snapshot's own names
# (_snapshot_values): one byte or two a row instead of 16 and more for a VARCHAR (~7 MB less at
# 100,000 quotes, held through the whole ingest: docs/benchmarks.md). Each type lists its names
# sorted as DuckDB sorts the text, so ordering by such a column orders as by its text.
_NAME_COLUMNS = ("region", "zone", "instance_type", "pricing", "currency", "gpu_model", "stock")
# The names _SNAPSHOT_DISTINCT_SQL gives beside a currency, in its order.
_QUOTE_NAMES = ("currency", "region", "zone", "pricing", "stock")

# The snapshot as the checks, the offer guard and the classification read it: the key, what
# they compare, and one hash of the rest (_DETAILS). Not the 13 columns only an offer to write
# needs: with them _snap held ~35 MB at 100,000 quotes, without them ~24 MB
# (docs/benchmarks.md); the few offers to write are normalised again from their quotes
# (_CHANGES_SELECT). Nor gpu_name_raw and source_url, which only break the ties between
# duplicates (~2.4 MB at 100,000 quotes): those are read again for the duplicates alone
# (_TIES_SQL).
_NORMALISE_SELECT = f"""{_NORMALISE_CTES}
SELECT quote_index, {", ".join(f"CAST({c} AS _snap_{c}) AS {c}" for c in _NAME_COLUMNS[:4])},
    term_months, price, CAST(currency AS _snap_currency) AS currency,
    CAST(gpu_model AS _snap_gpu_model) AS gpu_model, available,
    CAST(stock AS _snap_stock) AS stock, node_original, price_hour_usd,
    price_gpu_hour_usd, not_offered_reason, {_DETAILS_HASH} AS details,
    NULL::VARCHAR AS flag, NULL::VARCHAR AS flag_reason,  -- set by store.guard
    CASE
        WHEN price IS NULL OR isnan(price) OR isinf(price) THEN 'price missing or not a number'
        WHEN price <= 0 THEN 'price not positive'
        WHEN pricing IS NULL OR pricing NOT IN ('on_demand', 'spot', 'market', 'reserved')
            THEN 'unknown pricing kind'
        WHEN pricing = 'market' AND price_date IS NULL THEN 'market average without a date'
        WHEN pricing = 'reserved' AND term_months <= 0 THEN 'commitment without a term'
        WHEN pricing <> 'reserved' AND term_months <> 0 THEN 'term on a price that is no commitment'
        WHEN upfront < 0 OR monthly < 0 OR isnan(upfront) OR isnan(monthly)
            THEN 'commitment payment not a positive number'
        WHEN disk_original < 0 OR egress_original < 0 OR isnan(disk_original)
            OR isnan(egress_original) OR isinf(disk_original) OR isinf(egress_original)
            THEN 'disk or egress price negative or not a number'
        WHEN price_basis IS NULL OR price_basis NOT IN ('node', 'gpu') THEN 'unknown price basis'
        WHEN coalesce(region, '') = '' THEN 'region missing'
        WHEN coalesce(instance_type, '') = '' THEN 'instance type missing'
        WHEN gpu_count IS NOT NULL AND (gpu_count <= 0 OR gpu_count > {MAX_GPUS_PER_OFFER})
            THEN 'implausible GPU count'
        WHEN price_basis = 'gpu' AND gpu_count IS NULL THEN 'per-GPU price without a GPU count'
        WHEN currency IS NULL OR usd_per_unit IS NULL THEN 'no FX rate for ' || coalesce(currency, '?')
        WHEN price_hour_usd > {MAX_NODE_HOUR_USD} THEN 'implausible price (> ${MAX_NODE_HOUR_USD:.0f}/hour)'
        WHEN price_gpu_hour_usd > {MAX_GPU_HOUR_USD} THEN 'implausible price (> ${MAX_GPU_HOUR_USD:.0f}/GPU-hour)'
        WHEN price_gpu_hour_usd < {MIN_GPU_HOUR_USD} THEN 'implausible price (< ${MIN_GPU_HOUR_USD}/GPU-hour)'
        WHEN interruption_rate IS NOT NULL AND NOT (interruption_rate BETWEEN 0 AND 1)
            THEN 'interruption rate outside 0..1'
    END AS reject_reason
FROM usd
"""  # noqa: E501
# The first batch creates the snapshot's table, the others append to it (same columns and types:
# every batch's Arrow table has _QUOTE_SCHEMA's).
_NORMALISE_FIRST_SQL = f"CREATE OR REPLACE TEMP TABLE _snap AS {_NORMALISE_SELECT}"
_NORMALISE_MORE_SQL = f"INSERT INTO _snap {_NORMALISE_SELECT}"

# The last check, once the rest have passed: a spot price is only a discount against the same
# offer's on-demand price (same key but pricing); one at or above it (Azure meters capped at
# pay-as-you-go, Vast bid floors above the ask, RunPod echoes) is no spot offer at all. A
# separate statement over the stored snapshot rather than a self-join inside the one above:
# that made DuckDB materialise the whole joined snapshot a second time (~30 MB at 100k quotes).
_SPOT_CHECK_SQL = f"""
UPDATE _snap AS s SET reject_reason = '{SPOT_NOT_BELOW_ON_DEMAND}'
FROM (
    SELECT region, zone, instance_type, min(price_hour_usd) AS on_demand_hour_usd
    FROM _snap WHERE pricing = 'on_demand' AND price > 0 GROUP BY ALL
) AS o
WHERE s.pricing = 'spot' AND s.reject_reason IS NULL AND s.region = o.region
  AND s.zone = o.zone AND s.instance_type = o.instance_type
  AND s.price_hour_usd >= o.on_demand_hour_usd
"""

# A commitment's term is part of its key: a 12- and a 36-month price of one instance are two
# offers (term_months is 0 for every price that is no commitment).
_KEY_COLUMNS = ("region", "zone", "instance_type", "pricing", "term_months")
# Whether this run covers a key: an `ok` run covers all of them, a partial run its complete
# scopes (a region, or 'region|pricing').
_COVERED = """($complete OR list_contains($scopes, {t}.region)
    OR list_contains($scopes, {t}.region || '|' || {t}.pricing))"""


def _key_match(left: str, right: str) -> str:
    return " AND ".join(f"{left}.{c} = {right}.{c}" for c in _KEY_COLUMNS)


_KEYS = ", ".join(_KEY_COLUMNS)
# The attributes compared as one 64-bit hash: the classifying join then carries one column per
# side instead of sixteen (~15 MB less at 100k offers). Two different attribute rows of a key
# hashing alike (odds 2^-64 per key and run) would only delay that attribute update to the
# key's next change; prices are compared exactly. Equal values hash alike only if their types
# do (a DATE and its text do not; integers of any width do): _snap has the table's types, which
# tests/store/test_ingest_classify.py checks with every attribute set. The snapshot's side
# hashes the hash _snap carries (`details`) with the guard's columns; the table's side hashes
# the same columns the same way.
_SNAPSHOT_ATTRIBUTES = "hash(details, flag, flag_reason) AS attributes"
_STORED_ATTRIBUTES = f"hash({_DETAILS_HASH}, flag, flag_reason) AS attributes"


# Whether a key's availability is what its open interval says (else the key has 'changed').
_AVAILABILITY = (
    "h.available IS NOT DISTINCT FROM g.available AND h.stock IS NOT DISTINCT FROM g.stock"
)

# The snapshot's valid quotes, one per key (duplicates are marked in _snap by then).
_GOOD_SQL = "CREATE OR REPLACE TEMP VIEW _good AS SELECT * FROM _snap WHERE reject_reason IS NULL"

# The classification joins the snapshot to the table on the codes of the key's names in their
# ENUM types, so its hash table (built on the snapshot's side) carries a byte or two per name
# instead of the text (~14 → ~8 MB at 100,000 quotes: docs/benchmarks.md). Exact: two names are
# equal exactly when their codes are, and a stored name the snapshot does not have casts to
# NULL (TRY_CAST), so that offer matches no quote.
_CODED_KEY = ("region", "zone", "instance_type", "pricing")


def _codes(t: str, stored: bool) -> str:
    """The codes of `t`'s key names: _snap's own, or the stored table's text cast to the types."""
    names = (f"TRY_CAST({t}.{c} AS _snap_{c})" if stored else f"{t}.{c}" for c in _CODED_KEY)
    return ", ".join(f"enum_code({n}) AS {c}_code" for n, c in zip(names, _CODED_KEY, strict=True))


def _coded_match(left: str, right: str) -> str:
    columns = (*(f"{c}_code" for c in _CODED_KEY), "term_months")
    return " AND ".join(f"{left}.{c} = {right}.{c}" for c in columns)


# Each key of the snapshot against its open interval: new, same price, or changed; and each
# open interval this run covers but did not see: vanished (a partial run closes only inside
# its complete scopes). A same-price row is rewritten (`stale`) only when an attribute moved or
# the run does not cover it (then its own last_seen must move); core.provider_coverage records
# the sighting of the others. The snapshot's side carries only the key's numbers, prices,
# availability, an attributes hash and its coverage; the key's names come from the table's side
# (a vanished key has no quote; every other key's quote has them, _CHANGES_SELECT); and only the
# keys to write are kept (at 2 % change per hour a few thousand of 100,000).
_CLASSIFY_SQL = f"""
CREATE OR REPLACE TEMP TABLE _verdicts AS
WITH classified AS (
    SELECT {", ".join(f"h.{c}" for c in _KEY_COLUMNS)},
        g.quote_index, h.first_seen AS previous_first_seen,
        CASE
            WHEN g.quote_index IS NULL THEN 'vanished'
            WHEN h.provider IS NULL THEN 'new'
            WHEN h.price_hour_original = g.node_original AND h.currency = g.currency
                AND {_AVAILABILITY} THEN 'same'
            ELSE 'changed'
        END AS change,
        NOT g.covered OR h.attributes <> g.attributes AS outdated,
        h.covered
    FROM (
        SELECT {_codes("s", stored=False)}, s.term_months, s.quote_index, s.node_original,
            s.currency, s.available, s.stock, {_SNAPSHOT_ATTRIBUTES},
            {_COVERED.format(t="s")} AS covered
        FROM _good AS s
    ) AS g
    FULL JOIN (
        SELECT {", ".join(f"h.{c}" for c in _KEY_COLUMNS)}, {_codes("h", stored=True)},
            h.provider, h.first_seen, h.price_hour_original, h.currency, h.available, h.stock,
            {_STORED_ATTRIBUTES}, {_COVERED.format(t="h")} AS covered
        FROM core.current_offers AS h
        WHERE h.provider = $provider
    ) AS h
        ON {_coded_match("h", "g")}
)
SELECT * EXCLUDE (outdated, covered), change = 'same' AND outdated AS stale FROM classified
WHERE (change <> 'vanished' OR covered) AND (change <> 'same' OR outdated)
"""
# The keys to write with every column the writes need, so they need no join with the snapshot:
# the quotes of the keys to write normalised again (the same statement as _snap's, over those
# quotes only), with the guard's verdict; then the vanished keys, which have no quote.
_WRITTEN = (*_DETAILS, "currency", "node_original", "price_basis", "available", "stock")
# Only the batch's quotes of keys to write go through the normalising joins (a few thousand of
# 100,000): the rest of the batch's table is skipped by its position.
_WANTED_QUOTES = "(SELECT * FROM _raw SEMI JOIN _verdicts USING (quote_index))"
_CHANGES_SELECT = f"""{_NORMALISE_CTES.replace("FROM _raw AS r", f"FROM {_WANTED_QUOTES} AS r")}
SELECT {", ".join(f"d.{c}" for c in _KEY_COLUMNS + _WRITTEN)}, f.flag, f.flag_reason,
    v.previous_first_seen, v.change, v.stale
FROM usd AS d JOIN _verdicts AS v ON v.quote_index = d.quote_index
LEFT JOIN _flags AS f ON f.quote_index = d.quote_index
"""
# The guard's verdicts (store.guard), for the few quotes it flagged or allowed.
_FLAGS_SQL = """
CREATE OR REPLACE TEMP TABLE _flags AS
SELECT quote_index, flag, flag_reason FROM _snap WHERE flag IS NOT NULL OR flag_reason IS NOT NULL
"""
_CHANGES_FIRST_SQL = f"CREATE OR REPLACE TEMP TABLE _changes AS {_CHANGES_SELECT}"
_CHANGES_MORE_SQL = f"INSERT INTO _changes {_CHANGES_SELECT}"
_VANISHED_SQL = f"""
INSERT INTO _changes BY NAME
SELECT {_KEYS}, previous_first_seen, change, stale FROM _verdicts WHERE change = 'vanished'
"""
_WANTED_SQL = """
SELECT quote_index FROM _verdicts WHERE quote_index >= ? AND quote_index < ? ORDER BY quote_index
"""
_CLOSING = "c.change IN ('changed', 'vanished')"

# The (region, pricing) pairs this run saw and covers: it is their latest sighting.
_SEEN_SQL = f"""
CREATE OR REPLACE TEMP TABLE _seen AS
SELECT DISTINCT region, pricing FROM _snap AS c
WHERE c.reject_reason IS NULL AND {_COVERED.format(t="c")}
"""

# Closed intervals keep the last_seen they had before this run: the later of the row's own
# and its coverage's, as core.current_intervals reads it (written out here so that only the
# closing rows are looked up).
_CLOSE_SQL = f"""
INSERT INTO core.price_closed BY NAME
SELECT h.* REPLACE (
        greatest(h.last_seen, v.last_seen) AS last_seen,
        CASE WHEN v.last_seen > h.last_seen THEN v.last_run ELSE h.last_run END AS last_run),
    $now AS valid_to
FROM core.current_offers AS h
SEMI JOIN (SELECT * FROM _changes AS c WHERE {_CLOSING}) AS c ON {_key_match("c", "h")}
LEFT JOIN core.provider_coverage AS v
    ON v.provider = h.provider AND v.region = h.region AND v.pricing = h.pricing
WHERE h.provider = $provider
"""

_DROP_CLOSED_SQL = f"""
DELETE FROM core.current_offers AS h USING _changes AS c
WHERE {_CLOSING} AND h.provider = $provider AND {_key_match("h", "c")}
"""

_TOUCH_SQL = f"""
UPDATE core.current_offers AS h SET
    last_seen = $now, last_run = $run,
    {", ".join(f"{c} = c.{c}" for c in _ATTRIBUTES)}
FROM _changes AS c
WHERE c.stale AND h.provider = $provider AND {_key_match("h", "c")}
"""

# A batch smaller than a row group is inserted in the table's storage order (store.clustering), so
# the small batches hourly ingests append stay sorted among themselves. A larger one (a first
# load) is inserted as it comes: sorting it inside the ingest's transaction runs out of the
# daemon's 128 MB at ~1M rows (the sort and the table's index both hold memory), and the fetch
# session rewrites the table in order right after (clustering.keep_clustered counts it as appended).
_OPEN_SQL = """
INSERT INTO core.current_offers BY NAME
SELECT $provider AS provider, region, zone, instance_type, pricing, gpu_model,
    gpu_name_raw, gpu_count, gpu_memory_gb, vcpus, ram_gb, price_hour_usd, price_gpu_hour_usd,
    currency, node_original AS price_hour_original, price_basis, available, stock,
    interruption_rate,
    source_url, coalesce(previous_first_seen, $now) AS first_seen, $now AS valid_from,
    $now AS last_seen, $run AS opened_run, $run AS last_run, offer_count, price_hour_median_usd,
    price_date, price_origin, price_rule, flag, flag_reason, term_months, upfront_usd, monthly_usd,
    disk_usd_gb_month, egress_usd_gb
FROM _changes WHERE change IN ('new', 'changed')
"""
_OPEN_SORTED_SQL = f"{_OPEN_SQL}ORDER BY {clustering.CLUSTER_ORDER}\n"

# This run is the latest sighting of every open interval it covers: one row per region and
# pricing instead of a write per offer (every open offer there was seen, or it was closed).
_UNCOVER_SQL = """
DELETE FROM core.provider_coverage AS v
WHERE v.provider = $provider AND ($complete OR EXISTS (
    SELECT 1 FROM _seen AS c WHERE c.region = v.region AND c.pricing = v.pricing))
"""
_COVER_SQL = (
    "INSERT INTO core.provider_coverage SELECT $provider, region, pricing, $now, $run FROM _seen"
)

_REJECTED_SQL = f"""
INSERT INTO core.rejected_quotes
SELECT $run, $provider, region, instance_type, pricing, price, currency, reject_reason
FROM _snap WHERE reject_reason IS NOT NULL LIMIT {MAX_REJECTED_SAMPLES}
"""

# Valid quotes that share a key with a cheaper one: only one can be the key's price, so the
# others are collapsed — counted in fetch_runs.offers_duplicate and sampled beside rejections,
# so that two rows a parser failed to tell apart never vanish silently. They are marked once
# (the window sorts the whole snapshot: only run when the counts found duplicates), so every
# later statement reads the same survivor of a key.
# The collapse ranks only the valid quotes of the keys that have more than one (_duplicated),
# with their tie-breaking columns read again from their quotes (_ties): a key's ranking is
# the same as over the whole snapshot, which _snap no longer carries those columns for.
_DUPLICATED_SQL = f"""
CREATE OR REPLACE TEMP TABLE _duplicated AS
SELECT quote_index FROM _snap WHERE reject_reason IS NULL
QUALIFY count(*) OVER (PARTITION BY {_KEYS}) > 1
"""
_TIES_FIRST_SQL = "CREATE OR REPLACE TEMP TABLE _ties AS "
_TIES_MORE_SQL = "INSERT INTO _ties "
# As _NORMALISE_CTES resolves gpu_name_raw.
_TIES_SQL = """
SELECT r.quote_index, coalesce(r.gpu_name_raw, r.instance_type) AS gpu_name_raw, r.source_url
FROM _raw AS r SEMI JOIN _duplicated USING (quote_index)
"""
_WANTED_DUPLICATES_SQL = """
SELECT quote_index FROM _duplicated WHERE quote_index >= ? AND quote_index < ?
ORDER BY quote_index
"""
_COLLAPSE_SQL = f"""
UPDATE _snap SET reject_reason = '{DUPLICATE_KEY}' WHERE rowid IN (
    SELECT s.rowid FROM _snap AS s JOIN _ties AS t USING (quote_index)
    WHERE s.reject_reason IS NULL
    QUALIFY row_number() OVER (
        PARTITION BY s.region, s.zone, s.instance_type, s.pricing, s.term_months
        ORDER BY s.price_hour_usd, t.gpu_name_raw, s.available DESC NULLS LAST, s.stock,
            t.source_url
    ) > 1
)
"""
_DUPLICATE_SAMPLES_SQL = f"""
INSERT INTO core.rejected_quotes
SELECT $run, $provider, region, instance_type, pricing, price, currency, reject_reason
FROM _snap WHERE reject_reason = '{DUPLICATE_KEY}' LIMIT {MAX_REJECTED_SAMPLES}
"""


def _run(con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, Any]) -> Any:
    """Execute with only the named parameters the statement uses (DuckDB refuses extras)."""
    used = {name: value for name, value in params.items() if f"${name}" in sql}
    return con.execute(sql, used)


def ingest(
    con: duckdb.DuckDBPyConnection,
    run_id: int,
    result: FetchResult,
    manifest: Manifest,
    min_offer_share: float = DEFAULT_MIN_OFFER_SHARE,
    allow_flagged: Sequence[str] = (),
    staged: StagedQuotes | None = None,
) -> IngestSummary:
    """Merge one fetch result in a single transaction and finish its fetch_runs row.
    `allow_flagged` is the config's allow-list for the offer guard (store.guard). `staged`:
    the result's quotes, already taken out of it by stage_quotes (the fetch path); without it
    each batch's table is made from the result's quotes when read, and they stay in it."""
    started = time.perf_counter()
    observed = result.finished_at or utcnow()
    if staged is None:
        staged = StagedQuotes(len(result.quotes), quotes=result.quotes)
    with transactions.atomic(con):
        counts, status, error = _merge(
            con, run_id, result, staged, manifest, observed, min_offer_share, allow_flagged
        )
        summary = _finish_run(con, run_id, result, status, error, counts, observed, started)
    # The snapshot's table, dropped inside the transaction, is kept for a rollback until COMMIT
    # frees it: its pages go back now, before the writer session's checkpoint, which otherwise
    # ran on top of them and was the ingest's peak (docs/benchmarks.md).
    allocator.return_freed_pages()
    return summary


def _merge_fx(
    con: duckdb.DuckDBPyConnection, result: FetchResult, now: Any
) -> tuple[dict[str, Any], RunStatus, str | None]:
    """Rates of an FX source: upserted by (day, currency); EUR itself is 1 per euro."""
    counts: dict[str, Any] = {"total": len(result.fx_rates), "rejected": 0, "unmapped": 0}
    if result.status not in (RunStatus.OK, RunStatus.PARTIAL):
        return counts, result.status, result.error
    valid = [r for r in result.fx_rates if r.per_eur > 0 and len(r.currency) == 3]
    counts["rejected"] = len(result.fx_rates) - len(valid)
    if not valid:
        return counts, RunStatus.FAILED, "the source returned no usable rates; nothing changed"
    rows = [(r.day, r.currency.upper(), r.per_eur, result.provider, now) for r in valid]
    rows += [(day, "EUR", 1.0, result.provider, now) for day in {r.day for r in valid}]
    con.execute("CREATE OR REPLACE TEMP TABLE _fx_new AS FROM core.fx_rates LIMIT 0")
    con.executemany("INSERT INTO _fx_new VALUES (?, ?, ?, ?, ?)", rows)
    transactions.replace_rows(con, "core.fx_rates", ["rate_date", "currency"], "_fx_new")
    counts["seen"] = counts["new"] = len(valid)
    return counts, result.status, result.error


def _merge(
    con: duckdb.DuckDBPyConnection,
    run_id: int,
    result: FetchResult,
    staged: StagedQuotes,
    manifest: Manifest,
    now: Any,
    min_offer_share: float = DEFAULT_MIN_OFFER_SHARE,
    allow_flagged: Sequence[str] = (),
) -> tuple[dict[str, int], RunStatus, str | None]:
    newer = _latest_observation(con, result.provider)
    if result.status in (RunStatus.OK, RunStatus.PARTIAL) and newer is not None and newer >= now:
        return _superseded(staged.count, newer)
    if manifest.kind == "fx":
        return _merge_fx(con, result, now)
    if manifest.kind == "api":
        return merge_api_prices(con, run_id, result, now)
    # Each large step's freed memory is returned before the next (store.allocator), so the
    # ingest's peak is its largest step, not their sum.
    _normalise(con, staged, manifest, now)
    allocator.return_freed_pages()
    params = {"provider": result.provider, "run": run_id}
    _run(con, _REJECTED_SQL, params)
    counts = _snapshot_counts(con)
    allocator.return_freed_pages()
    if counts["duplicates"]:
        _collapse(con, staged)
        _run(con, _DUPLICATE_SAMPLES_SQL, params)
    status, error = _effective_status(result, counts)
    offers = counts["total"] - counts["rejected"] - counts["duplicates"]
    if status is RunStatus.OK:
        result, status, error = _guard_drift(con, result, offers, min_offer_share, error)
    if status in (RunStatus.OK, RunStatus.PARTIAL):
        result, status, error = _check_expectations(con, result, manifest, status, error)
    if status in (RunStatus.OK, RunStatus.PARTIAL):
        placeholders = manifest.guard.placeholder_prices
        flag_offers(con, result.provider, placeholders, allow_flagged)
        allocator.return_freed_pages()
        counts |= _apply_changes(
            con, result, staged, manifest, status, params | {"now": now}, allow_flagged
        )
        counts["seen"] = offers
    return counts, status, error


# Quotes handed to DuckDB per Arrow table: staged (stage_quotes), each batch's objects are gone
# once its table is made, so objects and tables of the whole snapshot never exist at once (the
# fetch path stages). Read in place from a list its caller keeps, the batches' tables exist
# together while the snapshot is normalised (_normalise reads each twice) and one at a time
# while the quotes of the keys to write are read. Smaller batches cost more CPU for little
# memory (each batch runs the normalising statement again): at 1,000,000 quotes
# 10,000 a batch took ~50 % more CPU than one go, 50,000 ~10-20 % (docs/benchmarks.md).
HANDOFF_BATCH = 50_000


@dataclass
class _Lookups:
    """What a pass over the snapshot's batches has looked up so far, for the next batches:
    each (instance type, raw GPU name, memory)'s resolution, and the currencies the temp table
    _fx has rates for (None before the pass's first batch made it). A currency's rate depends
    only on the currency and the observation time, so a batch whose currencies _fx already has
    reads the same rates from it; only a new currency makes it again."""

    resolved: dict[tuple[Any, ...], Any] = field(default_factory=dict)
    currencies: set[str | None] | None = None


def _normalise(
    con: duckdb.DuckDBPyConnection, staged: StagedQuotes, manifest: Manifest, now: Any
) -> None:
    """The snapshot as the temp table _snap: each quote normalised, with its reject reason.
    Batch by batch, inside the ingest's transaction. Every batch's distinct values are read
    first (_snapshot_values): _snap's name types need all the snapshot's names before its
    first row is stored; each name is then resolved and each currency looked up once, for all
    batches."""
    # Each batch's table is made once for both passes: staged, they are the staged tables;
    # read in place, the batches' tables exist together while the snapshot is normalised.
    tables = [staged.table(start) for start in staged.starts()] or [quotes_table([], [])]
    known = _Lookups()
    keys = _snapshot_values(con, tables, manifest, known)
    fx_table(con, now, list(known.currencies or ()))
    resolved = resolution_table(manifest, keys, known.resolved)
    sql = _NORMALISE_FIRST_SQL
    for table in tables:
        _normalise_batch(con, table, manifest, now, sql, known, resolved)
        sql = _NORMALISE_MORE_SQL
    del tables, resolved
    con.execute(_SPOT_CHECK_SQL)


def _distinct(table: Any, con: duckdb.DuckDBPyConnection, sql: str) -> list[tuple[Any, ...]]:
    """The rows of `sql` (_DISTINCT_SQL or _SNAPSHOT_DISTINCT_SQL) over one batch's table."""
    _raw = table  # read by the statement by this name (see _normalise_batch)
    rows = con.execute(sql).fetchall()
    del _raw
    return rows


def _snapshot_values(
    con: duckdb.DuckDBPyConnection, tables: list[Any], manifest: Manifest, known: _Lookups
) -> list[tuple[Any, ...]]:
    """The snapshot's distinct resolution keys, each resolved into `known`, and its currencies
    (`known.currencies`); makes the ENUM type of each of _snap's name columns (_NAME_COLUMNS)
    from its names and the GPU models they resolve to. Only the distinct values of all batches
    are kept at once (a batch's rows repeat the others' keys: at 1,000,000 quotes, holding
    every batch's rows kept ~30 MB of Python objects)."""
    names: dict[str, set[Any]] = {column: set() for column in _NAME_COLUMNS}
    keys: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    for table in tables:
        for row in _distinct(table, con, _SNAPSHOT_DISTINCT_SQL):
            if row[4]:
                keys.setdefault(_comparable(row[:3]), row[:3])
            else:
                for column, name in zip(_QUOTE_NAMES, (row[3], *row[5:]), strict=True):
                    names[column].add(name)
    for key in keys.values():
        names["instance_type"].add(key[0])
        names["gpu_model"].add(_resolution(manifest, key, known.resolved)[3])
    known.currencies = set(names["currency"])
    for column, values in names.items():
        _name_type(con, column, sorted(values - {None}))
    return list(keys.values())


def _comparable(key: tuple[Any, ...]) -> tuple[Any, ...]:
    """`key` as DuckDB groups it: every NaN alike (NaN is not equal to itself in Python), so
    a key with a NaN memory read from two batches is one key, and one row of _resolved."""
    return tuple("NaN" if isinstance(v, float) and math.isnan(v) else v for v in key)


def _name_type(con: duckdb.DuckDBPyConnection, column: str, names: list[str]) -> None:
    """The type of one of _snap's name columns: an ENUM of `names`, written into the statement
    (doubling a quote is all a DuckDB string literal needs): made from a bound list, as from
    any query, DuckDB takes ~60 µs a name (~70 ms for a few thousand instance types), from
    literals well under a millisecond. Only names with a NUL character, which a statement's
    text cannot carry, are bound. A column without any name (all NULL, as stock often is) gets
    one name no row has: DuckDB reads no column of an ENUM type without values."""
    names = names or [""]
    create = f"CREATE OR REPLACE TEMP TYPE _snap_{column} AS ENUM"
    if any("\0" in name for name in names):
        con.execute(f"{create} (SELECT unnest(CAST(? AS VARCHAR[])))", [names])
        return
    listed = ", ".join("'" + name.replace("'", "''") + "'" for name in names)
    con.execute(f"{create} ({listed})")


def _collapse(con: duckdb.DuckDBPyConnection, staged: StagedQuotes) -> None:
    """Mark all but the first quote of each duplicated key (_COLLAPSE_SQL), the ties broken
    by columns read again from the duplicates' quotes, batch by batch of the snapshot."""
    con.execute(_DUPLICATED_SQL)
    sql = _TIES_FIRST_SQL
    for start in staged.starts():
        wanted = [
            row[0]
            for row in con.execute(
                _WANTED_DUPLICATES_SQL, [start, start + HANDOFF_BATCH]
            ).fetchall()
        ]
        if wanted:
            _read_ties(con, staged.picked(start, wanted), sql)
            sql = _TIES_MORE_SQL
    con.execute(_COLLAPSE_SQL)
    con.execute("DROP TABLE _duplicated; DROP TABLE _ties")


def _read_ties(con: duckdb.DuckDBPyConnection, table: Any, sql: str) -> None:
    _raw = table  # read by the statement by this name (see _normalise_batch)
    con.execute(sql + _TIES_SQL)
    del _raw


def _changes_table(
    con: duckdb.DuckDBPyConnection, staged: StagedQuotes, manifest: Manifest, now: Any
) -> None:
    """_changes: the quotes of the keys to write (_verdicts.quote_index), normalised again in
    full (the statement joins each batch to _verdicts), batch by batch of the snapshot; then
    the vanished keys."""
    sql = _CHANGES_FIRST_SQL
    known = _Lookups()
    for start in staged.starts():
        wanted = [
            row[0] for row in con.execute(_WANTED_SQL, [start, start + HANDOFF_BATCH]).fetchall()
        ]
        if wanted or sql is _CHANGES_FIRST_SQL:  # the first creates the table, even empty
            _normalise_batch(con, staged.picked(start, wanted), manifest, now, sql, known)
            sql = _CHANGES_MORE_SQL
    if sql is _CHANGES_FIRST_SQL:  # no quotes at all
        _normalise_batch(con, quotes_table([], []), manifest, now, sql, known)
    con.execute(_VANISHED_SQL)


def _normalise_batch(
    con: duckdb.DuckDBPyConnection,
    table: Any,
    manifest: Manifest,
    now: Any,
    sql: str,
    known: _Lookups,
    resolved: Any = None,
) -> None:
    """`sql` over one batch's `table`. `resolved`: the resolution of every name the batch
    has, with `_fx` made for its currencies (_normalise); else both are made here from the
    batch's distinct values."""
    # _raw and _resolved are read by the SQL under these names: DuckDB scans a Python
    # variable of the calling function that a query names (a replacement scan). Registering
    # them would create views, and a view dropped inside the ingest's transaction keeps its
    # Arrow data alive until COMMIT (kept for a rollback): ~12 MB at 100,000 quotes held
    # through the classification, where the ingest's memory peaks (docs/benchmarks.md).
    _raw = table
    _resolved = resolved
    if _resolved is None:
        distinct = con.execute(_DISTINCT_SQL).fetchall()
        _resolved = resolution_table(manifest, [r[:3] for r in distinct if r[4]], known.resolved)
        currencies = {r[3] for r in distinct if not r[4]}
        if known.currencies is None or not currencies <= known.currencies:
            known.currencies = currencies | (known.currencies or set())
            fx_table(con, now, list(known.currencies))
    con.execute(sql)
    del _raw, _resolved


def _latest_observation(con: duckdb.DuckDBPyConnection, provider: str) -> Any:
    row = con.execute(
        "SELECT max(observed_at) FROM core.fetch_runs "
        "WHERE provider = ? AND status IN ('ok', 'partial')",
        [provider],
    ).fetchone()
    return row[0] if row else None


def _superseded(quotes: int, newer: Any) -> tuple[dict[str, int], RunStatus, str | None]:
    """A snapshot that arrives after a later one was merged: merging it would close newer
    intervals in the past or bring back older prices, so it changes nothing."""
    counts = {"total": quotes, "rejected": 0, "unmapped": 0}
    error = f"a snapshot observed later ({newer:%Y-%m-%d %H:%M:%S} UTC) is already merged"
    return counts, RunStatus.SUPERSEDED, error + "; nothing changed"


# The valid quotes' distinct keys counted by their hash: cheaper than counting the keys
# themselves (~4 ms at 100,000 quotes), and exact whenever it finds no duplicate (equal keys
# hash alike, so as many hashes as quotes means as many keys). Otherwise the keys are counted
# exactly (_DUPLICATES_SQL): there are duplicates, or two keys' hashes collided.
_COUNTS_SQL = f"""
SELECT count(*), count(reject_reason),
    count(*) FILTER (WHERE reject_reason IS NULL AND gpu_model IS NULL),
    mode(reject_reason),
    count(*) FILTER (WHERE reject_reason IS NULL)
        - count(DISTINCT hash({_KEYS})) FILTER (WHERE reject_reason IS NULL)
FROM _snap
"""
_DUPLICATES_SQL = f"""
SELECT count(*) - count(DISTINCT ({_KEYS})) FROM _snap WHERE reject_reason IS NULL
"""


def _snapshot_counts(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    row = con.execute(_COUNTS_SQL).fetchone()
    assert row is not None
    duplicates = row[4]
    if duplicates:
        exact = con.execute(_DUPLICATES_SQL).fetchone()
        assert exact is not None
        duplicates = exact[0]
    return {
        "total": row[0],
        "rejected": row[1],
        "unmapped": row[2],
        "top_reason": row[3],
        "duplicates": duplicates,
    }


def _effective_status(result: FetchResult, counts: dict[str, Any]) -> tuple[RunStatus, str | None]:
    if result.status not in (RunStatus.OK, RunStatus.PARTIAL):
        return result.status, result.error
    total, rejected = counts["total"], counts["rejected"]
    if total == 0:
        return RunStatus.FAILED, "the source returned no offers; nothing changed"
    if rejected > MAX_REJECTED_SHARE * total:
        return RunStatus.FAILED, (
            f"{rejected} of {total} quotes rejected (mostly: {counts['top_reason']}); "
            "the source's format may have changed, nothing changed"
        )
    return result.status, result.error


def _guard_drift(
    con: duckdb.DuckDBPyConnection,
    result: FetchResult,
    offers: int,
    min_share: float,
    error: str | None,
) -> tuple[FetchResult, RunStatus, str | None]:
    """A suspiciously small snapshot of `offers` distinct valid keys becomes partial with
    nothing complete (store.drift); the result itself is changed so the run's recorded scopes
    say the same."""
    reason = drift_reason(con, result.provider, offers, min_share)
    if reason is None:
        return result, RunStatus.OK, error
    result.complete_scopes = frozenset()
    return result, RunStatus.PARTIAL, reason


def _check_expectations(
    con: duckdb.DuckDBPyConnection,
    result: FetchResult,
    manifest: Manifest,
    status: RunStatus,
    error: str | None,
) -> tuple[FetchResult, RunStatus, str | None]:
    """A snapshot that breaks the manifest's expectations (store.expectations) becomes partial
    with nothing complete, like a drifted one."""
    reason = broken_expectations(con, manifest.expect)
    if reason is None:
        return result, status, error
    result.complete_scopes = frozenset()
    return result, RunStatus.PARTIAL, "; ".join(filter(None, [error, reason]))


def _apply_changes(
    con: duckdb.DuckDBPyConnection,
    result: FetchResult,
    staged: StagedQuotes,
    manifest: Manifest,
    status: RunStatus,
    params: dict[str, Any],
    allow_flagged: Sequence[str] = (),
) -> dict[str, int]:
    params |= {"complete": status == RunStatus.OK, "scopes": sorted(result.complete_scopes)}
    con.execute(_GOOD_SQL)
    _run(con, _CLASSIFY_SQL, params)
    allocator.return_freed_pages()
    flagged = flag_jumps(con, result.provider, allow_flagged)  # small: the keys to write
    _run(con, _SEEN_SQL, params)
    con.execute(_FLAGS_SQL)
    con.execute("DROP VIEW _good; DROP TABLE _snap")
    allocator.return_freed_pages()
    _changes_table(con, staged, manifest, params["now"])
    allocator.return_freed_pages()
    row = con.execute(
        "SELECT count(*) FILTER (WHERE change = 'changed'), count(*) FILTER (WHERE change = 'new'),"
        " count(*) FILTER (WHERE change = 'vanished'), count(*) FILTER (WHERE stale) FROM _changes"
    ).fetchone()
    assert row is not None
    open_sql = _OPEN_SORTED_SQL if row[0] + row[1] < clustering.ROW_GROUP_ROWS else _OPEN_SQL
    for sql in (_CLOSE_SQL, _DROP_CLOSED_SQL, _TOUCH_SQL, open_sql, _UNCOVER_SQL, _COVER_SQL):
        if sql is not _TOUCH_SQL or row[3]:  # an UPDATE with no stale row would still scan
            _run(con, sql, params)
    # Freed at COMMIT, not held on through the writer session's closing checkpoint.
    con.execute("DROP TABLE _verdicts; DROP TABLE _flags; DROP TABLE _seen; DROP TABLE _changes")
    return {"changed": row[0], "new": row[1], "closed": row[2], "flagged": flagged}


def _finish_run(
    con: duckdb.DuckDBPyConnection,
    run_id: int,
    result: FetchResult,
    status: RunStatus,
    error: str | None,
    counts: dict[str, Any],
    observed: Any,
    started: float,
) -> IngestSummary:
    summary = IngestSummary(
        run_id=run_id,
        provider=result.provider,
        status=status,
        offers_seen=counts.get("seen", 0),
        offers_changed=counts.get("changed", 0),
        offers_new=counts.get("new", 0),
        offers_closed=counts.get("closed", 0),
        offers_rejected=counts["rejected"],
        unmapped=counts["unmapped"],
        requests=result.requests,
        bytes=result.bytes,
        error=error,
        duration_s=time.perf_counter() - started,
        offers_duplicate=counts.get("duplicates", 0),
        offers_flagged=counts.get("flagged", 0),
    )
    con.execute(
        """UPDATE core.fetch_runs SET finished_at = ?, observed_at = ?, status = ?,
               offers_seen = ?, offers_changed = ?, offers_new = ?, offers_closed = ?,
               offers_rejected = ?, unmapped = ?, http_requests = ?, http_bytes = ?, error = ?,
               complete_scopes = ?, offers_duplicate = ?, offers_flagged = ?
           WHERE run_id = ?""",
        [
            utcnow(),
            observed,
            str(status),
            summary.offers_seen,
            summary.offers_changed,
            summary.offers_new,
            summary.offers_closed,
            summary.offers_rejected,
            summary.unmapped,
            summary.requests,
            summary.bytes,
            error,
            sorted(result.complete_scopes) or None,
            summary.offers_duplicate,
            summary.offers_flagged,
            run_id,
        ],
    )
    return summary
