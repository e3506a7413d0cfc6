"""Every request passes here first: Host, security headers, who it is, Origin.

- **Host** must name this server (the bound ``127.0.0.1:PORT``, or the public name
  the person set up for the Mini App): a DNS-rebinding page sends its own name.
- **Headers** on every response: a strict Content-Security-Policy (only the page's own
  scripts, styles and connections; no frames but Telegram's web client when a public
  URL is set), no sniffing, no referrer, nothing cached from the API.
- **Who**: ``/api/`` needs the session cookie (the local page) or
  ``Authorization: tma <initData>`` (the Mini App); the page and its static files
  carry no data and are served to anyone who passed the Host check.
- **Origin**: every state-changing request and the live stream must come from the
  page itself (``auth.origin_allowed``).

The login link's token never reaches a log: the server runs without an access log,
and the token's request is answered with a redirect that drops it.
"""

from __future__ import annotations

import logging
from typing import Awaitable, Callable

from aiohttp import web

from aipager.clients.people import Sender
from aipager.web.auth import COOKIE, Logins, AuthError, NotMember, host_allowed, origin_allowed
from aipager.web.who import People

log = logging.getLogger("aipager.web")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

# what the gate found out, for the handlers (plain strings before aiohttp had RequestKey)
_KEY = getattr(web, "RequestKey", None)
SENDER = _KEY("sender", Sender) if _KEY else "sender"
VIA = _KEY("via", str) if _KEY else "via"

#: where the person's stuff is read or changed: needs a signed-in person
API = "/api/"
#: the live stream: read only, but its Origin is checked like a change's
STREAM = "/api/events"


def csp(frame_ancestors: str) -> str:
    return ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
            "connect-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; "
            f"frame-ancestors {frame_ancestors}")


def _refuse(status: int, why: str) -> web.Response:
    return web.json_response({"error": why}, status=status)


def _bearer_read(request: web.Request) -> bool:
    """A Mini App's read of the stream from a webview that says nothing of where it comes
    from (no Origin, no Sec-Fetch-Site): another site's page cannot attach the
    Authorization header without a CORS preflight, which this server never answers."""
    return (request[VIA] == "telegram" and request.method == "GET"
            and "Origin" not in request.headers and "Sec-Fetch-Site" not in request.headers)


def make_middlewares(people: People, logins: Logins, allowed_hosts: frozenset[str],
                     allowed_origins: frozenset[str]) -> list:
    """The middlewares, outermost first (``web.Application(middlewares=...)``)."""

    @web.middleware
    async def host(request: web.Request, handler: Handler) -> web.StreamResponse:
        if not host_allowed(request.headers.get("Host"), allowed_hosts):
            return _refuse(421, "this server does not answer to that name")
        return await handler(request)

    @web.middleware
    async def who(request: web.Request, handler: Handler) -> web.StreamResponse:
        if not request.path.startswith(API):
            return await handler(request)
        scheme, _, credentials = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() == "tma":
            try:
                request[SENDER] = people.telegram(credentials.strip())
            except AuthError as exc:
                return _refuse(403 if isinstance(exc, NotMember) else 401, str(exc))
            request[VIA] = "telegram"
        elif logins.signed_in(request.cookies.get(COOKIE)):
            request[SENDER] = people.local()
            request[VIA] = "local"
        else:
            return _refuse(401, "not signed in: open the link `aipager start` printed")
        if (request.method not in ("GET", "HEAD") or request.path == STREAM) and \
                not origin_allowed(request.headers, allowed_origins) and \
                not _bearer_read(request):
            return _refuse(403, "this request does not come from aipager's page")
        return await handler(request)

    return [host, who]


def add_headers(frame_ancestors: str) -> Callable[[web.Request, web.StreamResponse],
                                                   Awaitable[None]]:
    """An ``on_response_prepare`` signal: the security headers on every response (the
    live stream's too, whose headers go out before its handler returns)."""
    policy = csp(frame_ancestors)

    async def prepare(request: web.Request, response: web.StreamResponse) -> None:
        response.headers["Content-Security-Policy"] = policy
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["Cross-Origin-Opener-Policy"] = "same-origin"
        response.headers["Cross-Origin-Resource-Policy"] = "same-origin"
        if request.path.startswith(API) or request.path == "/":
            response.headers["Cache-Control"] = "no-store"

    return prepare


__all__ = ["SENDER", "VIA", "add_headers", "csp", "make_middlewares"]
