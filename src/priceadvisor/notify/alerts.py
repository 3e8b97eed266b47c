"""Alert rules with Prometheus Alertmanager semantics, evaluated after each fetch cycle.

Each rule yields observations: labels (the fingerprint is rule + labels), a value and the lines
that explain it. Per fingerprint the state machine is:
  - the first observation sets the reference (a configured baseline takes its place) and
    never fires;
  - the condition (value at least X % below the reference; a provider failing N runs in a row)
    must hold for `for_fetches` consecutive evaluations before the alert fires;
  - firing moves the reference to the notified value, so a price flapping back up and down to
    the same level does not alert again (hysteresis) — only a further drop does, or the same
    firing alert after `repeat_interval`;
  - silences (label matchers with an expiry) mute notification, not evaluation; a failing
    provider inhibits price alerts about its own offers (they are left out of the observation).
`api_cheaper` is a state too: it holds while self-hosting a serve workload on its best rented
offer costs less than the cheapest API for the same model (sizing.apicompare: at the workload's
monthly volume, else per token), fires only after an evaluation that found the API cheaper, and
always notifies its resolution ("the API is cheaper again"), whatever `send_resolved` says.
`available` is a state rather than a drop: it holds while a workload's ranked offers include
one its source says is rentable now, and may fire only after an evaluation that found none (the
reference is 0 then), so a workload that has always been rentable never alerts; it resolves
when the last rentable one goes away.
Only fresh prices are observed (store.freshness): stale ones when `include_stale` is set, those
past the exclusion limit never. Every line says where its price came from.
The machine runs set-based (STEP_SQL): a rule's observations go into a temporary table and
every series steps at once, so a rule over thousands of GPU/provider/region series costs a few
statements, not one per series. State and queued notifications are written in the caller's
transaction, so a crash either records both or neither: an alert is never lost nor queued twice.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import duckdb

from priceadvisor.config import AlertRule, AlertSettings, WorkloadProfile
from priceadvisor.notify import Message, list_vs_effective, provenance
from priceadvisor.notify import slack as blocks
from priceadvisor.notify.render import money
from priceadvisor.sizing import apicompare
from priceadvisor.store import freshness, transactions
from priceadvisor.store.ids import next_id


@dataclass(slots=True)
class Observation:
    rule: str
    labels: dict[str, str]
    value: float
    condition: bool | None = None  # None: a drop against the reference decides
    lines: list[str] = field(default_factory=list)
    title: str = ""

    @property
    def fingerprint(self) -> str:
        return self.rule + ":" + ",".join(f"{k}={v}" for k, v in sorted(self.labels.items()))


OBSERVATIONS_TABLE = """
CREATE OR REPLACE TEMP TABLE alert_obs (
    fingerprint VARCHAR, rule VARCHAR, labels JSON, value DOUBLE, condition BOOLEAN,
    title VARCHAR, lines VARCHAR[])"""

# One series per GPU model x provider x region; labels and fingerprint as Observation makes them.
# The price a new offer is "from" is one the provider publishes (as the digest's new offers): a
# derived price (Oracle's preemptible = half its on-demand) is no price it lists. Without a GPU
# count there is no per-GPU price: the offer's own is given, never "$0.000/GPU-h".
NEW_OFFERS_SQL = """
INSERT INTO alert_obs
SELECT 'new_offer:gpu_model=' || gpu_model || ',provider=' || provider || ',region=' || region,
    'new_offer', json_object('gpu_model', gpu_model, 'provider', provider, 'region', region),
    1.0, true, 'new ' || gpu_model || ' offer',
    [format('{} at {} {} from {} ({}, fetched {} UTC)', gpu_model, provider, region,
            CASE WHEN count(price_gpu_hour_usd) > 0
                 THEN format('${:.3f}/GPU-h', min(price_gpu_hour_usd))
                 ELSE format('${:.3f}/h per offer (GPU count unknown)', min(price_hour_usd))
            END,
            coalesce(arg_min(source_url, coalesce(price_gpu_hour_usd, price_hour_usd)),
                     'no source URL'),
            strftime(max(last_seen), '%Y-%m-%d %H:%M'))]
FROM _alert_offers
WHERE gpu_model IS NOT NULL AND ($gpu IS NULL OR gpu_model = $gpu)
  AND pricing IN ('on_demand', 'spot')  -- no market averages, no commitments
  AND price_origin = 'published'
  AND flag IS NULL  -- an offer the offer guard flagged is no news until confirmed
  AND (len($providers) = 0 OR list_contains($providers, provider))
