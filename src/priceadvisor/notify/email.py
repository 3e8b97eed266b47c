"""Email over SMTP (aiosmtplib): STARTTLS, implicit TLS or plain; auth from a secret.

Messages are multipart/alternative text + HTML (inline CSS); an optional PNG chart rides as an
inline image (multipart/related, Content-ID) that the HTML references as cid:…, so the mail
reads fine without images. The Message-ID is derived from the idempotency key alone, so a
resend (after a crash between the server's acceptance and the outbox's "sent" mark) carries the
same Message-ID and a receiving system can recognise it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from email.message import EmailMessage
from email.utils import format_datetime

from pydantic import SecretStr

from priceadvisor.config import EmailSettings
from priceadvisor.notify import DeliveryError, Message


def message_id(key: str) -> str:
    """The same key gives the same Message-ID on every send (RFC 5322 §3.6.4: unique per
    message, which one notification is however often it is resent)."""
    return f"<{hashlib.sha256(key.encode()).hexdigest()[:40]}@priceadvisor.local>"


class EmailChannel:
    name = "email"

    def __init__(self, settings: EmailSettings, password: SecretStr | None) -> None:
        self.settings = settings
        self.password = password

    def build(self, message: Message) -> EmailMessage:
        mail = EmailMessage()
        mail["Subject"] = message.subject
        mail["From"] = self.settings.sender
        mail["To"] = ", ".join(self.settings.recipients)
        mail["Date"] = format_datetime(dt.datetime.now(dt.UTC))  # "+0000": a known UTC offset
        mail["Message-ID"] = message_id(message.key)
        mail.set_content(message.text)
        mail.add_alternative(message.html, subtype="html")
        html_part = mail.get_body(preferencelist=("html",))
        assert isinstance(html_part, EmailMessage)
        for cid, png in message.images.items():
            html_part.add_related(png, maintype="image", subtype="png", cid=f"<{cid}>")
        return mail

    async def send(self, message: Message, skip: int = 0) -> None:
        if skip:  # an email is one part: already accepted
            return
        # aiosmtplib loads with the first mail: a daemon that sends none never imports it.
        import aiosmtplib  # noqa: PLC0415

        s = self.settings
        try:
            await aiosmtplib.send(
                self.build(message),
                hostname=s.host,
                port=s.port,
                use_tls=s.security == "tls",
                start_tls=s.security == "starttls",
                username=s.username,
                timeout=s.timeout,
                password=self.password.get_secret_value() if self.password else None,
            )
        except (aiosmtplib.SMTPException, OSError, TimeoutError) as exc:
            # The server's reply can echo what we sent; keep only its class and code.
            code = getattr(exc, "code", None)
            raise DeliveryError(
                f"SMTP {s.host}:{s.port}: {type(exc).__name__}" + (f" {code}" if code else "")
            ) from None
