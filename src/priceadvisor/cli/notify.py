"""CLI commands of digests and notifications: digest, alerts test, notifications."""

from __future__ import annotations

import datetime as dt
import json
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from priceadvisor.cli.common import FormatOpt, UsageError, UserError, job_lease, out, state
from priceadvisor.cli.output import Format, render
from priceadvisor.durations import parse_duration
from priceadvisor.notify import Channel, Message
from priceadvisor.records import utcnow
from priceadvisor.store import reads
from priceadvisor.store.freshness import configured_intervals

if TYPE_CHECKING:
    from priceadvisor.config import Settings
    from priceadvisor.store.handle import Store

# The digest, alerts and delivery (HTTP, SMTP, charts, templates) are imported by the commands
# that use them: `priceadvisor prices` does not pay for them at start-up.

commands = typer.Typer()


alerts_app = typer.Typer(help="Alerts and notification channels.", no_args_is_help=True)
commands.add_typer(alerts_app, name="alerts")


@commands.command()
def digest(
    ctx: typer.Context,
    preview: Annotated[
        Path | None,
        typer.Option(help="Write digest.html, digest.txt and slack.json into this folder."),
    ] = None,
    send: Annotated[bool, typer.Option("--send", help="Queue and deliver it now.")] = False,
) -> None:
    """Build this week's digest from the database; preview it and/or send it."""
    from priceadvisor.notify import digest as digests

    if preview is None and not send:
        raise UsageError("give --preview DIR and/or --send")
    current = state(ctx)
    settings = current.settings
    with current.store.reader() as con:
        built = digests.build(con, settings, utcnow())
    message = digests.render_for(digests.with_health(built, settings, current.store), settings)
    if preview is not None:
        _write_preview(preview, message)
    if send:
        _send(ctx, "digest", message)


def _write_preview(folder: Path, message: Message) -> None:
    if folder.exists() and not folder.is_dir():
        raise UserError(f"--preview takes a folder; {folder} is a file")
    # Exactly what is sent: the images the email attaches are written beside the HTML, which
    # refers to them by file name here instead of by its Content-ID.
    html = message.html
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for cid, png in message.images.items():
            (folder / f"{cid}.png").write_bytes(png)
            html = html.replace(f'src="cid:{cid}"', f'src="{cid}.png"')
        (folder / "digest.html").write_text(html, encoding="utf-8")
        (folder / "digest.txt").write_text(message.text, encoding="utf-8")
        (folder / "slack.json").write_text(
            json.dumps(message.slack, indent=2, ensure_ascii=False), encoding="utf-8"
        )
    except OSError as exc:
        raise UserError(f"cannot write the preview into {folder}: {exc.strerror or exc}") from None
    out.print(
        f"wrote {folder / 'digest.html'}, digest.txt, slack.json"
        + "".join(f", {cid}.png" for cid in message.images)
        + f" ({len(message.slack)} Slack message(s))",
        markup=False,
        highlight=False,
    )


def _channels(settings: Settings) -> dict[str, Channel]:
    from priceadvisor.notify import outbox

    available = outbox.channels(settings)
    if not available:
        raise UserError(
            "no notification channel configured: add [notify.email] or "
            "[notify.slack] (see docs/configuration.md)"
        )
    return available


def _deliver(settings: Settings, store: Store, available: dict[str, Channel], queued: str) -> None:
    """Deliver what is due, say how it went; exit 1 when something is left to retry."""
    import asyncio

    from priceadvisor.notify import outbox

    outcomes = asyncio.run(outbox.deliver(settings, store, available))
    done = ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())) or "nothing due"
    out.print(f"{queued}; delivery: {done}")
    if outcomes.get("retry") or outcomes.get("failed"):
        raise typer.Exit(1)


def _show(ctx: typer.Context, sql: str, fmt: Format, title: str) -> None:
    with state(ctx).store.reader() as con:
        table = reads.fetch_table(con, sql)
    render(table, fmt, out, title=title)


def _send(ctx: typer.Context, kind: str, message: Message) -> None:
    from priceadvisor.notify import outbox

    current = state(ctx)
    settings, store = current.settings, current.store
    available = _channels(settings)
    # A test message is never queued by a daemon; a digest is, under the digest lease.
    with (
        _job_lease(settings, store, kind) if kind in _LEASE_ACTIVITY else nullcontext(),
        store.writer() as con,
    ):
        queued = outbox.enqueue(con, kind, message, sorted(available))
    _deliver(settings, store, available, f"queued {queued} new")


