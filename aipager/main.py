"""The composition root: the daemon and its clients, put together in one place.

The daemon (``aipager.daemon``) knows nothing of its clients: it takes a
``Notifier`` for its outputs and long-running services.  The chat
(``aipager.bot``) and the web page (``aipager.web``) know the daemon only through
the one door this module hands them (``aipager.port.door.Port``).  This module, above
them, is the one place that builds the daemon and that door, the service of its use cases
(``one_service``); ``aipager start`` runs it.

Several machines (``aipager.hub``): ``start --hub`` builds the door over a ``HubPort``
(the local daemon plus the hosts that joined, through the broker) and runs the
hub's link (and its embedded ``nats-server``); ``start --join`` runs a daemon
without a chat whose outputs go to the hub and which runs the hub's commands.

``aipager start`` parses its options with typer, whose parameter coercion imports pydantic
(~10 MB of a page-only daemon's 50).  So the program, once its checks passed, replaces
itself with ``python -m aipager.main`` (``exec_daemon``: same pid, same files, the CLI's
modules gone): the daemon's process then holds only what it runs, and aiogram and
pydantic only where a bot runs (``compose`` with a config, ``compose_hub``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from typing import Any, Awaitable, Callable, Mapping

from aipager import config, heap
from aipager.daemon import persist
from aipager.daemon.app import Daemon, run_daemon
from aipager.port.outputs import FanoutNotifier, Notifier
from aipager.port.backend import DaemonPort
from aipager.port.door import Port
from aipager.daemon.service import Service
from aipager.proto import paths
from aipager.proto.errors import ConfigError

log = logging.getLogger("aipager.daemon")


def announce(url: str) -> None:
    """The page's sign-in link, on ``aipager start``'s own output (never in the log)."""
    print(f"Open {url}", file=sys.stdout, flush=True)


def compose(env: Mapping[str, str], cfg: config.Config | None, *, web: bool = True) -> Daemon:
    """The daemon with its clients: the Telegram chat (with a config) and the web page
    (unless ``web`` is off), each given the daemon's outputs and run as its service."""
    notifiers: list[Notifier] = []
    services: list[Callable[[Daemon], Awaitable[Any]]] = [lambda _daemon: heap.keep_trimmed()]
    attach: list[Callable[[Port], None]] = []
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
    notifier = FanoutNotifier(notifiers)
    if cfg is None:
        # started before `aipager setup` (the README's order): the chat starts once setup
        # saved the config, with no restart (nobody need stop a daemon in the foreground)
        services.append(lambda daemon: chat_once_set_up(env, notifier, daemon))
    daemon = Daemon(env, notifier=notifier, services=services)
    door = one_service(env, daemon)
    for bind in attach:
        bind(door)
    return daemon


def one_service(env: Mapping[str, str], port: DaemonPort) -> Service:
    """The one door every surface holds (the chat, the page, a host's link): the service
    of the use cases over ``port``, with its read-only view.  A session no folder is named for starts in the config's
    ``new_session_folder`` (read at each start: the config can change), else HOME."""
    return Service(port, lambda: config.default_folder(env))


#: how often a daemon started before ``aipager setup`` looks for the config (one stat)
SETUP_POLL_SECONDS = 2.0


async def chat_once_set_up(env: Mapping[str, str], fanout: FanoutNotifier, daemon: Daemon,
                           poll: float = SETUP_POLL_SECONDS) -> None:
    """Wait for the config ``aipager setup`` saves, then run the chat as ``compose`` would
    have: given every output from then on, bound to the daemon, its service until shutdown.
    A config that does not load is logged and looked at again when the file changes."""
    seen: float | None = None
    while True:
        try:
            stamp: float | None = os.stat(paths.config_file(env)).st_mtime
        except OSError:
            stamp = None
        if stamp is not None and stamp != seen:
            seen = stamp
            try:
                cfg = config.load(env)
                break
            except ConfigError as exc:
                log.warning("the config cannot be used yet, no chat: %s", exc)
        await asyncio.sleep(poll)
    from aipager.bot.service import chat_bot

    chat = chat_bot(env, cfg, {})  # a chat new to this daemon: nothing of a last run
    fanout.add(chat.notifier)
    chat.attach(one_service(env, daemon))
    log.info("aipager setup saved a config: the Telegram chat starts")
    await chat.run()