GROUP BY gpu_model, provider, region
"""

# The state machine of the module docstring, for every observation of one rule at once.
# muted: an active silence all of whose matchers equal the alert's labels (none: all match).
STEP_SQL = """
CREATE OR REPLACE TEMP TABLE alert_next AS
WITH active AS (SELECT id, matchers FROM core.silences WHERE expires_at > $now),
wants AS (
    SELECT a.id, m.key, m.value ->> '$' AS want FROM active AS a, json_each(a.matchers) AS m),
sizes AS (
    SELECT a.id, count(w.key) AS n FROM active AS a LEFT JOIN wants AS w USING (id)
    GROUP BY a.id),
hits AS (
    SELECT o.fingerprint, w.id, count(*) AS n
    FROM alert_obs AS o JOIN wants AS w ON (o.labels ->> w.key) = w.want GROUP BY ALL),
muted AS (
    SELECT h.fingerprint FROM hits AS h JOIN sizes AS z ON h.id = z.id AND h.n = z.n
    UNION SELECT o.fingerprint FROM alert_obs AS o, sizes AS z WHERE z.n = 0),
prior AS (
    SELECT o.*, a.fingerprint IS NULL AS first,
        coalesce(a.reference, $baseline, o.value) AS reference,
        coalesce(a.pending, 0) AS pending, coalesce(a.firing, false) AS firing,
        a.notified_value, a.last_notified_at,
        o.fingerprint IN (SELECT fingerprint FROM muted) AS muted
    FROM alert_obs AS o LEFT JOIN core.alert_state AS a USING (fingerprint)),
judged AS (  -- holds: may fire; still: stays firing (half the threshold: hysteresis)
    SELECT *,
        CASE WHEN rule = 'new_offer' THEN (first AND $seeded) OR (NOT first AND pending > 0)
             WHEN rule IN ('available', 'api_cheaper')
                 THEN condition AND (pending > 0 OR reference = 0)
             WHEN condition IS NOT NULL THEN condition
             ELSE (NOT first OR $baseline IS NOT NULL) AND value <= reference * (1 - $share)
        END AS holds,
        CASE WHEN rule = 'new_offer' THEN true
             WHEN condition IS NOT NULL THEN condition
             ELSE value <= reference * (1 - $share / 2)
        END AS still
    FROM prior),
stepped AS (
    SELECT *,
        firing AND NOT still AS resolved,
        firing AND still AND rule <> 'new_offer' AND NOT muted
            AND coalesce(epoch($now - last_notified_at) >= $repeat, false) AS repeats,
        CASE WHEN holds THEN pending + 1 ELSE 0 END AS counted
    FROM judged),
decided AS (
    SELECT *, NOT firing AND counted >= $for_fetches AND NOT muted AS fires FROM stepped)
SELECT fingerprint, rule, labels,
    CASE WHEN rule IN ('available', 'api_cheaper') AND NOT condition THEN 0
         WHEN resolved THEN coalesce(notified_value, reference) ELSE reference END AS reference,
    value,
    CASE WHEN NOT firing THEN counted WHEN resolved THEN 0 ELSE pending END AS pending,
    (firing AND NOT resolved) OR fires AS firing,
    CASE WHEN fires THEN value ELSE notified_value END AS notified_value,
    CASE WHEN fires OR repeats THEN $now ELSE last_notified_at END AS last_notified_at,
    $now AS updated_at,
    fires OR repeats
        OR (resolved AND ($send_resolved OR rule = 'api_cheaper') AND NOT muted) AS notify,
    resolved, condition, title, lines
