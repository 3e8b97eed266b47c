"""Digests and their delivery, against real peers: an SMTP server (aiosmtpd) and an HTTP server
standing in for the Slack webhook, both on 127.0.0.1."""

from __future__ import annotations

import email
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from email.header import decode_header, make_header
from email.message import Message as MimeMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

from priceadvisor.cli.app import main
from priceadvisor.notify.slack import MAX_BLOCKS, MAX_SECTION_CHARS, paginate, sections
from priceadvisor.records import RawQuote, utcnow
from priceadvisor.store import connections, leases
from tests.conftest import cli, ingest_quotes, query

SECRET = "hunter2-SMTP-PASSWORD"
EVIL = "<!channel> <script>alert(1)</script> & co"


@pytest.fixture
def database(db_path: Path) -> Path:
    """Recorded offers plus one offer whose instance type is hostile markup."""
    with pytest.raises(SystemExit):
        main(["--db", str(db_path), "fetch", "--offline", "-p", "azure", "-p", "oracle"])
    quotes = [
        RawQuote(
            region="eastus",
            instance_type=EVIL,
            pricing="on_demand",
            price=1.0,
            gpu_name_raw="H100 SXM",
            gpu_count=1.0,
        )
    ]
    ingest_quotes(db_path, "lambda", quotes)
    with connections.writer(db_path) as con:
        # a week ago the hostile offer cost twice as much: it becomes a mover
        con.execute(
            "UPDATE core.current_offers SET valid_from = now()::TIMESTAMP - "
            "INTERVAL 3 DAY WHERE provider = 'lambda'"
        )
        con.execute("""INSERT INTO core.price_closed BY NAME
            SELECT * REPLACE (price_hour_usd * 2 AS price_hour_usd,
                              price_hour_original * 2 AS price_hour_original,
                              now()::TIMESTAMP - INTERVAL 30 DAY AS valid_from,
                              valid_from AS valid_to)
            FROM core.price_intervals WHERE provider = 'lambda'""")
    return db_path


