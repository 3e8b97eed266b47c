"""Rank every current offer for every workload, set-based.

Sizing runs once per distinct (sizing inputs of a workload, GPU model, GPU count) that exists
among the offers its constraints allow — workloads that differ only in constraints share their
estimates, and later rankings in the same process reuse them. Constraints are evaluated once
per (distinct constraints, offer class), in numpy (sizing.eligibility). Offers are grouped by
(class, shape): a workload reads only the groups of the classes it allows whose shape it fits,
skips every group whose cheapest offer costs more than the cheapest offers of k other groups,
and its top k among the rest is chosen by a partition, not a sort (sizing.topk). DuckDB then
ranks the chosen few with the full tie-break, joining each to its offer and its estimate by
number. Everything runs on one DuckDB
thread (see _one_thread).

Offers are chosen by list cost (price x hours) and ranked by effective cost (sizing.effective:
billing unit and minimum, spot restarts, storage, egress). The effective cost is never below the
list cost, so the cheapest `keep x POOL` offers by list cost hold the effective top `keep`
whenever the k-th effective cost is at most their highest list cost; where it is not, the pool
grows until it is (or holds every offer).

Spot offers are eligible only for workloads with `spot_ok` (and, with `sla`, only where
`sla_allow` lets them in, as for marketplace hosts). Their interruption rate is AWS's published
one (`aws-advisor`), else one measured from the history (`measured`, store.interruption), else
an assumed 15 % (`assumed`); each advice row names its source.

Offers are ranked only while their price is fresh (store.freshness): stale ones only when asked
for, those beyond the exclusion limit never. A workload with `require_available` ranks only
offers whose source says they can be rented now. Each row carries its price's provenance
(source URL, fetched at, published or derived, freshness).

Ties in cost are broken by hourly price, then by the offer's key (provider, region, zone,
instance type, pricing), so a ranking is the same on every run.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import duckdb
import numpy as np

from priceadvisor.config import Settings, WorkloadProfile
from priceadvisor.records import TRAINING_TASKS, utcnow
from priceadvisor.sizing import effective, eligibility, estimatecache, layoutbounds, topk
from priceadvisor.sizing.estimate import (
    Estimate,
    ServingFigures,
    SizingError,
    Workload,
    estimate,
    fastest_figures,
    replicas_for,
    replicas_of,
    training_advice,
    unfit_for_certain,
)
from priceadvisor.sizing.memo import sizing_pass
from priceadvisor.sizing.workloads import to_workload
from priceadvisor.store import columns, freshness, interruption, literals, transactions
from priceadvisor.store.ids import next_id
from priceadvisor.store.literals import inline
from priceadvisor.workload import WorkloadSpec

CHECKPOINT_OVERHEAD = effective.CHECKPOINT_OVERHEAD
LOST_WORK_SHARE = effective.LOST_WORK_SHARE
DEFAULT_INTERRUPTION_RATE = 0.15
KEEP_PER_WORKLOAD = 100
# Candidates chosen by list cost per offer kept, at first (they grow by GROWTH when short).
POOL = 2
GROWTH = 4

_ESTIMATE_SCHEMA: columns.Schema = {
    "est": "int",
    "workload": "string",
    "task": "string",
    "gpu_model": "string",
    "gpu_count": "float",
    "tokens_per_s": "float",
    "hours": "float",
    "ttft_ms": "float",
    "tpot_ms": "float",
    "binding": "string",
    "uncertainty": "float",
    "replicas": "int",
}
_CHEAPEST_SCHEMA: columns.Schema = {"widx": "int", "oid": "int", "cost": "float", "est": "int"}
# What the effective costs read of each workload (its constraints on offers are read in
# numpy: sizing.eligibility).
_WORKLOAD_SCHEMA: columns.Schema = {
    "widx": "int",
    "storage_gb": "float",
    "egress_gb_per_month": "float",
    "checkpoint_minutes": "float",
    "restart_minutes": "float",
}
# What sizing reads of a profile: every field of the workload (the rest are constraints on
# offers, and replicas/monthly volume, which only count the offers a sized result needs).
_SIZING_FIELDS = set(WorkloadSpec.model_fields)


# Offers eligible for sizing (an offer's number is its rowid here), with the flat spot
# overhead serving pays (sizing.effective); a "class" of the attributes constraints look at
# and a "shape" of what sizing looks at: constraints are then evaluated once per (workload,
# class) — a few thousand pairs — and sizing once per (workload, shape), never per
# (workload, offer).
PREPARE_SQL = f"""
CREATE OR REPLACE TEMP TABLE _advice_offers AS
SELECT provider, region, zone, {eligibility.offer_class_sql("x")},
    instance_type, gpu_model, gpu_count, pricing, price_hour_usd, spot_overhead,
    available, interruption_rate, interruption_source, disk_usd_gb_month AS host_disk_usd_gb_month,
    egress_usd_gb AS host_egress_usd_gb, source_url, last_seen AS fetched_at,
    price_origin, freshness, flag_reason
