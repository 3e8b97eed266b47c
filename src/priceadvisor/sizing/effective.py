"""The effective cost of a workload run: what the provider bills, beside the list cost.

list cost = hourly price x the run's hours (training) or x the hours per 1M output tokens
(serving). The effective cost adds what the provider's billing terms (`[billing]` in its
manifest, priceadvisor.manifest.Billing) and the workload's run costs
(priceadvisor.workload.RunCosts) say a run really bills:

- spot: training pays the expected overhead of interruptions with checkpoints at Young/Daly's
  optimum interval (below); serving keeps the flat factor (checkpoints +5 %, plus half the
  interruption rate of lost work);
- training is billed in the provider's granularity and at least its minimum per start;
- storage (`storage_gb` x disk $/GB-month, at least the provider's minimum disk) and egress
  (`egress_gb_per_month` beyond the free allowance x egress $/GB), pro rata for a training run,
  per month for serving.

A term the provider's pages do not state ("unknown") is never priced as 0: it applies nothing
and the row's `terms_applied` says it is unknown. Every part only adds cost, so the list cost
is a lower bound of the effective cost — which is what lets the advisor choose candidates by
list cost and rank them by effective cost without missing any (sizing.advisor).

Young/Daly: with checkpoint time δ, mean time between interruptions M = 1/λ and restart time
R, the interval between checkpoints τ = sqrt(2δM) − δ (Daly 2006, "A higher order estimate of
the optimum checkpoint interval for restart dumps", FGCS 22(3), first order; Young 1974: τ =
sqrt(2δM)), τ = M where δ ≥ 2M; the expected wall time per unit of work is
1 + δ/τ + λ((τ + δ)/2 + R): the checkpoints, half an interval of work lost per interruption, and
the restart. The rate λ per hour comes from the offer's interruption figure: AWS's advisor
bucket is the share of instances interrupted in a month, λ = −ln(1 − f)/730; a measured or
assumed rate is the chance of losing the offer within an hour, λ = −ln(1 − p).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from priceadvisor.manifest import Billing, ManifestError, manifest
from priceadvisor.store import columns

CHECKPOINT_OVERHEAD = 0.05
LOST_WORK_SHARE = 0.5
HOURS_PER_MONTH = 730
GRANULARITY_HOURS = {
    "second": 1 / 3600,
    "minute": 1 / 60,
    "hour": 1.0,
    "day": 24.0,
    "month": float(HOURS_PER_MONTH),
}

BILLING_SCHEMA: columns.Schema = {
    "provider": "string",
    "granularity": "string",
    "granularity_h": "float",
    "minimum_h": "float",
    "disk_usd_gb_month": "float",
    "minimum_disk_gb": "float",
    "egress_usd_gb": "float",
    "egress_free_gb": "float",
}


def _known(value: Any) -> float | None:
    return None if value == "unknown" else float(value)


def billing_row(provider: str) -> dict[str, Any]:
    """A provider's billing terms as numbers, None where unknown (or no manifest at all)."""
    try:
        terms: Billing | None = manifest(provider).billing
    except ManifestError:
        terms = None
    if terms is None:
        return {name: None for name in BILLING_SCHEMA} | {"provider": provider}
    granularity = terms.granularity.value
    minimum = _known(terms.minimum_minutes.value)
    return {
        "provider": provider,
        "granularity": None if granularity == "unknown" else granularity,
        "granularity_h": GRANULARITY_HOURS.get(str(granularity)),
        "minimum_h": None if minimum is None else minimum / 60,
        "disk_usd_gb_month": _known(terms.disk_usd_per_gb_month.value),
        "minimum_disk_gb": _known(terms.minimum_disk_gb.value),
        "egress_usd_gb": _known(terms.egress_usd_per_gb.value),
        "egress_free_gb": _known(terms.egress_free_gb_month.value),
    }


def billing_table(providers: Iterable[str]) -> Any:
    """The billing terms of each of the providers (each once, in order), as an Arrow table to
    register."""
    return columns.from_rows([billing_row(p) for p in sorted(set(providers))], BILLING_SCHEMA)


def hourly_rate(rate: float, source: str) -> float:
    """Interruptions per hour from an offer's figure (see the module's docstring)."""
    per_period = -math.log(1 - min(rate, 0.99))
    return per_period / HOURS_PER_MONTH if source == "aws-advisor" else per_period


def daly_interval(checkpoint_h: float, rate_h: float) -> float:
    """Hours of work between checkpoints (Daly 2006, first order); M where δ ≥ 2M."""
    if checkpoint_h < 2 / rate_h:
        return math.sqrt(2 * checkpoint_h / rate_h) - checkpoint_h
    return 1 / rate_h