FROM decided
"""


def failing_providers(con: duckdb.DuckDBPyConnection, runs: int) -> list[str]:
    rows = con.execute(
        """
        WITH ranked AS (
            SELECT provider, status,
                   row_number() OVER (PARTITION BY provider ORDER BY run_id DESC) AS n
            FROM core.fetch_runs
            WHERE status NOT IN ('running', 'skipped', 'abandoned', 'superseded'))
        SELECT provider FROM ranked WHERE n <= ? GROUP BY provider
        HAVING count(*) = ? AND bool_and(status = 'failed')""",
        [runs, runs],
    ).fetchall()
    return sorted(r[0] for r in rows)


def observe(
    con: duckdb.DuckDBPyConnection,
    rule: AlertRule,
    failing: list[str],
    workloads: Sequence[WorkloadProfile] = (),
) -> list[Observation]:
    """The observations of a rule with a handful of series (one per workload, GPU model or
    failing provider); new_offer, one series per GPU/provider/region, stays in SQL."""
    if rule.kind == "api_cheaper":
        return _api_cheaper(con, rule, failing, workloads)
    if rule.kind == "cheaper":
        return _cheaper(con, rule, failing)
    if rule.kind == "price_drop":
        return _price_drop(con, rule, failing)
    if rule.kind == "available":
        return _available(con, rule, failing)
    return _provider_failing(con, failing)


def _provider_failing(con: duckdb.DuckDBPyConnection, failing: list[str]) -> list[Observation]:
    """One series per provider that has run: a provider fetching again is observed too (the
    condition no longer holds), so its alert resolves and a later failure alerts afresh."""
    ran = con.execute(
        "SELECT DISTINCT provider FROM core.fetch_runs"
        " WHERE status NOT IN ('running', 'skipped', 'abandoned', 'superseded') ORDER BY 1"
    ).fetchall()
    return [
        Observation(
            "provider_failing",
            {"provider": p},
            1.0 if p in failing else 0.0,
            condition=p in failing,
            title=f"{p} is failing",
            lines=[
                f"{p}: its last runs all failed"
                if p in failing
                else f"{p}: fetching again (its latest run did not fail)"
            ],
        )
        for p in sorted({r[0] for r in ran} | set(failing))
    ]


def _cheaper(
    con: duckdb.DuckDBPyConnection, rule: AlertRule, failing: list[str]
) -> list[Observation]:
    rows = con.execute(
        """
        SELECT coalesce(cost_usd, usd_per_mtok) AS cost, task, provider, region, instance_type,
               pricing, gpu_count, gpu_model, source_url, fetched_at, price_origin,
               list_cost_usd, coalesce(terms_applied, [])
        FROM advice WHERE workload = ? AND NOT list_contains(?, provider)
          AND (freshness = 'fresh' OR (freshness = 'stale' AND ?))
        ORDER BY rank LIMIT 5""",
        [rule.workload, failing, _include_stale(con)],
    ).fetchall()
    if not rows:
        return []
    unit = "per run" if rows[0][1] not in ("serve", "batch") else "per 1M output tokens"
    now = _now(con)
    lines = [
        f"{money(c)} {unit}{list_vs_effective({'cost': c, 'list_cost': lc, 'terms': t})}: "
        f"{p} {r} {i} ({n:g}x {g}, {pr}) [{provenance(p, u, at, o, now)}]"
        for c, _, p, r, i, pr, n, g, u, at, o, lc, t in rows
    ]
    return [
        Observation(
            "cheaper",
            {"workload": str(rule.workload)},
            float(rows[0][0]),
            lines=lines,
            title=f"cheaper option for {rule.workload}",
        )
    ]


def _api_cheaper(
    con: duckdb.DuckDBPyConnection,
    rule: AlertRule,
    failing: list[str],
    workloads: Sequence[WorkloadProfile],
) -> list[Observation]:
    """One series per workload: 1 while self-hosting on its best rented offer is cheaper than
    the cheapest API for its model, else 0. None while that offer's provider is failing, or
    there is nothing to compare (not serving, no API price for the model, no ranked offer)."""
    profile = next((w for w in workloads if w.name == rule.workload), None)
    found = apicompare.compare(con, profile).get(1) if profile is not None else None
    if found is None or found.self_provider in failing:
        return []
    api = f"{found.api.api_provider} {found.api.api_model_id}"
    cheaper = found.self_hosting_cheaper
    head = (
        f"self-hosting {rule.workload} is now cheaper than API {api}"
        if cheaper
        else f"API {api} is cheaper than self-hosting {rule.workload} again"
    )
    # One series per workload, not per API: when another API of the model becomes the cheapest
    # one, "self-hosting is cheaper than the cheapest API" must resolve, not leave a series of
    # the old API firing that nothing observes any more.
    return [
        Observation(
            "api_cheaper",
            {"workload": str(rule.workload)},
            1.0 if cheaper else 0.0,
            condition=cheaper,
            lines=[head, found.sentence()],
            title=f"self-hosting {rule.workload} is now cheaper than API {api}",
        )
    ]


def _price_drop(
    con: duckdb.DuckDBPyConnection, rule: AlertRule, failing: list[str]
) -> list[Observation]:
    rows = con.execute(
        """
        SELECT price_gpu_hour_usd, provider, region, instance_type, pricing, source_url,
            last_seen, price_origin
        FROM _alert_offers
        WHERE gpu_model = ? AND coalesce(pricing = ?, pricing IN ('on_demand', 'spot'))
          AND NOT list_contains(?, provider)
          AND price_gpu_hour_usd IS NOT NULL AND price_origin = 'published'
          AND flag IS NULL
        ORDER BY price_gpu_hour_usd LIMIT 5""",
        [rule.gpu_model, rule.pricing, failing],
    ).fetchall()
    if not rows:
        return []
    labels = {"gpu_model": str(rule.gpu_model), "pricing": rule.pricing or "any"}
    now = _now(con)
    lines = [
        f"${v:.3f}/GPU-h: {p} {r} {i} ({pr}) [{provenance(p, u, at, o, now)}]"
        for v, p, r, i, pr, u, at, o in rows
    ]
    return [
        Observation(
            "price_drop",
            labels,
            float(rows[0][0]),
            lines=lines,
            title=f"{rule.gpu_model} price drop",
        )
    ]


def _available(
    con: duckdb.DuckDBPyConnection, rule: AlertRule, failing: list[str]
) -> list[Observation]:
    """One series per workload: 1 while one of its ranked offers is rentable now (the source
    says `available`), else 0; the lines name the cheapest few rentable ones."""
    rows = con.execute(
        """
        SELECT a.provider, a.region, a.instance_type, a.gpu_count, a.gpu_model, a.pricing,
               a.price_hour_usd, o.stock, a.source_url, a.fetched_at, a.price_origin
        FROM advice AS a JOIN _alert_offers AS o
            ON o.provider = a.provider AND o.region = a.region
            AND o.zone IS NOT DISTINCT FROM a.zone AND o.instance_type = a.instance_type
            AND o.pricing = a.pricing
        WHERE a.workload = ? AND o.available AND NOT list_contains(?, a.provider)
        ORDER BY a.rank""",
        [rule.workload, failing],
    ).fetchall()
    now = _now(con)
    lines = [
        f"rentable now: {p} {r} {i} ({n:g}x {g}, {pr}) {money(h)}/h"
        + (f", stock {st}" if st else "")
        + f" [{provenance(p, u, at, o, now)}]"
        for p, r, i, n, g, pr, h, st, u, at, o in rows[:5]
    ]
    if not rows:
        lines = [f"{rule.workload}: no suitable offer is rentable now"]
    return [
        Observation(
            "available",
            {"workload": str(rule.workload)},
            1.0 if rows else 0.0,
            condition=bool(rows),
            lines=lines,
            title=f"a suitable GPU for {rule.workload} is rentable",
        )
    ]


# Offers alerts look at: fresh ones, and stale ones when asked for (never those past the
# exclusion limit). A view over the connection's temp tables, made once per evaluation.
_ALERT_OFFERS_SQL = f"""
CREATE OR REPLACE TEMP TABLE _alert_now AS SELECT $now::TIMESTAMP AS now, $stale AS stale;
CREATE OR REPLACE TEMP VIEW _alert_offers AS
SELECT * FROM (
    SELECT o.*, {freshness.freshness_sql("o.last_seen", "f.interval_s", "n.now")} AS freshness
    FROM offers AS o CROSS JOIN _alert_now AS n
    LEFT JOIN _fetch_intervals AS f ON f.provider = o.provider
) WHERE freshness = 'fresh' OR (freshness = 'stale' AND (SELECT stale FROM _alert_now))
"""


def _now(con: duckdb.DuckDBPyConnection) -> dt.datetime:
    [(now,)] = con.execute("SELECT now FROM _alert_now").fetchall()
    return now  # type: ignore[no-any-return]


def _include_stale(con: duckdb.DuckDBPyConnection) -> bool:
    [(stale,)] = con.execute("SELECT stale FROM _alert_now").fetchall()
    return bool(stale)


def _prepare_offers(
    con: duckdb.DuckDBPyConnection,
    settings: AlertSettings,
    now: dt.datetime,
    intervals: Mapping[str, float] | None,
) -> None:
    freshness.load_intervals(con, intervals)
    for statement in _ALERT_OFFERS_SQL.split(";"):
        if statement.strip():
            params = {
                k: v
                for k, v in {"now": now, "stale": settings.include_stale}.items()
                if f"${k}" in statement
            }
            con.execute(statement, params)


@dataclass(slots=True)
class Decision:
    observation: Observation
    notify: bool
    resolved: bool = False


def evaluate(
    con: duckdb.DuckDBPyConnection,
    settings: AlertSettings,
    now: dt.datetime,
    intervals: Mapping[str, float] | None = None,
    workloads: Sequence[WorkloadProfile] = (),
) -> list[Decision]:
    """Advance every alert's state one evaluation; return what should be notified. Set-based:
    a few statements per rule whatever its number of series (GPU x provider x region).
    `intervals`: each provider's configured fetch interval (freshness), else its manifest's;
    `workloads`: the configured workloads (api_cheaper reads their token mix and volume)."""
    failing = failing_providers(con, settings.failing_after)
    decisions: list[Decision] = []
    _prepare_offers(con, settings, now, intervals)
    try:
        for rule in settings.rules:
            seeded = _known(con, rule)
            _load_observations(con, rule, failing, workloads)
            decisions += _step(con, settings, rule, now, seeded)
            if rule.kind == "new_offer":
                _mark_watched(con, rule, now)
    finally:
        con.execute(
            "DROP TABLE IF EXISTS alert_obs; DROP TABLE IF EXISTS alert_next; "
            "DROP VIEW IF EXISTS _alert_offers; DROP TABLE IF EXISTS _alert_now; "
            "DROP TABLE IF EXISTS _fetch_intervals"
        )
    return decisions


def _known(con: duckdb.DuckDBPyConnection, rule: AlertRule) -> bool:
    """Whether this rule was evaluated before. A `new_offer` rule is, per its own scope (GPU
    model and providers): once it has watched, even over no offer at all (the first B200 is
    news), and not because another rule watched other GPUs (their offers are no news to it)."""
    if rule.kind != "new_offer":
        row = con.execute(
            "SELECT count(*) FROM core.alert_state WHERE rule = ?", [rule.kind]
        ).fetchone()
        return bool(row and row[0])
    marker, _ = _watch_marker(rule)
    row = con.execute(
        """
        SELECT count(*) FROM core.alert_state
        WHERE rule = 'new_offer' AND (fingerprint = $marker OR (
            (labels ->> 'region') IS NOT NULL  -- a series of an offer, in this rule's scope
            AND ($gpu IS NULL OR (labels ->> 'gpu_model') = $gpu)
            AND (len($providers) = 0 OR list_contains($providers, labels ->> 'provider'))))""",
        {"marker": marker, "gpu": rule.gpu_model, "providers": rule.providers},
    ).fetchone()
    return bool(row and row[0])


def _watch_marker(rule: AlertRule) -> tuple[str, dict[str, str]]:
    """The state row that says a `new_offer` rule has watched its scope: labelled with the
    scope (never a provider and region, as an offer's series is), not firing."""
    labels = {"gpu_model": rule.gpu_model or "*", "providers": ",".join(sorted(rule.providers))}
    return Observation("new_offer", labels, 0.0).fingerprint, labels


def _mark_watched(con: duckdb.DuckDBPyConnection, rule: AlertRule, now: dt.datetime) -> None:
    marker, labels = _watch_marker(rule)
    con.execute(
        "CREATE OR REPLACE TEMP TABLE alert_watch AS SELECT $marker AS fingerprint,"
        " 'new_offer' AS rule, $labels::JSON AS labels, NULL::DOUBLE AS reference,"
        " NULL::DOUBLE AS value, 0 AS pending, false AS firing, NULL::DOUBLE AS notified_value,"
        " NULL::TIMESTAMP AS last_notified_at, $now::TIMESTAMP AS updated_at",
        {"marker": marker, "labels": json.dumps(labels), "now": now},
    )
    transactions.replace_rows(con, "core.alert_state", ["fingerprint"], "alert_watch")
    con.execute("DROP TABLE alert_watch")


def _load_observations(
    con: duckdb.DuckDBPyConnection,
    rule: AlertRule,
    failing: list[str],
    workloads: Sequence[WorkloadProfile] = (),
) -> None:
    """This rule's observations into the temporary table alert_obs."""
    con.execute(OBSERVATIONS_TABLE)
    if rule.kind == "new_offer":
        con.execute(NEW_OFFERS_SQL, {"gpu": rule.gpu_model, "providers": rule.providers})
        return
    rows = [
        (o.fingerprint, o.rule, json.dumps(o.labels), o.value, o.condition, o.title, o.lines)
        for o in observe(con, rule, failing, workloads)
    ]
    if rows:
        con.executemany("INSERT INTO alert_obs VALUES (?, ?, ?, ?, ?, ?, ?)", rows)


def _step(
    con: duckdb.DuckDBPyConnection,
    settings: AlertSettings,
    rule: AlertRule,
    now: dt.datetime,
    seeded: bool,
) -> list[Decision]:
    """One evaluation of every alert of the rule: the next states (STEP_SQL), stored in one
    statement; the alerts to notify come back as decisions."""
    con.execute(
        STEP_SQL,
        {
            "now": now,
            "seeded": seeded,
            "baseline": rule.baseline,
            "share": rule.threshold_pct / 100,
            "for_fetches": settings.for_fetches,
            "repeat": settings.repeat_interval,
            "send_resolved": settings.send_resolved,
        },
    )
    transactions.replace_rows(
        con,
        "core.alert_state",
        ["fingerprint"],
        "(SELECT fingerprint, rule, labels, reference, value, pending, firing, notified_value, "
        "last_notified_at, updated_at FROM alert_next)",
    )
    rows = con.execute(
        "SELECT rule, labels, value, condition, title, lines, resolved FROM alert_next "
        "WHERE notify ORDER BY fingerprint"
    ).fetchall()
    return [
        Decision(
            Observation(r, json.loads(labels), float(v), c, list(lines), title),
            notify=True,
            resolved=bool(resolved),
        )
        for r, labels, v, c, title, lines, resolved in rows
    ]


def messages(decisions: list[Decision], now: dt.datetime) -> list[Message]:
    """One message per group: a workload, a GPU model (new offers across regions), a provider."""
    groups: dict[str, list[Decision]] = {}
    for decision in decisions:
        obs = decision.observation
        group = (
            obs.labels.get("workload")
            or obs.labels.get("gpu_model")
            or obs.labels.get("provider", obs.rule)
        )
        groups.setdefault(f"{obs.rule}:{group}", []).append(decision)
    return [_message(name, items, now) for name, items in sorted(groups.items())]


def _message(group: str, decisions: list[Decision], now: dt.datetime) -> Message:
    first = decisions[0].observation
    state = "resolved" if all(d.resolved for d in decisions) else "firing"
    subject = f"[priceadvisor] {first.title}" + (" (resolved)" if state == "resolved" else "")
    # A message that fires may carry an alert of its group that resolved: say which lines.
    mark = state == "firing"
    lines = [
        f"resolved: {line}" if mark and d.resolved else line
        for d in decisions
        for line in d.observation.lines
    ]
    text = subject + "\n\n" + "\n".join(f"- {line}" for line in lines) + "\n"
    from priceadvisor.notify.render import render  # noqa: PLC0415 - Jinja on demand

    html = render("alert.html.j2", subject=subject, lines=lines)
    digest = hashlib.sha256("|".join(d.observation.fingerprint for d in decisions).encode())
    key = f"alert:{group}:{digest.hexdigest()[:12]}:{now.isoformat()}"
    payload = blocks.paginate(
        [blocks.header(subject[:150]), *blocks.sections([blocks.escape(x) for x in lines])], subject
    )
    return Message(key=key, subject=subject, text=text, html=html, slack=payload)


def silence(
    con: duckdb.DuckDBPyConnection,
    matchers: dict[str, str],
    until: dt.datetime,
    comment: str | None,
    now: dt.datetime,
) -> int:
    """Add a silence in a transaction of its own, which also logs its id (store.ids)."""

    def insert(con: duckdb.DuckDBPyConnection) -> int:
        silence_id = next_id(con, "core.silence_ids")
        con.execute(
            "INSERT INTO core.silences (id, matchers, comment, created_at, expires_at) "
            "VALUES (?, ?, ?, ?, ?)",
            [silence_id, json.dumps(matchers), comment, now, until],
        )
        return silence_id

    return transactions.retried(con, insert)


def evaluate_and_queue(
    con: duckdb.DuckDBPyConnection,
    settings: AlertSettings,
    channel_names: list[str],
    now: dt.datetime,
    intervals: Mapping[str, float] | None = None,
    workloads: Sequence[WorkloadProfile] = (),
) -> int:
    """One transaction: advance alert state and queue its notifications together."""
    from priceadvisor.notify.outbox import enqueue_within  # noqa: PLC0415 - outbox imports the channels

    with transactions.atomic(con):
        return sum(
            enqueue_within(con, "alert", m, channel_names)
            for m in messages(evaluate(con, settings, now, intervals, workloads), now)
        )