FROM (
    SELECT *,
        CASE WHEN pricing = 'spot'
             THEN 1 + {CHECKPOINT_OVERHEAD} + interruption_rate * {LOST_WORK_SHARE}
             ELSE 1.0 END AS spot_overhead
    FROM (
        SELECT o.* REPLACE (
                {interruption.rate_sql("o", "m", DEFAULT_INTERRUPTION_RATE)}
                AS interruption_rate),
            {interruption.source_sql("o", "m")} AS interruption_source,
            {freshness.freshness_sql("o.last_seen", "f.interval_s", "$now")} AS freshness
        FROM offers AS o
        LEFT JOIN _measured_interruption AS m
            ON m.provider = o.provider AND m.gpu_model = o.gpu_model
            AND {interruption.USABLE}
        LEFT JOIN _fetch_intervals AS f ON f.provider = o.provider
    )
    WHERE gpu_model IS NOT NULL AND gpu_count > 0
        AND (gpu_count < 1 OR gpu_count = floor(gpu_count))
      AND pricing IN ('on_demand', 'spot')  -- market averages are not rentable offers
      AND price_origin = 'published'  -- a derived price is never what advice recommends
      AND (freshness = 'fresh' OR (freshness = 'stale' AND $include_stale))
      AND (flag IS NULL OR $include_flagged)  -- nor an offer the offer guard flagged
) AS x
"""
GROUPS_SQL = """
CREATE OR REPLACE TEMP TABLE _advice_classes AS
SELECT *, row_number() OVER () - 1 AS class_id
FROM (
    SELECT DISTINCT provider, country, continent, is_eu, pricing, gpu_count, rentable, no_sla
    FROM _advice_offers
);
CREATE OR REPLACE TEMP TABLE _advice_shapes AS
SELECT *, row_number() OVER () - 1 AS shape_id
FROM (SELECT DISTINCT gpu_model, gpu_count FROM _advice_offers);
"""

# Every offer's class and shape, by hash joins with their distinct values (no sort), and its
# list price: candidates are chosen by list cost, the effective cost's lower bound.
OFFER_COLUMNS_SQL = """
SELECT o.rowid AS oid, c.class_id, s.shape_id, o.price_hour_usd
FROM _advice_offers AS o
JOIN _advice_classes AS c ON o.provider = c.provider
    AND o.country IS NOT DISTINCT FROM c.country AND o.continent IS NOT DISTINCT FROM c.continent
    AND o.is_eu = c.is_eu AND o.pricing = c.pricing AND o.gpu_count = c.gpu_count
    AND o.rentable = c.rentable AND o.no_sla = c.no_sla