def restart_overhead(checkpoint_h: float, restart_h: float, rate_h: float) -> float:
    """Expected wall time per unit of work on spot: 1 + δ/τ + λ((τ + δ)/2 + R)."""
    if rate_h <= 0:
        return 1.0
    tau = daly_interval(checkpoint_h, rate_h)
    return 1 + checkpoint_h / tau + rate_h * ((tau + checkpoint_h) / 2 + restart_h)


def billed_hours(run_h: float, granularity_h: float | None, minimum_h: float | None) -> float:
    """A run's hours as billed: rounded up to the unit, at least the minimum; as run where the
    unit is unknown."""
    if granularity_h is None:
        return run_h
    return max(math.ceil(run_h / granularity_h - 1e-9) * granularity_h, minimum_h or 0)


# The same formulas over the chosen candidates, in SQL, in the same order of operations (the
# functions above are their reference: tests/sizing/per_row.py costs every offer with them and
# the advisor must agree to the last bit). λ: interruptions per hour.
_RATE_SQL = """CASE WHEN o.pricing <> 'spot' THEN NULL
    WHEN o.interruption_source = 'aws-advisor'
    THEN -ln(1 - least(o.interruption_rate, 0.99)) / 730
    ELSE -ln(1 - least(o.interruption_rate, 0.99)) END"""

# Terms, each a short line or NULL (nothing to say): the billing unit (training), spot, storage
# and egress. An unknown term is named, never priced.
_BILLED_TERM = """CASE WHEN NOT training THEN NULL
    WHEN granularity IS NULL
    THEN printf('billing granularity unknown: %.2f h not rounded', run_h)
    ELSE nullif(CASE WHEN rounded THEN printf('billed per %s%s: %.4g h → %.4g h',
            granularity, CASE WHEN minimum_h > 0 THEN printf(', at least %g min', minimum_h * 60)
            ELSE '' END, run_h, billed_h) ELSE '' END
        || CASE WHEN minimum_h IS NOT NULL THEN ''
            WHEN rounded THEN '; minimum per start unknown'
            ELSE printf('billed per %s; minimum per start unknown', granularity) END, '')
    END"""
_SPOT_TERM = """CASE WHEN pricing <> 'spot' THEN NULL
    WHEN training AND rate_h > 0 THEN printf(
        'spot restarts +%.1f %% (Young/Daly, τ = %d min, %s interruption rate)',
        (run_overhead - 1) * 100, round(tau_h * 60)::BIGINT, interruption_source)
    WHEN training THEN 'spot: no interruptions expected'
    ELSE printf('spot overhead +%.1f %% (flat: checkpoints 5 %% + half the %s interruption rate)',
        (run_overhead - 1) * 100, interruption_source) END"""


def _dollars(amount: str) -> str:
    """An added cost in words: cents, or two significant digits below a cent (a short run's
    storage is a fraction of a cent, never "+$0.00")."""
    cents, below = f"printf('%.2f', {amount})", f"printf('%.2g', {amount})"
    return f"CASE WHEN {amount} >= 0.01 THEN {cents} ELSE {below} END"


_STORAGE_TERM = f"""CASE WHEN storage_gb IS NULL THEN NULL
    WHEN disk_usd_gb_month IS NULL
    THEN printf('storage %g GB: disk price unknown, not counted', storage_gb)
    ELSE printf('storage %g GB × $%.4g/GB-month%s', disk_gb, disk_usd_gb_month,
            CASE WHEN host_disk THEN ' (this host''s price)' ELSE '' END)
        || CASE WHEN training THEN printf(' for %.4g h: +$%s', billed_h,
            {_dollars("storage_month * billed_h / 730")}) ELSE '' END
        || CASE WHEN minimum_disk_gb IS NULL THEN ' (minimum disk unknown)'
                WHEN minimum_disk_gb > storage_gb THEN ' (the minimum disk)' ELSE '' END
    END"""
_EGRESS_TERM = """CASE WHEN egress_gb_per_month IS NULL THEN NULL
    WHEN egress_usd_gb IS NULL
    THEN printf('egress %g GB/month: price unknown, not counted', egress_gb_per_month)
    ELSE printf('egress %g GB/month × $%.4g%s', egress_gb_per_month, egress_usd_gb,
            CASE WHEN host_egress THEN ' (this host''s price)' ELSE '' END)
        || CASE WHEN egress_free_gb IS NULL THEN ' (free allowance unknown: none assumed)'
                WHEN egress_free_gb > 0 THEN printf(' beyond %g GB free', egress_free_gb)
                ELSE '' END
    END"""

