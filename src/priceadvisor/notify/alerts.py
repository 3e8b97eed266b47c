"""Alert rules with Alertmanager semantics (DESIGN §6), evaluated after each fetch cycle.

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
State and queued notifications are written in the caller's transaction, so a crash either
records both or neither: an alert is never lost nor queued twice.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass, field

import duckdb

from priceadvisor.config import AlertRule, AlertSettings
from priceadvisor.notify import Message
from priceadvisor.notify import slack as blocks


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


def failing_providers(con: duckdb.DuckDBPyConnection, runs: int) -> list[str]:
    rows = con.execute(
        """
        WITH ranked AS (
            SELECT provider, status,
                   row_number() OVER (PARTITION BY provider ORDER BY run_id DESC) AS n
            FROM core.fetch_runs WHERE status NOT IN ('running', 'skipped', 'abandoned'))
        SELECT provider FROM ranked WHERE n <= ? GROUP BY provider
        HAVING count(*) = ? AND bool_and(status = 'failed')""",
        [runs, runs],
    ).fetchall()
    return sorted(r[0] for r in rows)


def observe(
    con: duckdb.DuckDBPyConnection, rule: AlertRule, failing: list[str]
) -> list[Observation]:
    if rule.kind == "cheaper":
        return _cheaper(con, rule, failing)
    if rule.kind == "price_drop":
        return _price_drop(con, rule, failing)
    if rule.kind == "new_offer":
        return _new_offers(con, rule)
    return [
        Observation(
            "provider_failing",
            {"provider": p},
            1.0,
            condition=True,
            title=f"{p} is failing",
            lines=[f"{p}: its last runs all failed"],
        )
        for p in failing
    ]


def _cheaper(
    con: duckdb.DuckDBPyConnection, rule: AlertRule, failing: list[str]
) -> list[Observation]:
    rows = con.execute(
        """
        SELECT coalesce(cost_usd, usd_per_mtok) AS cost, task, provider, region, instance_type,
               pricing, gpu_count, gpu_model
        FROM advice WHERE workload = ? AND NOT list_contains(?, provider)
        ORDER BY rank LIMIT 5""",
        [rule.workload, failing],
    ).fetchall()
    if not rows:
        return []
    unit = "per run" if rows[0][1] not in ("serve", "batch") else "per 1M tokens"
    lines = [
        f"${c:,.4g} {unit}: {p} {r} {i} ({int(n)}x {g}, {pr})" for c, _, p, r, i, pr, n, g in rows
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


def _price_drop(
    con: duckdb.DuckDBPyConnection, rule: AlertRule, failing: list[str]
) -> list[Observation]:
    rows = con.execute(
        """
        SELECT price_gpu_hour_usd, provider, region, instance_type, pricing FROM offers
        WHERE gpu_model = ? AND (? IS NULL OR pricing = ?) AND NOT list_contains(?, provider)
          AND price_gpu_hour_usd IS NOT NULL AND price_origin = 'published'
        ORDER BY price_gpu_hour_usd LIMIT 5""",
        [rule.gpu_model, rule.pricing, rule.pricing, failing],
    ).fetchall()
    if not rows:
        return []
    labels = {"gpu_model": str(rule.gpu_model), "pricing": rule.pricing or "any"}
    lines = [f"${v:.3f}/GPU-h: {p} {r} {i} ({pr})" for v, p, r, i, pr in rows]
    return [
        Observation(
            "price_drop",
            labels,
            float(rows[0][0]),
            lines=lines,
            title=f"{rule.gpu_model} price drop",
        )
    ]


def _new_offers(con: duckdb.DuckDBPyConnection, rule: AlertRule) -> list[Observation]:
    rows = con.execute(
        """
        SELECT gpu_model, provider, region, min(price_gpu_hour_usd) FROM offers
        WHERE gpu_model IS NOT NULL AND (? IS NULL OR gpu_model = ?)
          AND (len(?) = 0 OR list_contains(?, provider))
        GROUP BY ALL ORDER BY ALL""",
        [rule.gpu_model, rule.gpu_model, rule.providers, rule.providers],
    ).fetchall()
    return [
        Observation(
            "new_offer",
            {"gpu_model": g, "provider": p, "region": r},
            1.0,
            condition=True,
            title=f"new {g} offer",
            lines=[f"{g} at {p} {r} from ${v or 0:.3f}/GPU-h"],
        )
        for g, p, r, v in rows
    ]


@dataclass(slots=True)
class Decision:
    observation: Observation
    notify: bool
    resolved: bool = False


def evaluate(
    con: duckdb.DuckDBPyConnection, settings: AlertSettings, now: dt.datetime
) -> list[Decision]:
    """Advance every alert's state one evaluation; return what should be notified."""
    failing = failing_providers(con, settings.failing_after)
    silences = _active_silences(con, now)
    decisions: list[Decision] = []
    for rule in settings.rules:
        observations = observe(con, rule, failing)
        seeded = _known(con, rule.kind)
        for obs in observations:
            muted = _silenced(obs.labels, silences)
            decisions.append(_step(con, settings, rule, obs, now, seeded, muted))
    return [d for d in decisions if d.notify]