JOIN _advice_shapes AS s ON o.gpu_model = s.gpu_model AND o.gpu_count = s.gpu_count
"""

# Each candidate (`_effective`) ranked within its workload by effective cost and by list cost,
# ties broken by hourly price, then by the offer's key (provider, region, zone, instance type,
# pricing). That tie-break is one number per candidate offer (`tie`, a dense rank over the
# ~2,000 distinct offers among the ~10,000 candidates at 50 x 50k), so the two windows sort
# by two numbers instead of a price and five strings: 44 -> 35 ms for the ranking. The windows
# sort the four columns they read (`_orders`), not every column of a candidate (its terms,
# its cost's parts), which are joined back by (workload, offer), one row each: ~1.7 ms less.
RANKED_SQL = """
_ties AS (
    SELECT o.rowid AS oid, dense_rank() OVER (
            ORDER BY o.price_hour_usd, o.provider, o.region, o.zone, o.instance_type, o.pricing
        ) AS tie,
        printf('%s %s %g× %s %s', o.provider, o.region, o.gpu_count, o.gpu_model, o.pricing)
            AS label
    FROM _advice_offers AS o
    WHERE o.rowid IN (SELECT oid FROM _effective)
), _orders AS (
    SELECT c.widx, c.oid,
        row_number() OVER (PARTITION BY c.widx ORDER BY c.effective_cost, t.tie) AS rank,
        row_number() OVER (PARTITION BY c.widx ORDER BY c.list_cost, t.tie) AS list_rank
    FROM (SELECT widx, oid, effective_cost, list_cost FROM _effective) AS c
    JOIN _ties AS t ON t.oid = c.oid
), _ranked AS (
    SELECT c.*, r.rank, r.list_rank, t.label
    FROM _effective AS c
    JOIN _orders AS r ON r.widx = c.widx AND r.oid = c.oid
    JOIN _ties AS t ON t.oid = c.oid
)"""

# The effective top k per workload from its candidates (`_ranked`), each with its estimate's
# row, ordered by rank, k kept; `list_rank` is the same order by list cost, and `rank_reason`
# names the term that moved a row from one to the other (effective.REASON_SQL). Every join is
# by a number to one row.
RANK_SQL = f"""
WITH {RANKED_SQL}, _reasons AS ({effective.REASON_SQL})
SELECT e.workload, e.task, c.rank, c.list_rank,
    o.provider, o.region, o.zone, o.country, o.instance_type,
    o.gpu_model, o.gpu_count, o.pricing, o.price_hour_usd,
    CASE WHEN e.hours IS NOT NULL THEN c.effective_cost END AS cost_usd,
    CASE WHEN e.hours IS NULL THEN c.effective_cost END AS usd_per_mtok,
    CASE WHEN e.hours IS NULL
        THEN c.effective_cost * 3600 * e.tokens_per_s / 1e6 * e.replicas * 730 END AS monthly_usd,
    CASE WHEN e.hours IS NULL THEN e.replicas END AS replicas,
    c.list_cost AS list_cost_usd, c.effective_cost AS effective_cost_usd, c.terms_applied,
    r.rank_reason,
    e.tokens_per_s, e.hours, e.ttft_ms, e.tpot_ms, e.binding,
    c.effective_cost / (1 + e.uncertainty) AS low, c.effective_cost * (1 + e.uncertainty) AS high,
    c.run_overhead AS spot_overhead, $now AS computed_at, o.interruption_rate,
    o.interruption_source, o.source_url, o.fetched_at, o.price_origin, o.freshness, o.available,
    o.flag_reason