def compose_hub(env: Mapping[str, str], cfg: config.Config,
                cleanup: list[Callable[[], None]], *, web: bool = True) -> Daemon:
    """The hub: the chat and (unless ``web`` is off) the web page, both on one ``HubPort``
    over this daemon and the hosts and both given every output (this machine's and the
    hosts'), the hub's link, and (unless the config names a server) the embedded
    ``nats-server``, stopped by ``cleanup`` after the daemon.

    Raises:
        ConfigError: the config's ``hub`` settings are unusable.
        ServerError: the embedded server cannot start.
    """
    import dataclasses

    from aipager.bot.service import chat_bot
    from aipager.hub import creds as hub_creds
    from aipager.hub import server, settings
    from aipager.hub.link import HubLink
    from aipager.hub.port import HubPort

    hub = settings.from_config(cfg.extra)
    services: list[Callable[[Daemon], Awaitable[Any]]] = [lambda _daemon: heap.keep_trimmed()]
    if hub.embedded:
        hub_creds.hub_nkey(env)  # (a hub made before: its password becomes a key now)
        embedded = server.EmbeddedServer(env, hub)
        embedded.start()
        cleanup.append(embedded.stop)
        services.append(lambda _daemon: embedded.supervise())
        who = hub_creds.hub_creds(env)
        made = server.hub_tls(env, hub)
        if made is not None:  # (start made them) the hub's own client verifies them too
            who = dataclasses.replace(who, ca=made.ca_pem())
    else:
        who = hub_creds.read_creds(hub.creds)
    chat = chat_bot(env, cfg, persist.load_state(env))
    notifier: Notifier = chat.notifier
    attach: list[Callable[[Port], None]] = [chat.attach]
    if web:
        from aipager.web.service import web_page

        page = web_page(env, cfg, announce)
        notifier = FanoutNotifier([chat.notifier, page.notifier])
        services.append(page.run)
        attach.append(page.attach)
    link = HubLink(env, hub.client_url(), who, notifier, timeout=hub.timeout,
                   hosts=lambda: hub_creds.host_names(env), before_ack=chat.save,
                   local_name=hub.name)
    daemon = Daemon(env, notifier=notifier,
                    services=[lambda _daemon: chat.run(), link.run, *services])
    port = HubPort(daemon, link)
    door = one_service(env, port)
    for bind in attach:
        bind(door)
    daemon.add_facts(link.facts)
    link.on_change = lambda: daemon.save(force=True)  # `aipager status` shows the hosts
    return daemon


def compose_host(env: Mapping[str, str], url: str, creds_file: str) -> Daemon:
    """A host that joined a hub: no chat; its outputs go to the hub, the hub's commands run
    here.

    Raises:
        ConfigError: the credential file is unusable.
    """
    from aipager.hub.creds import read_creds
    from aipager.hub.host import HostLink

    who = read_creds(creds_file)
    link = HostLink(env, url or who.url, who)
    daemon = Daemon(env, notifier=link, services=[link.run])
    link.attach(one_service(env, daemon))
    link.on_change = lambda: daemon.save(force=True)
    return daemon


def run(env: Mapping[str, str], *, verbose: bool = False, cfg: config.Config | None = None,
        hub: bool = False, join: str | None = None, creds: str | None = None,
        web: bool = True) -> int:
    """``aipager start`` in the foreground: the composed daemon until SIGINT/SIGTERM.

    Args:
        hub: run as the hub (``cfg`` needed: the hub owns the bot).
        join, creds: join the hub at ``join`` with the credential file ``creds``.
        web: serve the web page (on the hub: every host's sessions).

    Raises:
        DaemonAlreadyRunning, DaemonError: as ``run_daemon``.
        ConfigError: the web page's settings are wrong (``web.service.Settings``).
    """
    cleanup: list[Callable[[], None]] = []

    def build(e: Mapping[str, str]) -> Daemon:
        if creds is not None:
            return compose_host(e, join or "", creds)
        if hub and cfg is not None:
            return compose_hub(e, cfg, cleanup, web=web)
        return compose(e, cfg, web=web)

    try:
        return run_daemon(env, verbose=verbose, compose=build)
    finally:
        for step in reversed(cleanup):
            step()


def daemon_argv(*, verbose: bool = False, hub: bool = False, web: bool = True,
                join: str | None = None, creds: str | None = None) -> list[str]:
    """The command line ``exec_daemon`` runs: this module with ``run``'s options.

    ``-OO``: without docstrings (aiogram's end up in the schemas pydantic builds) the
    daemon takes about 3 MB less; nothing it runs reads a docstring or relies on an
    ``assert`` (those narrow types for mypy).  Its compiled modules are cached apart from
    the CLI's (``.opt-2.pyc``), so the first start compiles them once."""
    argv = [sys.executable, "-OO", "-m", "aipager.main"]
    argv += ["--verbose"] * verbose + ["--hub"] * hub + ["--no-web"] * (not web)
    if creds is not None:
        argv += ["--join", join or "", "--creds", creds]
    return argv


def exec_daemon(argv: list[str]) -> None:
    """Become the daemon (``daemon_argv``): what was printed is flushed first, the log
    files closed (the daemon opens them again)."""
    import logging
    import os

    sys.stdout.flush()
    sys.stderr.flush()
    logging.shutdown()
    os.execv(argv[0], argv)


def serve(argv: list[str], env: Mapping[str, str]) -> int:
    """``python -m aipager.main``: ``run`` with the options ``daemon_argv`` wrote; an
    ``AipagerError`` is one line on stderr and its exit code (as the CLI does)."""
    import argparse

    from aipager import logsetup
    from aipager.proto.errors import AipagerError

    parser = argparse.ArgumentParser(prog="aipager start")
    for flag in ("--verbose", "--hub", "--no-web"):
        parser.add_argument(flag, action="store_true")
    parser.add_argument("--join")
    parser.add_argument("--creds")
    opts = parser.parse_args(argv)
    try:
        logsetup.setup(env, opts.verbose)
        if opts.creds is not None:
            return run(env, verbose=opts.verbose, join=opts.join, creds=opts.creds)
        cfg = config.load(env) if config.exists(env) else None
        return run(env, verbose=opts.verbose, cfg=cfg, hub=opts.hub, web=not opts.no_web)
    except AipagerError as exc:
        print(f"aipager: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    import os

    sys.exit(serve(sys.argv[1:], dict(os.environ)))