def _known(con: duckdb.DuckDBPyConnection, rule: str) -> bool:
    row = con.execute("SELECT count(*) FROM core.alert_state WHERE rule = ?", [rule]).fetchone()
    return bool(row and row[0])


def _step(
    con: duckdb.DuckDBPyConnection,
    settings: AlertSettings,
    rule: AlertRule,
    obs: Observation,
    now: dt.datetime,
    seeded: bool,
    muted: bool,
) -> Decision:
    """One evaluation of one alert. A silenced alert keeps counting but does not fire, so it
    notifies at the first evaluation after the silence expires if it still holds."""
    row = con.execute(
        "SELECT reference, pending, firing, notified_value, last_notified_at "
        "FROM core.alert_state WHERE fingerprint = ?",
        [obs.fingerprint],
    ).fetchone()
    first = row is None
    reference: float = float(row[0]) if row else (rule.baseline or obs.value)
    pending: int = int(row[1]) if row else 0
    firing: bool = bool(row[2]) if row else False
    notified_value: float | None = row[3] if row else None
    notified_at: dt.datetime | None = row[4] if row else None
    holds, still = _conditions(rule, obs, reference, first, seeded, pending)
    decision = Decision(obs, notify=False)
    if firing:
        repeat = (
            obs.rule != "new_offer"
            and notified_at is not None
            and (now - notified_at).total_seconds() >= settings.repeat_interval
        )
        if not still:  # recovered past the hysteresis band: resolved
            firing, pending, decision.resolved = False, 0, True
            decision.notify = settings.send_resolved and not muted
            if notified_value is not None:
                reference = notified_value  # the next alert needs a drop below what was sent
        elif repeat and not muted:
            decision.notify, notified_at = True, now
    else:
        pending = pending + 1 if holds else 0
        if pending >= settings.for_fetches and not muted:
            firing, decision.notify, notified_value, notified_at = True, True, obs.value, now
    con.execute(
        "INSERT OR REPLACE INTO core.alert_state VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            obs.fingerprint,
            obs.rule,
            json.dumps(obs.labels),
            reference,
            obs.value,
            pending,
            firing,
            notified_value,
            notified_at,
            now,
        ],
    )
    return decision


def _conditions(
    rule: AlertRule, obs: Observation, reference: float, first: bool, seeded: bool, pending: int
) -> tuple[bool, bool]:
    """(holds: may fire, still: stays firing). Price rules: a drop of threshold % below the
    reference fires; the alert stays firing until the price recovers past half of it."""
    if obs.rule == "new_offer":  # new once: first seen after the rule started, then kept
        return (first and seeded) or (not first and pending > 0), True
    if obs.condition is not None:  # provider failing
        return obs.condition, obs.condition
    share = rule.threshold_pct / 100
    measurable = not first or rule.baseline is not None
    holds = measurable and obs.value <= reference * (1 - share)
    still = obs.value <= reference * (1 - share / 2)
    return holds, still


def _active_silences(con: duckdb.DuckDBPyConnection, now: dt.datetime) -> list[dict[str, str]]:
    rows = con.execute("SELECT matchers FROM core.silences WHERE expires_at > ?", [now]).fetchall()
    return [json.loads(r[0]) for r in rows]


def _silenced(labels: dict[str, str], silences: list[dict[str, str]]) -> bool:
    return any(all(labels.get(k) == v for k, v in s.items()) for s in silences)


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
    lines = [line for d in decisions for line in d.observation.lines]
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
    row = con.execute(
        "INSERT INTO core.silences (matchers, comment, created_at, expires_at) "
        "VALUES (?, ?, ?, ?) RETURNING id",
        [json.dumps(matchers), comment, now, until],
    ).fetchone()
    return int(row[0]) if row else 0


def evaluate_and_queue(
    con: duckdb.DuckDBPyConnection,
    settings: AlertSettings,
    channel_names: list[str],
    now: dt.datetime,
) -> int:
    """One transaction: advance alert state and queue its notifications together."""
    from priceadvisor.notify.outbox import enqueue  # noqa: PLC0415 - outbox imports the channels

    con.execute("BEGIN TRANSACTION")
    try:
        queued = sum(
            enqueue(con, "alert", m, channel_names)
            for m in messages(evaluate(con, settings, now), now)
        )
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return queued