# Each chosen candidate's effective cost (`_cheapest`: workload, offer, list cost, estimate
# row), the parts it is made of and the terms that made it.
EFFECTIVE_SQL = f"""
CREATE OR REPLACE TEMP TABLE _effective AS
WITH base AS (
    SELECT c.widx, c.oid, c.est, c.cost AS list_cost, o.pricing, o.price_hour_usd,
        o.spot_overhead AS flat_overhead, o.interruption_source,
        e.hours, e.tokens_per_s, greatest(coalesce(e.replicas, 1), 1) AS replicas,
        e.hours IS NOT NULL AS training, {_RATE_SQL} AS rate_h,
        w.checkpoint_minutes / 60 AS delta_h, w.restart_minutes / 60 AS restart_h,
        w.storage_gb, w.egress_gb_per_month, b.granularity, b.granularity_h, b.minimum_h,
        coalesce(o.host_disk_usd_gb_month, b.disk_usd_gb_month) AS disk_usd_gb_month,
        o.host_disk_usd_gb_month IS NOT NULL AS host_disk, b.minimum_disk_gb,
        coalesce(o.host_egress_usd_gb, b.egress_usd_gb) AS egress_usd_gb,
        o.host_egress_usd_gb IS NOT NULL AS host_egress, b.egress_free_gb
    FROM _cheapest AS c
    JOIN _advice_offers AS o ON o.rowid = c.oid
    JOIN _estimates AS e ON e.est = c.est
    JOIN _workloads AS w ON w.widx = c.widx
    LEFT JOIN _billing AS b ON b.provider = o.provider
), spaced AS (
    SELECT *, CASE WHEN training AND rate_h > 0 THEN CASE WHEN delta_h < 2 / rate_h
        THEN sqrt(2 * delta_h / rate_h) - delta_h ELSE 1 / rate_h END END AS tau_h
    FROM base
), overhead AS (
    SELECT *, CASE WHEN pricing <> 'spot' THEN 1.0
        WHEN NOT training THEN flat_overhead
        WHEN rate_h > 0 THEN 1 + delta_h / tau_h + rate_h * ((tau_h + delta_h) / 2 + restart_h)
        ELSE 1.0 END AS run_overhead
    FROM spaced
), billed AS (
    SELECT *, hours * run_overhead AS run_h,
        CASE WHEN granularity_h IS NULL THEN hours * run_overhead
            ELSE greatest(ceil(hours * run_overhead / granularity_h - 1e-9) * granularity_h,
                coalesce(minimum_h, 0)) END AS billed_h,
        greatest(storage_gb, coalesce(minimum_disk_gb, 0)) AS disk_gb,
        disk_gb * disk_usd_gb_month AS storage_month,
        greatest(egress_gb_per_month - coalesce(egress_free_gb, 0), 0) * egress_usd_gb
            AS egress_month
    FROM overhead
), costed AS (
    -- a rounding worth a line: 0.5 % of the run or more (per-second billing adds < 1 s)
    SELECT *, billed_h - run_h >= 0.005 * run_h AS rounded,
        CASE WHEN training THEN price_hour_usd * billed_h
            + (coalesce(storage_month, 0) + coalesce(egress_month, 0)) * billed_h / 730
        ELSE list_cost * run_overhead + (coalesce(storage_month, 0) / 730
            + coalesce(egress_month, 0) / (730 * replicas)) * 1e6 / (3600 * tokens_per_s)
        END AS effective_cost,
        -- what each term adds, in the cost's unit (per run, or per 1M output tokens); NULL
        -- where the term applies but the provider's value is unknown (nothing added)
        CASE WHEN NOT training THEN 0 WHEN granularity_h IS NOT NULL
            THEN price_hour_usd * (billed_h - run_h) END AS billing_usd,
        CASE WHEN training THEN price_hour_usd * (run_h - hours)
            ELSE list_cost * (run_overhead - 1) END AS spot_usd,
        CASE WHEN storage_gb IS NULL OR disk_usd_gb_month IS NOT NULL
            THEN coalesce(storage_month, 0) * CASE WHEN training THEN billed_h / 730
                ELSE 1e6 / (730 * 3600 * tokens_per_s) END END AS storage_usd,
        CASE WHEN egress_gb_per_month IS NULL OR egress_usd_gb IS NOT NULL
            THEN coalesce(egress_month, 0) * CASE WHEN training THEN billed_h / 730
                ELSE 1e6 / (730 * replicas * 3600 * tokens_per_s) END END AS egress_usd
    FROM billed
)
SELECT widx, oid, est, list_cost, effective_cost, run_overhead,
    list_filter(list_value({_BILLED_TERM}, {_SPOT_TERM}, {_STORAGE_TERM}, {_EGRESS_TERM}),
        t -> t IS NOT NULL) AS terms_applied,
    billing_usd, spot_usd, storage_usd, egress_usd
FROM costed
"""

