"""The composition root: the daemon and its clients, put together in one place.

The daemon (``aipager.daemon``) knows nothing of its clients: it takes a
``Notifier`` for its outputs and long-running services.  The chat
(``aipager.bot``) and the web page (``aipager.web``) know the daemon only through
its port (``aipager.daemon.port``).  This module, above them, is the one place
that builds the daemon and hands it to each; ``aipager start`` runs it.
"""

from __future__ import annotations

import sys
from typing import Any, Awaitable, Callable, Mapping

from aipager import config
from aipager.daemon import persist
from aipager.daemon.app import Daemon, run_daemon
from aipager.daemon.notifier import FanoutNotifier, Notifier


def announce(url: str) -> None:
    """The page's sign-in link, on ``aipager start``'s own output (never in the log)."""
    print(f"Open {url}", file=sys.stdout, flush=True)


def compose(env: Mapping[str, str], cfg: config.Config | None, *, web: bool = True) -> Daemon:
    """The daemon with its clients: the Telegram chat (with a config) and the web page
    (unless ``web`` is off), each given the daemon's outputs and run as its service."""
    notifiers: list[Notifier] = []
    services: list[Callable[[Daemon], Awaitable[Any]]] = []
    attach: list[Callable[[Daemon], None]] = []
    if cfg is not None:
        from aipager.bot.service import chat_bot

        chat = chat_bot(env, cfg, persist.load_state(env))
        notifiers.append(chat.notifier)
        services.append(lambda _daemon: chat.run())
        attach.append(chat.attach)
    if web:
        from aipager.web.service import web_page

        page = web_page(env, cfg, announce)
        notifiers.append(page.notifier)
        services.append(page.run)
        attach.append(page.attach)
    notifier = notifiers[0] if len(notifiers) == 1 else (
        FanoutNotifier(notifiers) if notifiers else None)
    daemon = Daemon(env, notifier=notifier, services=services)
    for bind in attach:
        bind(daemon)
    return daemon


def run(env: Mapping[str, str], *, verbose: bool = False, cfg: config.Config | None = None,
        web: bool = True) -> int:
    """``aipager start`` in the foreground: the composed daemon until SIGINT/SIGTERM.

    Raises:
        DaemonAlreadyRunning, DaemonError: as ``run_daemon``.
        ConfigError: the web page's settings are wrong (``web.service.Settings``).
    """
    return run_daemon(env, verbose=verbose, compose=lambda e: compose(e, cfg, web=web))
