"""Email over SMTP (aiosmtplib): STARTTLS, implicit TLS or plain; auth from a secret.

Messages are multipart/alternative text + HTML (inline CSS); an optional PNG chart rides as an
inline image (multipart/related, Content-ID) that the HTML references as cid:…, so the mail
reads fine without images. The Message-ID is derived from the idempotency key, so a receiving
system can recognise a resend.
"""

from __future__ import annotations

from email.message import EmailMessage
from email.utils import formatdate, make_msgid

import aiosmtplib
from pydantic import SecretStr

from priceadvisor.config import EmailSettings
from priceadvisor.notify import DeliveryError, Message


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
        mail["Date"] = formatdate(localtime=False)
        mail["Message-ID"] = make_msgid(
            idstring=message.key.replace(":", "."), domain="priceadvisor.local"
        )
        mail.set_content(message.text)
        mail.add_alternative(message.html, subtype="html")
        html_part = mail.get_body(preferencelist=("html",))
        assert isinstance(html_part, EmailMessage)
        for cid, png in message.images.items():
            html_part.add_related(png, maintype="image", subtype="png", cid=f"<{cid}>")
        return mail

    async def send(self, message: Message) -> None:
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