@alerts_app.command("test")
def alerts_test(ctx: typer.Context) -> None:
    """Send a test message to every configured channel."""
    now = utcnow()
    text = f"priceadvisor test message, {now:%Y-%m-%d %H:%M:%S} UTC: this channel works."
    message = Message(
        key=f"test:{now.isoformat()}",
        subject="priceadvisor test message",
        text=text,
        html=f"<p>{text}</p>",
        slack=[
            {
                "text": text,
                "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": text}}],
            }
        ],
    )
    _send(ctx, "test", message)


@commands.command()
def notifications(ctx: typer.Context, fmt: FormatOpt = Format.TABLE) -> None:
    """Alerts and digests queued, sent or failed (the outbox)."""
    _show(ctx, "SELECT * FROM notifications ORDER BY id DESC LIMIT 50", fmt, "Notifications")


@alerts_app.command("evaluate")
def alerts_evaluate(ctx: typer.Context) -> None:
    """Evaluate the alert rules against the current data now, and deliver what fires."""
    from priceadvisor.notify import alerts

    current = state(ctx)
    settings, store = current.settings, current.store
    if not settings.alerts.rules:
        raise UserError("no alert rules configured: add [[alerts.rules]] to the config")
    available = _channels(settings)
    with _job_lease(settings, store, "alerts"), store.writer() as con:
        queued = alerts.evaluate_and_queue(
            con,
            settings.alerts,
            sorted(available),
            utcnow(),
            configured_intervals(settings),
            settings.workloads,
        )
    _deliver(settings, store, available, f"{queued} alert notification(s) queued")


# What a job's lease holder is doing, for the error a manual run gets while it is held.
_LEASE_ACTIVITY = {"alerts": "is evaluating alerts", "digest": "has queued this digest"}


def _job_lease(settings: Settings, store: Store, job: str) -> AbstractContextManager[None]:
    """On a lake two evaluations (or two digests) at once could queue one notification twice:
    the command holds the daemons' lease while it queues."""
    return job_lease(settings, store, job, _LEASE_ACTIVITY[job])


@alerts_app.command("list")
def alerts_list(ctx: typer.Context, fmt: FormatOpt = Format.TABLE) -> None:
    """Every alert's state: firing, pending count, reference and latest value."""
    _show(ctx, "SELECT * FROM alerts ORDER BY firing DESC, fingerprint", fmt, "Alerts")


silence_app = typer.Typer(help="Mute alerts matching labels until an expiry.", no_args_is_help=True)
alerts_app.add_typer(silence_app, name="silence")


@silence_app.command("add")
def silence_add(
    ctx: typer.Context,
    match: Annotated[list[str], typer.Option(help="label=value; repeat for several.")],
    duration: Annotated[str, typer.Option(help="e.g. 2h, 1d.")] = "1d",
    comment: Annotated[str | None, typer.Option()] = None,
) -> None:
    """Silence alerts whose labels match every given label=value."""
    from priceadvisor.notify import alerts

    matchers = {}
    for item in match:
        label, sep, value = item.partition("=")
        if not sep or not label or not value:
            raise UsageError(f"--match takes label=value, got {item!r}")
        matchers[label] = value
    try:
        seconds = parse_duration(duration)
    except ValueError as exc:
        raise UsageError(f"--duration: {exc}") from None
    now = utcnow()
    with state(ctx).store.writer() as con:
        silence_id = alerts.silence(
            con, matchers, now + dt.timedelta(seconds=seconds), comment, now
        )
    out.print(
        f"silence {silence_id} until {now + dt.timedelta(seconds=seconds):%Y-%m-%d %H:%M} UTC"
    )


@silence_app.command("list")
def silence_list(ctx: typer.Context, fmt: FormatOpt = Format.TABLE) -> None:
    """Silences, active and expired."""
    _show(ctx, "SELECT * FROM silences ORDER BY id DESC", fmt, "Silences")


@silence_app.command("rm")
def silence_rm(ctx: typer.Context, silence_id: Annotated[int, typer.Argument()]) -> None:
    """Remove a silence."""
    with state(ctx).store.writer() as con:
        row = con.execute("DELETE FROM core.silences WHERE id = ?", [silence_id]).fetchone()
    if not row or not row[0]:  # the count of rows deleted
        raise UserError(f"no silence {silence_id}")
    out.print(f"silence {silence_id} removed")
