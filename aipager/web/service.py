"""The page as a daemon service: settings, binding, the printed sign-in link.

Where it listens (first found wins):

- ``AIPAGER_WEB_PORT`` / the config's ``web_port`` (default ``DEFAULT_PORT``; ``0``
  picks a free one, the printed link says which);
- ``AIPAGER_WEB_HOST`` / ``web_host`` (default ``127.0.0.1``: nothing listens on other
  interfaces unless the person asks);
- ``AIPAGER_WEB_PUBLIC_URL`` / ``web_public_url``: the HTTPS address the person put in
  front of it for the Telegram Mini App (``tailscale serve``, a tunnel); its name is
  then answered too;
- ``AIPAGER_WEB_INIT_DATA_MAX_AGE`` / ``web_init_data_max_age``: seconds a Mini App's
  signed initData is accepted (default ``auth.INIT_DATA_MAX_AGE``, an hour; at most a
  day): the app is then closed and opened again, which signs a fresh one.

A port that cannot be bound is logged and the daemon runs on without the page.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
from dataclasses import dataclass
from typing import Any, Callable, Coroutine, Mapping
from urllib.parse import urlsplit

from aiohttp import web

from aipager.aio import spawn
from aipager import config
from aipager.clients.members import Members
from aipager.port.backend import SessionsView
from aipager.port.door import Port
from aipager.proto.errors import ConfigError
from aipager.web.actions import WebActions
from aipager.proto import paths
from aipager.web import links
from aipager.web.auth import INIT_DATA_MAX_AGE, Logins, origin_of
from aipager.web.keep import Keeper
from aipager.web.live import WebNotifier
from aipager.web.routes import make_app
from aipager.web.who import People

log = logging.getLogger("aipager.web")

DEFAULT_PORT = 7180
DEFAULT_HOST = "127.0.0.1"
#: Telegram's web client shows a Mini App in a frame of its own
TELEGRAM_WEB = "https://web.telegram.org"
#: the longest initData age a person may set: what it was before it became configurable
INIT_DATA_MAX_AGE_LIMIT = 24 * 3600


@dataclass(frozen=True)
class Settings:
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    public_url: str = ""
    #: seconds a Mini App's initData is accepted after Telegram signed it
    init_data_max_age: float = INIT_DATA_MAX_AGE

    @classmethod
    def from_env(cls, env: Mapping[str, str], cfg: config.Config | None) -> Settings:
        """The settings from the environment, else the config, else the defaults.

        Raises:
            ConfigError: a port that is no port, a public URL that is not HTTPS, an
                initData age that is not 60 s to a day.
        """
        extra = cfg.extra if cfg is not None else {}

        def pick(var: str, key: str, default: Any) -> Any:
            value = env.get(var)
            return value if value not in (None, "") else extra.get(key, default)

        raw_port = pick("AIPAGER_WEB_PORT", "web_port", DEFAULT_PORT)
        try:
            port = int(raw_port)
            if not 0 <= port <= 65535 or isinstance(raw_port, bool):
                raise ValueError
        except (TypeError, ValueError):
            msg = f"the web page's port {raw_port!r} is not a port number (0-65535)"
            raise ConfigError(msg) from None
        raw_age = pick("AIPAGER_WEB_INIT_DATA_MAX_AGE", "web_init_data_max_age",
                       INIT_DATA_MAX_AGE)
        try:
            age = float(raw_age)
            # under a minute the clock skew allowed ahead is longer than the age allowed behind
            if not 60 <= age <= INIT_DATA_MAX_AGE_LIMIT or isinstance(raw_age, bool):
                raise ValueError
        except (TypeError, ValueError):
            msg = (f"web_init_data_max_age {raw_age!r} is not a number of seconds from 60 to "
                   f"{INIT_DATA_MAX_AGE_LIMIT} (how long a Mini App stays signed in)")
            raise ConfigError(msg) from None
        return cls(str(pick("AIPAGER_WEB_HOST", "web_host", DEFAULT_HOST)), port,
                   config.web_public_url(env, cfg), age)

    def name(self, port: int) -> str:
        """``host:port`` as a browser's Host header names it."""
        try:
            is_v6 = ipaddress.ip_address(self.host).version == 6
        except ValueError:
            is_v6 = False
        return f"[{self.host}]:{port}" if is_v6 else f"{self.host}:{port}"

    def hosts(self, port: int) -> frozenset[str]:
        names = {self.name(port).lower()}
        if self.public_url:
            names.add(urlsplit(self.public_url).netloc.lower())
        return frozenset(names)

    def origins(self, port: int) -> frozenset[str]:
        found = {f"http://{self.name(port)}".lower()}
        if self.public_url:
            found.add(origin_of(self.public_url))
        return frozenset(found)


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (raises OSError)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