def test_preview_writes_html_text_and_slack(
    capsys: pytest.CaptureFixture[str], database: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    code, _, err = cli(capsys, "--db", str(database), "digest", "--preview", str(out))
    assert code == 0, err
    html = (out / "digest.html").read_text()
    text = (out / "digest.txt").read_text()
    payloads = json.loads((out / "slack.json").read_text())
    assert "<table" in html and "Cheapest $/GPU-hour" in html and "Data health" in html
    assert "<script>" not in html and "&lt;script&gt;" in html  # autoescaped
    assert "Biggest movers" in html and "BIGGEST MOVERS" in text and EVIL in text
    assert any(ch in text for ch in "▁▂▃▄▅▆▇█")  # sparklines
    slack_text = json.dumps(payloads)
    assert "<!channel>" not in slack_text and "&lt;!channel&gt;" in slack_text
    for payload in payloads:
        assert len(payload["blocks"]) <= MAX_BLOCKS
        assert all(
            len(b["text"]["text"]) <= MAX_SECTION_CHARS
            for b in payload["blocks"]
            if b["type"] == "section"
        )


def test_long_digests_split_within_slack_limits() -> None:
    lines = [f"line {i} " + "x" * 200 for i in range(2000)]
    payloads = paginate(
        [{"type": "header", "text": {"type": "plain_text", "text": "h"}}, *sections(lines)],
        "digest",
    )
    assert len(payloads) > 1
    assert all(len(p["blocks"]) <= MAX_BLOCKS for p in payloads)
    texts = [b["text"]["text"] for p in payloads for b in p["blocks"] if b["type"] == "section"]
    assert all(len(t) <= MAX_SECTION_CHARS for t in texts)
    assert "\n".join(texts).count("line ") == 2000  # nothing lost in the split
    assert payloads[1]["text"].endswith(f"(2/{len(payloads)})")


# --- a real SMTP server -----------------------------------------------------------------------


class Inbox:
    def __init__(self) -> None:
        self.messages: list[tuple[list[str], MimeMessage, bytes]] = []
        self.logins: list[tuple[bytes, bytes]] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        raw = envelope.original_content or envelope.content
        self.messages.append((list(envelope.rcpt_tos), email.message_from_bytes(raw), raw))
        return "250 OK"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def smtp_server(port: int, inbox: Inbox) -> Iterator[None]:
    def authenticate(
        server: Any, session: Any, envelope: Any, mechanism: str, auth: Any
    ) -> AuthResult:
        assert isinstance(auth, LoginPassword)
        inbox.logins.append((auth.login, auth.password))
        return AuthResult(success=auth.password == SECRET.encode())

    controller = Controller(
        inbox, hostname="127.0.0.1", port=port, authenticator=authenticate, auth_require_tls=False
    )
    controller.start()
    try:
        yield
    finally:
        controller.stop()


def email_config(tmp_path: Path, port: int) -> Path:
    path = tmp_path / "notify.toml"
    path.write_text(f"""
[notify]
retry_base = "1s"
retry_max = "1s"
[notify.email]
host = "127.0.0.1"
port = {port}
security = "none"
username = "alerts"
sender = "priceadvisor@example.com"
recipients = ["ml-infra@example.com", "finops@example.com"]
timeout = "5s"
""")
    return path


def notifications(db: Path) -> list[tuple[Any, ...]]:
    return query(db, "SELECT channel, status, attempts, last_error FROM notifications")


def test_email_digest_multipart_to_every_recipient_without_secrets(
    capsys: pytest.CaptureFixture[str],
    database: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PRICEADVISOR_SMTP_PASSWORD", SECRET)
    port, inbox = free_port(), Inbox()
    with smtp_server(port, inbox):
        code, out, err = cli(
            capsys,
            "--config",
            str(email_config(tmp_path, port)),
            "--db",
            str(database),
            "digest",
            "--send",
        )
    assert code == 0, err
    [(recipients, mail, raw)] = inbox.messages
    assert sorted(recipients) == ["finops@example.com", "ml-infra@example.com"]
    subject = str(make_header(decode_header(mail["Subject"])))
    assert subject.startswith("H100-SXM-80GB at lambda eastus -50.0%")  # what changed, first
    assert " · GPU prices " in subject
    assert mail["Date"].endswith("+0000")
    assert mail.is_multipart()
    types = [part.get_content_type() for part in mail.walk()]
    assert "text/plain" in types and "text/html" in types
    assert inbox.logins == [(b"alerts", SECRET.encode())]
    assert SECRET.encode() not in raw and SECRET not in out + err
    assert SECRET.encode() not in database.read_bytes()
    assert notifications(database) == [("email", "sent", 1, None)]


def test_smtp_outage_then_recovery_delivers_exactly_once(
    capsys: pytest.CaptureFixture[str],
    database: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PRICEADVISOR_SMTP_PASSWORD", SECRET)
    port = free_port()
    config = email_config(tmp_path, port)
    args = ["--config", str(config), "--db", str(database), "digest", "--send"]
    for _ in range(2):  # down for two runs; each run is a fresh process state (a restart)
        code, _, _ = cli(capsys, *args)
        assert code == 1
        time.sleep(1.1)  # past the 1 s backoff
    [(channel, status, attempts, error)] = notifications(database)
    assert (channel, status, attempts) == ("email", "queued", 2)
    assert "SMTP 127.0.0.1" in error and SECRET not in error
    inbox = Inbox()
    with smtp_server(port, inbox):
        code, _, err = cli(capsys, *args)
        assert code == 0, err
        code, out, _ = cli(capsys, *args)  # the same week's digest again: nothing new
        assert code == 0 and "queued 0 new" in out
    assert len(inbox.messages) == 1
    assert notifications(database) == [("email", "sent", 3, None)]


# --- a local HTTP server as the Slack webhook -------------------------------------------------


class Webhook:
    """A local webhook. `script` says how to answer each POST in turn (the last one repeats):
    "ok", "429" (with Retry-After), "500", "hang" (answer nothing until `hang` seconds pass),
    "close" (close the connection after reading the body), "redirect" (302 to itself)."""

    def __init__(
        self,
        fail_first: int = 0,
        script: list[str] | None = None,
        on_post: Callable[[], None] | None = None,
        hang: float = 3.0,
    ) -> None:
        self.script = script or ["429"] * fail_first + ["ok"]
        self.on_post = on_post
        self.hang = hang
        self.received: list[dict[str, Any]] = []  # every POST body that reached the server
        self.posts: list[dict[str, Any]] = []  # the ones answered 200: delivered
        self.answers: list[int] = []

    def next_mode(self) -> str:
        return self.script[min(len(self.received) - 1, len(self.script) - 1)]


@contextmanager
def webhook_server(hook: Webhook) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            hook.received.append(body)
            mode = hook.next_mode()
            if mode == "ok" and hook.on_post:
                hook.on_post()
            if mode in ("hang", "close"):
                time.sleep(hook.hang if mode == "hang" else 0)
                self.close_connection = True
                return
            status = {"ok": 200, "429": 429, "500": 500, "redirect": 302}[mode]
            if status == 200:
                hook.posts.append(body)
            hook.answers.append(status)
            self.send_response(status)
            if status == 429:
                self.send_header("Retry-After", "1")
            if status == 302:
                self.send_header("Location", self.path)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/services/T000/B000/SECRETPATH"
    finally:
        server.shutdown()
        server.server_close()


def test_slack_429_then_success_delivers_once_escaped(
    capsys: pytest.CaptureFixture[str],
    database: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hook = Webhook(fail_first=1)
    with webhook_server(hook) as url:
        monkeypatch.setenv("SLACK_WEBHOOK_URL", url)
        config = tmp_path / "slack.toml"
        config.write_text("[notify.slack]\n")
        code, out, err = cli(
            capsys, "--config", str(config), "--db", str(database), "digest", "--send"
        )
    assert code == 0, err
    assert hook.answers == [429, 200] and len(hook.posts) == 1
    payload = json.dumps(hook.posts[0])
    assert "<!channel>" not in payload and "&lt;!channel&gt;" in payload
    assert len(hook.posts[0]["blocks"]) <= MAX_BLOCKS
    assert "SECRETPATH" not in out + err
    assert notifications(database) == [("slack", "sent", 1, None)]


def test_manual_digest_send_takes_its_turn_behind_a_daemons_digest_lease(
    capsys: pytest.CaptureFixture[str],
    database: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A daemon that queued this week's digest keeps the digest lease: a manual `digest --send`
    at the same moment (on a lake it could queue it twice) is refused in one line, and once
    the lease is free it sends and gives the lease back."""
    hook = Webhook(fail_first=0)
    with webhook_server(hook) as url:
        monkeypatch.setenv("SLACK_WEBHOOK_URL", url)
        config = tmp_path / "slack.toml"
        config.write_text('lock_timeout = "1s"\n[notify.slack]\n')
        args = ["--config", str(config), "--db", str(database), "digest", "--send"]
        with connections.writer(database) as con:
            assert leases.acquire(con, "digest", "other-host:42:abc", 600, utcnow())
        code, _, err = cli(capsys, *args)
        assert code == 1 and "other-host:42:abc has queued this digest" in err
        assert len(err.strip().splitlines()) == 1 and hook.posts == []
        with connections.writer(database) as con:
            assert leases.release(con, "digest", "other-host:42:abc", utcnow())
        code, _, err = cli(capsys, *args)
    assert code == 0, err
    assert len(hook.posts) == 1
    with connections.reader(database) as con:
        assert leases.current(con, "digest")[0] is None


def test_alerts_test_reaches_every_channel_and_unconfigured_is_an_error(
    capsys: pytest.CaptureFixture[str],
    database: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    code, _, err = cli(capsys, "--db", str(database), "alerts", "test")
    assert code == 1 and "no notification channel configured" in err
    hook = Webhook(fail_first=0)
    with webhook_server(hook) as url:
        monkeypatch.setenv("SLACK_WEBHOOK_URL", url)
        config = tmp_path / "slack.toml"
        config.write_text("[notify.slack]\n")
        code, _, _ = cli(capsys, "--config", str(config), "--db", str(database), "alerts", "test")
    assert code == 0 and "test message" in json.dumps(hook.posts)


def test_email_with_inline_chart_references_its_cid(
    capsys: pytest.CaptureFixture[str],
    database: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PRICEADVISOR_SMTP_PASSWORD", SECRET)
    port, inbox = free_port(), Inbox()
    config = email_config(tmp_path, port)
    config.write_text(config.read_text() + "chart = true\n")
    with smtp_server(port, inbox):
        code, _, err = cli(
            capsys, "--config", str(config), "--db", str(database), "digest", "--send"
        )
    assert code == 0, err
    [(_, mail, _)] = inbox.messages
    images = [p for p in mail.walk() if p.get_content_type() == "image/png"]
    [image] = images
    assert image["Content-ID"] == "<price-chart>"
    assert image.get_payload(decode=True).startswith(b"\x89PNG")
    html = next(p for p in mail.walk() if p.get_content_type() == "text/html")
    assert 'src="cid:price-chart"' in html.get_payload(decode=True).decode()
    assert any(p.get_content_type() == "text/plain" for p in mail.walk())  # readable without
