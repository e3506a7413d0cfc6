"""Who may use the page: pure checks, no I/O.

Two ways in:

- **The local page.** ``aipager start`` prints ``http://127.0.0.1:PORT/?token=…``: a
  one-time token (``Logins.issue``) the server exchanges for an HttpOnly,
  SameSite=Strict session cookie (``Logins.exchange``) and redirects away from, so
  it never stays in the address bar.  The person at the machine is the owner.
- **The Telegram Mini App.** Every request carries ``Authorization: tma <initData>``,
  signed by Telegram with the bot's token (``check_init_data``); the Telegram user
  then has their aipager role, as in the chat.

Only hashes of tokens and cookies are kept, so a value can only be matched, never
read back (and lookups by hash leak nothing about the secret).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass
from typing import Any, Callable
from urllib.parse import parse_qsl, urlsplit

#: how old Telegram's ``auth_date`` may be by default (``web.service.Settings``): an
#: initData that leaked (a proxy's log, a shared screen) signs in as its user until then, and
#: Telegram signs a fresh one each time the Mini App is opened
INIT_DATA_MAX_AGE = 3600
#: how far in the future ``auth_date`` may lie: this computer's clock a little behind
#: Telegram's; more is not a clock, it is an initData made to outlive ``max_age``
INIT_DATA_SKEW = 60
#: an unused login link works this long
LOGIN_TTL = 24 * 3600
#: a browser stays signed in this long (while the daemon runs)
SESSION_TTL = 30 * 24 * 3600
#: the session cookie's name
COOKIE = "aipager_session"


class AuthError(Exception):
    """The request does not prove who sent it (the message says why, never a secret)."""


class NotMember(AuthError):
    """Telegram vouches for the user, but they are not a member here."""


@dataclass(frozen=True)
class TelegramUser:
    """The Telegram user an initData names (what ``Members.sender`` reads)."""

    id: int
    username: str = ""
    first_name: str = ""


def digest(value: str) -> str:
    """The sha256 a token or cookie is kept and matched by (never the value itself)."""
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()


def init_data_hash(fields: dict[str, str], bot_token: str) -> str:
    """Telegram's signature of initData ``fields`` (without ``hash``): hex
    HMAC-SHA256(key=HMAC-SHA256(key="WebAppData", msg=bot_token), msg=data_check_string),
    the data-check string being the sorted ``key=value`` lines joined by a line feed."""
    secret = hmac.new(b"WebAppData", bot_token.encode(), hashlib.sha256).digest()
    check = "\n".join(f"{k}={v}" for k, v in sorted(fields.items()))
    return hmac.new(secret, check.encode(), hashlib.sha256).hexdigest()


def check_init_data(init_data: str, bot_token: str, now: float | None = None,
                    max_age: float = INIT_DATA_MAX_AGE) -> TelegramUser:
    """The Telegram user a Mini App's ``initData`` was signed for.

    Raises:
        AuthError: no or a wrong signature, a repeated field, no usable ``auth_date``
            (older than ``max_age``, or more than ``INIT_DATA_SKEW`` in the future), no user.
    """
    if not bot_token:
        raise AuthError("Telegram is not set up here")
    pairs = parse_qsl(init_data, keep_blank_values=True, strict_parsing=False)
    fields: dict[str, str] = {}
    for key, value in pairs:
        if key in fields:
            raise AuthError("initData repeats a field")
        fields[key] = value
    given = fields.pop("hash", "")
    if not given or not hmac.compare_digest(init_data_hash(fields, bot_token), given.lower()):
        raise AuthError("initData is not signed by this bot")
    try:
        auth_date = int(fields.get("auth_date", ""))
    except ValueError:
        raise AuthError("initData has no auth_date") from None
    now = time.time() if now is None else now
    if auth_date - now > INIT_DATA_SKEW:
        raise AuthError("initData is dated in the future: check this computer's clock")
    if now - auth_date > max_age:
        raise AuthError("initData is too old: close the app and open it again")
    try:
        user = json.loads(fields.get("user", ""))
        uid = user["id"]
    except (ValueError, TypeError, KeyError):
        raise AuthError("initData names no user") from None
    if not isinstance(uid, int) or isinstance(uid, bool) or uid <= 0:
        raise AuthError("initData names no user")
    username, first = user.get("username"), user.get("first_name")
    return TelegramUser(uid, username if isinstance(username, str) else "",
                        first if isinstance(first, str) else "")


class Logins:
    """One-time login tokens and the cookie sessions they turn into (in memory: a
    restarted daemon prints a new link, and ``aipager page`` makes one any time).

    Args:
        clock: wall-clock seconds (injected for tests).
        made_elsewhere: takes a token made outside this process by its sha256 (``links``).
    """

    def __init__(self, clock: Callable[[], float] = time.time,
                 made_elsewhere: Callable[[str, float], float | None] | None = None) -> None:
        self._clock = clock
        #: (a token's sha256, now) → until when a link made outside the daemon works, taking
        #: it (``links.take``: ``aipager page``'s links); None: only this process's own
        self._made_elsewhere = made_elsewhere
        #: sha256 of an unused token → when it stops working
        self._tokens: dict[str, float] = {}
        #: sha256 of a session cookie → when it stops working
        self._sessions: dict[str, float] = {}
        #: called when a browser signs in or out (``keep``: saved across a restart)
        self.on_change: Callable[[], None] = lambda: None

    def issue(self) -> str:
        """A new one-time login token."""
        token = secrets.token_urlsafe(24)
        self._tokens[digest(token)] = self._clock() + LOGIN_TTL
        return token

    def exchange(self, token: str) -> str | None:
        """The session cookie for an unused, unexpired token (which is then used up)."""
        now = self._clock()
        hashed = digest(token) if token else ""
        until = self._tokens.pop(hashed, None) if token else None
        if until is None and token and self._made_elsewhere is not None:
            until = self._made_elsewhere(hashed, now)
        if until is None or until < now:
            return None
        cookie = secrets.token_urlsafe(32)
        self._sessions[digest(cookie)] = now + SESSION_TTL
        self._expire(now)
        self.on_change()
        return cookie

    def signed_in(self, cookie: str | None) -> bool:
        if not cookie:
            return False
        until = self._sessions.get(digest(cookie))
        return until is not None and until >= self._clock()

    def sign_out(self, cookie: str | None) -> None:
        if cookie:
            self._sessions.pop(digest(cookie), None)
            self.on_change()

    def signed_in_browsers(self) -> dict[str, float]:
        """The sessions' cookie hashes and until when each works (what ``keep`` saves: a
        hash opens nothing by itself)."""
        now = self._clock()
        return {k: until for k, until in self._sessions.items() if until >= now}

    def keep_browsers(self, saved: Any) -> None:
        """Sign in again the browsers a previous run had signed in (unexpired ones)."""
        if not isinstance(saved, dict):
            return
        now = self._clock()
        for hashed, until in saved.items():
            if isinstance(hashed, str) and len(hashed) == 64 and \
                    isinstance(until, (int, float)) and now <= until <= now + SESSION_TTL:
                self._sessions[hashed] = float(until)

    def _expire(self, now: float) -> None:
        for table in (self._tokens, self._sessions):
            for key in [k for k, until in table.items() if until < now]:
                del table[key]


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of a URL, lower-case ("" when it has none)."""
    parts = urlsplit(url)
    if not parts.scheme or not parts.netloc:
        return ""
    return f"{parts.scheme}://{parts.netloc}".lower()


def host_allowed(host: str | None, allowed: frozenset[str]) -> bool:
    """Whether a request's Host header names this server (DNS rebinding: a page of
    another site that resolves its name to 127.0.0.1 sends its own name)."""
    return host is not None and host.lower() in allowed


def origin_allowed(headers: Any, allowed: frozenset[str]) -> bool:
    """Whether a request comes from this server's own page.

    ``Origin`` must be one of ``allowed`` when present; a browser that sends none (a
    same-origin GET) still says where the request comes from in ``Sec-Fetch-Site``,
    which must then be ``same-origin``.  A request with neither is refused.
    """
    origin = headers.get("Origin")
    if origin is not None:
        return origin.lower() in allowed
    return headers.get("Sec-Fetch-Site") == "same-origin"


__all__ = ["COOKIE", "INIT_DATA_MAX_AGE", "INIT_DATA_SKEW", "AuthError", "Logins", "NotMember",
           "TelegramUser", "check_init_data", "digest", "host_allowed", "init_data_hash",
           "origin_allowed", "origin_of"]
