"""What every dashboard response carries: security headers, and the optional token check.

The Content-Security-Policy allows scripts, styles and images from this server only: no inline
script or style can run even if an escaped provider string were ever let through. With a token
configured (the secret named by `daemon.web_token_env`), every page and API call needs it, as
`Authorization: Bearer <token>` or the cookie the /login form sets; /healthz and /metrics stay
open for probes and scrapers, as before.

The login form's body is capped before it is read: a declared length past MAX_FORM_BYTES is
refused at once, and a chunked body is read only up to the cap. A client that goes away while
sending it is routine (logged at DEBUG), not a server error.
"""

from __future__ import annotations

import hmac
import logging
from urllib.parse import parse_qs

from pydantic import SecretStr
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import ClientDisconnect, Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.types import ASGIApp

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}
COOKIE = "priceadvisor_token"
OPEN_PATHS = ("/healthz", "/metrics", "/login", "/static/")
MAX_FORM_BYTES = 4096

log = logging.getLogger(__name__)


class _TooLarge(Exception):
    """A login body past MAX_FORM_BYTES."""


class Guard(BaseHTTPMiddleware):
    def __init__(self, app: ASGIApp, token: SecretStr | None) -> None:
        super().__init__(app)
        self.token = token

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        if self.token is not None and not self._allowed(request):
            response: Response = _unauthorised(request)
        elif request.url.path == "/login" and request.method == "POST":
            response = await self._login(request)
        else:
            response = await call_next(request)
        response.headers.update(HEADERS)
        return response

    def _allowed(self, request: Request) -> bool:
        path = request.url.path
        if path in OPEN_PATHS or path.startswith("/static/"):
            return True
        auth = request.headers.get("authorization", "")
        given = auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else None
        return self._matches(given or request.cookies.get(COOKIE))

    def _matches(self, given: str | None) -> bool:
        assert self.token is not None
        expected = self.token.get_secret_value().encode()
        return given is not None and hmac.compare_digest(given.encode(), expected)

    async def _login(self, request: Request) -> Response:
        try:
            body = await _small_body(request)
        except _TooLarge:
            return Response("form too large", 413, headers={"Connection": "close"})
        except ClientDisconnect:
            log.debug("client %s left while sending the login form", request.client)
            return Response(status_code=400)  # nobody is there to read it
        given = parse_qs(body.decode("utf-8", "replace")).get("token", [None])[0]
        if self.token is None or not self._matches(given):
            return RedirectResponse("/login?failed=1", 303)
        response = RedirectResponse("/", 303)
        response.set_cookie(COOKIE, given or "", httponly=True, samesite="strict")
        return response


async def _small_body(request: Request) -> bytes:
    declared = request.headers.get("content-length", "0")
    if not declared.isdigit() or int(declared) > MAX_FORM_BYTES:
        raise _TooLarge
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise _TooLarge
    return body


def _unauthorised(request: Request) -> Response:
    if request.url.path.startswith("/api/") or "text/html" not in request.headers.get("accept", ""):
        return Response('{"error": "token required"}', 401, media_type="application/json")
    return HTMLResponse(_LOGIN_HINT, 401)


_LOGIN_HINT = '<!doctype html><title>Token required</title><p><a href="/login">Log in</a>'