FROM _ranked AS c
JOIN _advice_offers AS o ON o.rowid = c.oid
JOIN _estimates AS e ON e.est = c.est
LEFT JOIN _reasons AS r ON r.widx = c.widx AND r.oid = c.oid
WHERE c.rank <= $keep
ORDER BY e.workload, c.rank
"""


def size_offer(
    work: Workload, tensor_parallel: int | None, gpu_model: str, gpu_count: float
) -> Estimate | None:
    """The estimate advice uses for an offer of `gpu_count` GPUs, or None when the workload
    does not run there: it does not fit, or the given tensor-parallel degree does not divide
    the GPUs (a share of one GPU holds TP 1 only)."""
    tp = tensor_parallel or 1
    if (gpu_count < 1 and tp > 1) or (gpu_count >= 1 and int(gpu_count) % tp):
        return None
    try:
        result = estimate(work, gpu_model, gpu_count, tensor_parallel if gpu_count >= 1 else None)
    except SizingError:
        return None
    return result if result.fits and result.tokens_per_s > 0 else None


def instances(profile: WorkloadProfile, work: Workload, result: Estimate | Sized) -> int:
    """Serving: offers of this kind to run, for the profile's replicas (each offer holds
    gpu_count / TP of them) or else for its monthly volume."""
    if profile.replicas:
        return math.ceil(profile.replicas / result.replicas)
    return replicas_for(work, result.tokens_per_s)


def cost_factor(profile: WorkloadProfile, result: Estimate) -> float:
    """cost = effective $/h x this: run hours for training, 1e6 / (3600 x tokens/s) serving."""
    if profile.task in TRAINING_TASKS:
        return result.hours if result.hours is not None else math.nan
    return 1e6 / (3600 * result.tokens_per_s)


# An estimate as advice uses it (what sizing.estimatecache keeps between processes).
Sized = estimatecache.Kept


# Estimates outlive one ranking: the daemon ranks again after every fetch, mostly for the same
# workloads and GPU shapes. An estimate is a pure function of the key below (the GPU catalog is
# fixed for the life of the process, the calibration scales are part of the key); the memo is
# emptied when it reaches MEMO_LIMIT entries (a few hundred bytes each). A process's first
# ranking reads what earlier processes sized from the estimate cache (sizing.estimatecache).
MEMO_LIMIT = 20_000
_memo: dict[tuple[str, str, float], Sized | None] = {}
# What the memo gives for a shape not in it (None is a shape sized that does not fit).
_UNSIZED = Sized(math.nan, (), math.nan, 0)


def sizing_key(profile: WorkloadProfile, work: Workload) -> str:
    """What sizing reads of a profile: profiles equal on it share their estimates."""
    return profile.model_dump_json(include=_SIZING_FIELDS) + repr(work.scales)


def _size(
    profile: WorkloadProfile, work: Workload, gpu_model: str, gpu_count: float
) -> Sized | None:
    if _by_figures(profile, gpu_count):
        try:
            figures = fastest_figures(work, gpu_model, int(gpu_count))
        except SizingError:
            return None  # as `size_offer`: `estimate` raises the same
        return _serving(profile, work, gpu_model, gpu_count, figures)
    return _whole_estimate(profile, work, gpu_model, gpu_count)


def _size_all(
    profile: WorkloadProfile, work: Workload, shapes: list[tuple[str, float]]
) -> list[Sized | None]:
    """`_size` of each shape; the figures of the shapes sized by the fastest layout's figures
    are found together (`layoutbounds.fastest_figures_of`: the layouts' bounds as arrays over
    the shapes' GPU models)."""
    wanted = [(model, int(count)) for model, count in shapes if _by_figures(profile, count)]
    found = layoutbounds.fastest_figures_of(work, wanted) if wanted else {}
    sized_all: list[Sized | None] = []
    for model, count in shapes:
        if not _by_figures(profile, count):
            sized_all.append(_whole_estimate(profile, work, model, count))
        elif (model, int(count)) not in found:
            sized_all.append(None)  # `fastest_figures` refuses it: as `size_offer`
        else:
            figures = found[(model, int(count))]
            sized_all.append(_serving(profile, work, model, count, figures))
    return sized_all


def _by_figures(profile: WorkloadProfile, gpu_count: float) -> bool:
    """Whether the fastest layout's figures (`fastest_figures`) give what advice keeps:
    serving on whole GPUs with the layout left to sizing."""
    whole = gpu_count >= 1 and float(gpu_count).is_integer()
    return profile.task not in TRAINING_TASKS and profile.tensor_parallel is None and whole


def _serving(
    profile: WorkloadProfile,
    work: Workload,
    gpu_model: str,
    gpu_count: float,
    figures: ServingFigures | None,
) -> Sized | None:
    if figures is not None:
        return _from_figures(figures, int(gpu_count))
    if unfit_for_certain(work, gpu_model, int(gpu_count)):
        return None
    return _whole_estimate(profile, work, gpu_model, gpu_count)


def _whole_estimate(
    profile: WorkloadProfile, work: Workload, gpu_model: str, gpu_count: float
) -> Sized | None:
    if profile.task in TRAINING_TASKS and gpu_count >= 1 and float(gpu_count).is_integer():
        return _training(profile, work, gpu_model, int(gpu_count))
    result = size_offer(work, profile.tensor_parallel, gpu_model, gpu_count)
    if result is None:
        return None
    factor = cost_factor(profile, result)
    return Sized(factor, _fields(profile, result), result.tokens_per_s, result.replicas)


def _training(profile: WorkloadProfile, work: Workload, gpu_model: str, gpus: int) -> Sized | None:
    """Training on whole GPUs from its figures alone (`training_advice`, the estimate's own
    without its notes): what `_whole_estimate` keeps of the whole estimate."""
    if gpus % (profile.tensor_parallel or 1):
        return None  # as `size_offer`
    try:
        figures = training_advice(work, gpu_model, gpus, profile.tensor_parallel)
    except SizingError:
        return None
    if not (figures.fits and figures.tokens_per_s > 0):
        return None
    hours = figures.hours
    fields = (
        gpu_model,
        float(gpus),
        figures.tokens_per_s,
        hours,
        None,
        None,
        figures.binding,
        figures.uncertainty,
    )
    factor = hours if hours is not None else math.nan  # as `cost_factor` for training
    return Sized(factor, fields, figures.tokens_per_s, replicas_of(gpus, 1, 1))


def _from_figures(figures: ServingFigures, gpus: int) -> Sized | None:
    """Serving with the layout left to sizing, from the fastest layout's figures alone (the
    estimate's own, `fastest_figures`): what `_size` keeps of the whole estimate."""
    if not figures.tokens_per_s > 0:
        return None  # as `size_offer`
    fields = (
        figures.gpu_model,
        float(gpus),
        figures.tokens_per_s,
        None,
        figures.ttft_ms,
        figures.tpot_ms,
        figures.binding,
        figures.uncertainty,
    )
    factor = 1e6 / (3600 * figures.tokens_per_s)  # as `cost_factor` for serving
    return Sized(factor, fields, figures.tokens_per_s, figures.replicas)


def _fields(profile: WorkloadProfile, result: Estimate) -> tuple[Any, ...]:
    training = profile.task in TRAINING_TASKS
    return (
        result.gpu_model,
        float(result.gpu_count),
        result.tokens_per_s,
        result.hours if training else None,
        result.ttft_ms,
        result.tpot_ms,
        result.binding,
        result.uncertainty,
    )


def _sized_shapes(
    profile: WorkloadProfile,
    work: Workload,
    shapes: list[tuple[str, float]],
    cache: Callable[[], estimatecache.Opened],
) -> tuple[list[Sized | None], bool]:
    """What advice keeps of each shape (`_size`'s, memoised per sizing key and shape), and
    whether the estimate cache was written: shapes not in the process's memo are read from the
    cache first (`cache`: its folder as the ranking found it), and what had to be sized is
    added to it (the caller tidies the cache once, `estimatecache.tidy_up`, after its
    workloads)."""
    key = sizing_key(profile, work)
    found = [_memo.get((key, *shape), _UNSIZED) for shape in shapes]  # one lookup a shape
    missing = [shape for shape, got in zip(shapes, found, strict=True) if got is _UNSIZED]
    if not missing:
        return found, False
    disk_key = estimatecache.workload_key(work, profile.tensor_parallel)
    kept = estimatecache.read(disk_key, cache())
    fresh = {shape: kept[shape] for shape in missing if shape in kept}
    unknown = [shape for shape in missing if shape not in kept]
    fresh.update(zip(unknown, _size_all(profile, work, unknown), strict=True))
    for shape in missing:
        if len(_memo) >= MEMO_LIMIT:
            _memo.clear()
        _memo[(key, *shape)] = fresh[shape]
    found = [
        fresh[shape] if got is _UNSIZED else got for shape, got in zip(shapes, found, strict=True)
    ]
    if not unknown:
        return found, False
    entries = kept | dict(zip(shapes, found, strict=True))
    estimatecache.write(disk_key, entries, tidy=False, where=cache())
    return found, True


@dataclass
class _Plan:
    """Per workload: which offer classes its constraints allow, the cost factor of every shape
    (NaN: not sized or does not fit) and the row of its estimate there, and its sizing inputs;
    per estimate row, the workload and the estimate."""

    works: list[Workload]
    eligible: topk.Bools
    factors: topk.Floats
    estimate_row: topk.Ints
    row_workload: list[int]
    row_sized: list[Sized]
    cache_written: bool = False
    # The estimate cache's folder, listed once when a workload is first not in the memo.
    cache: Callable[[], estimatecache.Opened] = field(
        default_factory=lambda: functools.cache(estimatecache.opened)
    )


def _plan(
    profiles: Sequence[WorkloadProfile],
    offers: topk.OfferColumns,
    shapes: list[tuple[str, float]],
    eligible: topk.Bools,
) -> _Plan:
    size = (len(profiles), len(shapes))
    plan = _Plan([], eligible, np.full(size, np.nan), np.full(size, -1), [], [])
    allowed = topk.allowed_shapes(offers, eligible, len(shapes))
    for widx, profile in enumerate(profiles):
        usable = np.flatnonzero(allowed[widx]).tolist()
        with sizing_pass():  # the workload's GPU counts share their layouts' figures
            _size_workload(plan, widx, profile, [(s, shapes[s]) for s in usable])
    if plan.cache_written:
        estimatecache.tidy_up()
    return plan


def _size_workload(
    plan: _Plan, widx: int, profile: WorkloadProfile, shapes: list[tuple[int, tuple[str, float]]]
) -> None:
    """The workload's cost factors and estimate rows on the shapes its constraints allow."""
    work = to_workload(profile)
    plan.works.append(work)
    found_all, written = _sized_shapes(profile, work, [shape for _, shape in shapes], plan.cache)
    plan.cache_written |= written
    fitting = [(s, found) for (s, _), found in zip(shapes, found_all, strict=True) if found]
    if fitting:
        shape_ids = [shape_id for shape_id, _ in fitting]
        first = len(plan.row_sized)
        plan.factors[widx, shape_ids] = [found.factor for _, found in fitting]
        plan.estimate_row[widx, shape_ids] = np.arange(first, first + len(fitting))
        plan.row_workload += [widx] * len(fitting)
        plan.row_sized += [found for _, found in fitting]


def _estimates_table(plan: _Plan, profiles: Sequence[WorkloadProfile], used: topk.Ints) -> Any:
    """The estimate rows that chosen offers use, a few of those sized: only these are
    completed (serving replicas) and handed to DuckDB."""
    rows = []
    # sorted(set()), not np.unique: numpy 2.3's unique imports numpy.ma (~5 ms, once a process)
    for row in sorted(set(used.tolist())):
        widx, found = plan.row_workload[row], plan.row_sized[row]
        profile, replicas = profiles[widx], None
        if profile.task not in TRAINING_TASKS:
            replicas = instances(profile, plan.works[widx], found)
        rows.append((row, profile.name, profile.task, *found.fields, replicas))
    by_column = zip(*rows, strict=True) if rows else ([] for _ in _ESTIMATE_SCHEMA)
    return columns.table(
        dict(zip(_ESTIMATE_SCHEMA, map(list, by_column), strict=True)), _ESTIMATE_SCHEMA
    )


def _shapes(con: duckdb.DuckDBPyConnection) -> list[tuple[str, float]]:
    shapes = con.execute("SELECT gpu_model, gpu_count FROM _advice_shapes ORDER BY shape_id")
    return [(str(model), float(count)) for model, count in shapes.fetchall()]


def _offer_columns(
    con: duckdb.DuckDBPyConnection, n_classes: int, n_shapes: int
) -> topk.OfferColumns:
    """Every offer's number, class, shape and list price, as numpy columns."""
    found = con.execute(OFFER_COLUMNS_SQL).fetchnumpy()
    return topk.by_group(
        found["oid"].astype(np.int64, copy=False),
        found["class_id"].astype(np.int64, copy=False),
        found["shape_id"].astype(np.int64, copy=False),
        found["price_hour_usd"].astype(np.float64, copy=False),
        n_classes,
        n_shapes,
    )


def _cheapest(
    profiles: Sequence[WorkloadProfile], offers: topk.OfferColumns, plan: _Plan, keep: int
) -> dict[str, Any]:
    """Each workload's cheapest offers: (workload, offer, cost, estimate row) columns."""
    found: dict[str, list[Any]] = {name: [] for name in _CHEAPEST_SCHEMA}
    for widx in range(len(profiles)):
        candidates, cost = topk.costs(offers, plan.eligible[widx], plan.factors[widx], keep)
        chosen, chosen_cost = topk.cheapest(candidates, cost, keep)
        found["widx"].append(np.full(len(chosen), widx))
        found["oid"].append(offers.offer_id[chosen])
        found["cost"].append(chosen_cost)
        found["est"].append(plan.estimate_row[widx, offers.shape_id[chosen]])
    # numpy columns: nanoarrow reads their buffers without copying.
    return {name: np.concatenate(arrays) for name, arrays in found.items()}


def workloads_table(profiles: Sequence[WorkloadProfile]) -> Any:
    rows = [
        {
            "widx": widx,
            "storage_gb": p.storage_gb,
            "egress_gb_per_month": p.egress_gb_per_month,
            "checkpoint_minutes": p.checkpoint_minutes,
            "restart_minutes": p.restart_minutes,
        }
        for widx, p in enumerate(profiles)
    ]
    return columns.from_rows(rows, _WORKLOAD_SCHEMA)


_TEMP_TABLES = (
    "_advice_offers",
    "_advice_classes",
    "_advice_shapes",
    "_measured_interruption",
    "_fetch_intervals",
    "_effective",
)
_VIEWS = ("_workloads", "_estimates", "_cheapest", "_billing")


@dataclass(frozen=True, slots=True)
class Options:
    """What a ranking takes beyond the workloads: each provider's fetch interval in seconds
    (freshness; the manifests' defaults for any not given) and whether stale prices rank."""

    intervals: Mapping[str, float] | None = None
    include_stale: bool = False
    include_flagged: bool = False

    @classmethod
    def of(
        cls, settings: Settings, include_stale: bool = False, include_flagged: bool = False
    ) -> Options:
        return cls(freshness.configured_intervals(settings), include_stale, include_flagged)


@contextmanager
def _prepared(
    con: duckdb.DuckDBPyConnection,
    profiles: Sequence[WorkloadProfile],
    keep: int,
    options: Options,
    now: dt.datetime,
) -> Iterator[None]:
    """Each workload's cheapest offers as `_cheapest`, their estimates as `_estimates`;
    offers the offer guard flagged only with `options.include_flagged`."""
    try:
        with _one_thread(con):
            interruption.measure(con, now)
            freshness.load_intervals(con, options.intervals)
            with _joins_as_written(con):
                values: dict[str, literals.Value] = {
                    "now": now,
                    "include_stale": options.include_stale,
                    "include_flagged": options.include_flagged,
                }
                con.execute(inline(PREPARE_SQL, values))
            con.execute(GROUPS_SQL)
            con.register("_workloads", workloads_table(profiles))
            shapes = _shapes(con)
            classes = eligibility.read_classes(con)
            eligible = eligibility.eligible_classes(classes, profiles)
            offers = _offer_columns(con, eligible.shape[1], len(shapes))
            plan = _plan(profiles, offers, shapes, eligible)
            # the classes hold every offer's provider: ~3,300 values, not ~50,000
            con.register("_billing", effective.billing_table(classes.providers()))
            _effective_candidates(con, profiles, offers, plan, keep)
            yield
    finally:
        # after the thread setting is restored: DuckDB then has the tables' memory to give
        # back when its threads change (~1 ms less at 50k offers than dropping them first)
        for view in _VIEWS:
            con.unregister(view)
        con.execute("".join(f"DROP TABLE IF EXISTS {t};" for t in _TEMP_TABLES))


def _effective_candidates(
    con: duckdb.DuckDBPyConnection,
    profiles: Sequence[WorkloadProfile],
    offers: topk.OfferColumns,
    plan: _Plan,
    keep: int,
) -> None:
    """`_effective`: each workload's cheapest candidates by list cost with their effective
    costs, enough of them to hold its effective top `keep` (see the module's docstring)."""
    pool = keep * POOL
    while True:
        cheapest = _cheapest(profiles, offers, plan, pool)
        con.register("_cheapest", columns.table(cheapest, _CHEAPEST_SCHEMA))
        con.register("_estimates", _estimates_table(plan, profiles, cheapest["est"]))
        con.execute(effective.EFFECTIVE_SQL)
        if pool >= len(offers.offer_id) or not _unsettled(con, keep, pool):
            return
        pool *= GROWTH


def _unsettled(con: duckdb.DuckDBPyConnection, keep: int, pool: int) -> int:
    statement = inline(effective.UNSETTLED_SQL, {"keep": keep, "pool": pool})
    [(count,)] = con.execute(statement).fetchall()
    return int(count)


@contextmanager
def _one_thread(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Run on one DuckDB thread, then restore the setting. The statements here are short (tens
    of milliseconds over one or two row groups of 122,880 rows at 200k offers): a second thread
    has little to share and costs CPU. Measured on 2 cores: building the offers table took
    2.7x the CPU with two threads as with one, and advise at 50 x 50k half the wall time."""
    [(threads, sealed)] = con.execute(
        "SELECT current_setting('threads'), current_setting('lock_configuration')"
    ).fetchall()
    if sealed:  # a sealed reader (the Python API ranks read-only): its settings cannot change
        yield
        return
    con.execute("SET threads = 1")
    try:
        yield
    finally:
        con.execute(f"SET threads = {int(threads)}")


@contextmanager
def _joins_as_written(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Hash joins build on their right side, as the statement writes them. The offers table
    (`PREPARE_SQL`) joins ~50k current offers to their ~560 regions; DuckDB's estimate of the
    filtered offers is a fraction of the real count, so it would build its hash table on the
    offers and probe with the regions (30 ms of the statement's 45 at 50k offers, against 1 ms
    the other way). Only the join sides change, never a row; a sealed reader keeps its plan."""
    [(sealed, disabled)] = con.execute(
        "SELECT current_setting('lock_configuration'), current_setting('disabled_optimizers')"
    ).fetchall()
    if sealed:
        yield
        return
    setting = "SET disabled_optimizers = $names"
    con.execute(inline(setting, {"names": _with_optimizer_off(disabled)}))
    try:
        yield
    finally:
        con.execute(inline(setting, {"names": str(disabled)}))


def _with_optimizer_off(disabled: str) -> str:
    """The setting's list with the build/probe-side choice added (others set are kept)."""
    names = [name.strip() for name in disabled.split(",") if name.strip()]
    return ",".join([*names, "build_side_probe_side"])


def rank(
    con: duckdb.DuckDBPyConnection,
    profiles: Sequence[WorkloadProfile],
    keep: int = KEEP_PER_WORKLOAD,
    options: Options | None = None,
) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Rank offers for the workloads without storing: (columns, rows); offers the offer guard
    flagged (with their reason in flag_reason) only with `options.include_flagged`."""
    now = utcnow()
    with _prepared(con, profiles, keep, options or Options(), now):
        cursor = con.execute(inline(RANK_SQL, {"now": now, "keep": keep}))
        names = [d[0] for d in cursor.description]
        return names, cursor.fetchall()


@transactions.retry_conflicts
def store_advice(
    con: duckdb.DuckDBPyConnection,
    profiles: Sequence[WorkloadProfile],
    keep: int = KEEP_PER_WORKLOAD,
    options: Options | None = None,
) -> int:
    """Replace core.advice with the latest ranking, in one transaction; returns rows stored.
    On a lake a refresh that loses its commit to another daemon's runs again on its rows."""
    now = utcnow()
    with _prepared(con, profiles, keep, options or Options(), now), transactions.atomic(con):
        next_id(con, "core.advice_refreshes")  # serialises refreshes on a lake (0080)
        con.execute("DELETE FROM core.advice")
        # Stored advice (read by alerts, the digest, the dashboard) never holds a flagged offer.
        stored = f"SELECT * EXCLUDE (flag_reason) FROM ({RANK_SQL})"
        inserted = inline(f"INSERT INTO core.advice BY NAME {stored}", {"now": now, "keep": keep})
        row = con.execute(inserted).fetchone()  # the rows inserted: the table's, after the DELETE
    return int(row[0]) if row else 0