class WebPage:
    """The web page of one daemon.

    Args:
        env: paths and knobs.
        cfg: the config (None before Telegram is set up: the page alone, for the owner).
        settings: where to listen.
        announce: shown the sign-in link once the page listens (``aipager start`` prints
            it on its own output, never in the log).
    """

    def __init__(self, env: Mapping[str, str], cfg: config.Config | None, settings: Settings,
                 announce: Callable[[str], None]) -> None:
        self.env = dict(env)
        self.settings = settings
        self.members = Members(self.env, cfg) if cfg is not None else None
        self.people = People(self.env, self.members, settings.init_data_max_age)
        folder = paths.page_links_dir(self.env)
        self.logins = Logins(made_elsewhere=lambda hashed, now: links.take(folder, hashed, now))
        self.port: Port | None = None
        self.notifier = WebNotifier(self._sessions)
        # what the last run's page kept (signed-in browsers, conversations), before any output
        self.keeper = Keeper(self.env, self.logins, self.notifier)
        self.keeper.load()
        self.actions: WebActions | None = None
        self.url = ""
        self.problem = ""
        self._announce = announce
        self._tasks: set[asyncio.Task] = set()

    def _sessions(self) -> SessionsView | None:
        return self.port.sessions if self.port is not None else None

    def _config(self) -> config.Config | None:
        return self.members.current() if self.members else None

    def attach(self, port: Port) -> None:
        """Bind to the one door ``main`` composed for every surface (the use cases and the
        daemon's read-only view), before it serves."""
        self.port = port
        self.actions = WebActions(port, self.notifier, self._spawn)
        self.people.attach(port)
        port.add_facts(self.facts)

    def facts(self) -> dict[str, Any]:
        """For ``aipager status``: where the page is (never a sign-in token)."""
        return {"web": {"url": self.url or None, "problem": self.problem or None,
                        "public_url": self.settings.public_url or None}}

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        spawn(self._tasks, coro, log, "a web page action")

    async def run(self, _daemon: Any = None) -> None:
        """The daemon service: serves until cancelled at daemon shutdown."""
        if self.actions is None:
            msg = "attach the page to the daemon's port before running it"
            raise RuntimeError(msg)
        s = self.settings
        try:
            sock = bind(s.host, s.port)
        except OSError as exc:
            self.problem = f"cannot listen on {s.name(s.port)}: {exc.strerror or exc}"
            log.error("the web page %s; set AIPAGER_WEB_PORT to another port", self.problem)
            return
        port = sock.getsockname()[1]
        app = make_app(self.actions, self.notifier, self.logins, self.people,
                       allowed_hosts=s.hosts(port), allowed_origins=s.origins(port),
                       frame_ancestors=TELEGRAM_WEB if s.public_url else "'none'")
        # no access log: the sign-in link's token is in a request line
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        try:
            await web.SockSite(runner, sock).start()
            self.url = f"http://{s.name(port)}/"
            log.info("web page on %s (the sign-in link is printed on aipager start's output)",
                     self.url)
            if s.public_url:
                log.info("Telegram Mini App at %s/", s.public_url)
            self._announce(f"{self.url}?token={self.logins.issue()}")
            await asyncio.Event().wait()
        finally:
            self.keeper.save()
            self.notifier.close()
            for task in list(self._tasks):
                task.cancel()
            await runner.cleanup()
            sock.close()


def web_page(env: Mapping[str, str], cfg: config.Config | None,
             announce: Callable[[str], None]) -> WebPage:
    """The page, as the composition root (``aipager.main``) builds it.

    Raises:
        ConfigError: as ``Settings.from_env``.
    """
    return WebPage(env, cfg, Settings.from_env(env, cfg), announce)


__all__ = ["DEFAULT_PORT", "Settings", "WebPage", "web_page"]
