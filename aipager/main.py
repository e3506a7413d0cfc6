"""The composition root: the daemon and its clients, put together in one place.

The daemon (``aipager.daemon``) knows nothing of its clients: it takes a
``Notifier`` for its outputs and long-running services.  The chat
(``aipager.bot``) knows the daemon only through its port
(``aipager.daemon.port``).  This module, above both, is the one place that
builds one and hands it to the other; ``aipager start`` runs it.
"""

from __future__ import annotations

from typing import Mapping

from aipager import config
from aipager.daemon import persist
from aipager.daemon.app import Daemon, run_daemon


def compose(env: Mapping[str, str], cfg: config.Config | None) -> Daemon:
    """The daemon with the Telegram chat as its notifier and service (none without a config)."""
    if cfg is None:
        return Daemon(env)
    from aipager.bot.service import chat_bot

    chat = chat_bot(env, cfg, persist.load_state(env))
    daemon = Daemon(env, notifier=chat.notifier, services=[lambda _daemon: chat.run()])
    chat.attach(daemon)
    return daemon


def run(env: Mapping[str, str], *, verbose: bool = False, cfg: config.Config | None = None) -> int:
    """``aipager start`` in the foreground: the composed daemon until SIGINT/SIGTERM.

    Raises:
        DaemonAlreadyRunning, DaemonError: as ``run_daemon``.
    """
    return run_daemon(env, verbose=verbose, compose=lambda e: compose(e, cfg))