# The term that moved a row away from its rank by list cost. A row that rose passed rows
# cheaper by list (or one that fell was passed by rows dearer by list): its partner is the
# nearest of them in list order, and the reason is the term whose added cost differs most
# between the two in the direction of the move — e.g. storage held 200 h on 2 GPUs against
# 100 h on 4. `_ranked`: the candidates with rank, list_rank and the offer's label.
TERM_NAMES = ("billing unit", "spot restarts", "storage", "egress")
_TERM_COLUMNS = ("billing_usd", "spot_usd", "storage_usd", "egress_usd")
_GAPS = ", ".join(
    f"(coalesce(m.{c}, 0) - coalesce(p.{c}, 0)) * sign(m.rank - m.list_rank) AS gap_{i}"
    for i, c in enumerate(_TERM_COLUMNS)
)


def _added(value: str) -> str:
    """A term's added cost as the reason words it; an unknown one is said, never '+$0'."""
    return (
        f"CASE WHEN {value} IS NULL THEN 'unknown (not counted)' ELSE printf('+$%.4g', {value}) END"
    )


_PICK = " ".join(
    f"WHEN gap_{i} = greatest({', '.join(f'gap_{j}' for j in range(len(_TERM_COLUMNS)))}) "
    f"THEN {{'term': '{name}', 'here': m_{c}, 'there': p_{c}}}"
    for i, (name, c) in enumerate(zip(TERM_NAMES, _TERM_COLUMNS, strict=True))
)
# Each moved row's partner (`partner_oid`). List ranks are distinct within a workload, so the
# nearest partner in list order is one row: for a row that fell (rank > list_rank), the lowest
# list rank above its own among the rows now ranked above it; for a row that rose, the highest
# list rank below its own among the rows now ranked below it. An aggregate per row of the
# pairs on each side, not a window over every pair: a third of the ranking's cost less.
PARTNER_SQL = """
SELECT m.widx, m.oid, arg_min(p.oid, p.list_rank) AS partner_oid
FROM _ranked AS m
JOIN _ranked AS p ON p.widx = m.widx AND p.list_rank > m.list_rank AND p.rank < m.rank
WHERE m.rank > m.list_rank AND m.rank <= $keep
GROUP BY m.widx, m.oid
UNION ALL
SELECT m.widx, m.oid, arg_max(p.oid, p.list_rank) AS partner_oid
FROM _ranked AS m
JOIN _ranked AS p ON p.widx = m.widx AND p.list_rank < m.list_rank AND p.rank > m.rank
WHERE m.rank < m.list_rank AND m.rank <= $keep
GROUP BY m.widx, m.oid
"""
REASON_SQL = f"""
SELECT widx, oid, printf('list #%d → #%d: %s %s here vs %s on %s (list #%d)',
    list_rank, rank, pick.term, {_added("pick.here")}, {_added("pick.there")}, partner,
    partner_list_rank) AS rank_reason
FROM (
    SELECT *, CASE {_PICK} END AS pick
    FROM (
        SELECT m.widx, m.oid, m.rank, m.list_rank, p.label AS partner,
            p.list_rank AS partner_list_rank, {_GAPS},
            {", ".join(f"m.{c} AS m_{c}, p.{c} AS p_{c}" for c in _TERM_COLUMNS)}
        FROM ({PARTNER_SQL}) AS n
        JOIN _ranked AS m ON m.widx = n.widx AND m.oid = n.oid
        JOIN _ranked AS p ON p.widx = n.widx AND p.oid = n.partner_oid
    )
)
"""

# Workloads whose effective top k may lie outside their candidates: they hold the whole pool
# and the k-th effective cost exceeds the pool's highest list cost (an offer left out costs at
# least that much in list, so at least that much effective).
UNSETTLED_SQL = """
SELECT count(*) FROM (
    SELECT count(*) AS n, max(list_cost) AS bound,
        list_sort(list(effective_cost))[least($keep, count(*))] AS kth
    FROM _effective GROUP BY widx
) WHERE n >= $pool AND kth > bound
"""
