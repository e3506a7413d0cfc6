"""Two machines in one test: a real ``nats-server`` (the wheel's) and two daemons in
separate instance folders, the hub with the real chat against the fake Bot API, the
host with its own daemon; both terminals are ``FakeSessions`` (what would be typed
into dtach is recorded).  Everything runs in the test's event loop except the broker,
which is a process the test can kill and start again on the same file store."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest
from bot.conftest import eventually
from fakes.sessionio import FakeSessions
from fakes.telegram_api import OWNER, TOKEN, FakeBotAPI

from aipager import config
from aipager.hub import server
from aipager.hub.creds import Creds
from tests.support.door import door

HUB_PW = "hub-secret-pw"
PASSWORDS = {"box": "box-secret-pw", "vm": "vm-secret-pw"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def instance(root: Path, name: str) -> dict[str, str]:
    """An environment whose every aipager path lies under ``root/name``."""
    env = dict(os.environ)
    for var in ("HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME",
                "XDG_RUNTIME_DIR", "AIPAGER_INSTANCE_DIR"):
        path = root / name / var.lower()
        path.mkdir(parents=True, exist_ok=True)
        env[var] = str(path)
    return env


class Broker:
    """The wheel's nats-server on a free loopback port with aipager's configuration."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = free_port()
        self.url = f"nats://127.0.0.1:{self.port}"
        self.conf = root / "nats.conf"
        self.conf.write_text(server.render_config(f"127.0.0.1:{self.port}", str(root / "store"),
                                                  HUB_PW, PASSWORDS))
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        binary = server.find_binary(os.environ)
        log = open(self.root / "nats.log", "ab")  # noqa: SIM115
        self.proc = subprocess.Popen([binary, "-c", str(self.conf)], stdout=log, stderr=log)
        log.close()
        assert server.wait_listening("127.0.0.1", self.port, 10), (self.root / "nats.log").read_text()

    def kill(self) -> None:
        """SIGKILL: no clean shutdown of the store."""
        if self.proc is not None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
            self.proc = None

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(10)
            self.proc = None


@pytest.fixture
def broker(tmp_path_factory) -> Any:
    b = Broker(tmp_path_factory.mktemp("broker"))
    b.start()
    try:
        yield b
    finally:
        b.kill()


class Hub:
    """The hub machine: ChatBot + Daemon (local sessions fake) + HubLink + HubPort."""

    def __init__(self, env: dict[str, str], fake: FakeBotAPI, url: str, *,
                 timeout: float = 5.0, creds: Creds | None = None,
                 hosts: tuple[str, ...] = tuple(PASSWORDS), web: bool = False,
                 stable: float = 10.0) -> None:
        from aipager.bot.service import ChatBot
        from aipager.daemon.app import Daemon
        from aipager.hub.link import HubLink
        from aipager.hub.port import HubPort

        self.env, self.fake = env, fake
        cfg = config.load(env)
        self.bot = ChatBot(env, cfg)
        self.sessions = FakeSessions()
        notifier: Any = self.bot.notifier
        #: the web page's sign-in links, as ``aipager start`` would print them
        self.signin: list[str] = []
        self.page: Any = None
        if web:  # wired as main.compose_hub wires it
            from aipager.port.outputs import FanoutNotifier
            from aipager.web.service import web_page

            self.page = web_page({**env, "AIPAGER_WEB_PORT": "0"}, cfg, self.signin.append)
            notifier = FanoutNotifier([self.bot.notifier, self.page.notifier])
        self.daemon = Daemon(env, notifier=notifier, session_io=self.sessions)
        self.link = HubLink(env, url, creds or Creds("hub", HUB_PW), notifier,
                            timeout=timeout, hosts=lambda: sorted(hosts), before_ack=self.bot.save,
                            local_name="laptop", stable=stable)
        self.port = HubPort(self.daemon, self.link)
        self.bot.attach(door(self.port))
        self.tasks = [asyncio.create_task(self.bot.run()), asyncio.create_task(self.link.run())]
        if self.page is not None:
            self.page.attach(door(self.port))
            self.tasks.append(asyncio.create_task(self.page.run()))

    async def stop(self) -> None:
        from aipager.aio import cancel_and_wait

        for task in reversed(self.tasks):
            await cancel_and_wait({task})
        self.daemon.save(force=True, stopped=True)
        self.daemon.journal.close()

    def sent_texts(self) -> list[str]:
        return [str(p.get("text", "")) for p in self.fake.calls_of("sendMessage")]


class Host:
    """A joined machine: its own Daemon (fake terminal) with a HostLink as its notifier."""

    def __init__(self, env: dict[str, str], url: str, name: str = "box",
                 sessions: FakeSessions | None = None, creds: Creds | None = None) -> None:
        from aipager.daemon import persist
        from aipager.daemon.app import Daemon
        from aipager.hub.host import HostLink

        self.env, self.name = env, name
        self.link = HostLink(env, url, creds or Creds(name, PASSWORDS[name]))
        self.sessions = sessions or FakeSessions()
        self.daemon = Daemon(env, notifier=self.link, session_io=self.sessions)
        restored = persist.restore_saved(env, self.daemon.core.registry)
        self.daemon.journal.seq = restored.journal_seq
        self.link.attach(door(self.daemon))
        self.task = asyncio.create_task(self.link.run())

    def feed(self, session: str, event: str, **fields: Any) -> None:
        key = "type" if event == "statusline" else "hook_event_name"
        self.daemon.deliver([orjson.dumps({key: event, "session": session, **fields})])
        self.daemon.core.flush_cards()

    def start(self, name: str) -> str:
        session = f"claude-{name}"
        self.sessions.live.add(session)
        self.feed(session, "SessionStart", source="startup", session_id=f"sid-{name}",
                  cwd="/tmp", transcript_path=f"/nonexistent/{name}.jsonl")
        return session

    async def stop(self) -> None:
        from aipager.aio import cancel_and_wait

        await cancel_and_wait({self.task})
        self.daemon.save(force=True, stopped=True)
        self.daemon.journal.close()


class Machines:
    def __init__(self, root: Path, broker: Broker, fake: FakeBotAPI, base: str) -> None:
        self.root, self.broker, self.fake = root, broker, fake
        self.hub_env = instance(root, "hub")
        self.hub_env["AIPAGER_TELEGRAM_API_BASE"] = base
        config.save(self.hub_env, config.Config(bot_token=TOKEN, chat_id=OWNER["id"]))
        self.host_envs = {name: instance(root, name) for name in PASSWORDS}
        self.hub: Hub | None = None
        self.hosts: dict[str, Host] = {}

    def start_hub(self, **kw: Any) -> Hub:
        self.hub = Hub(self.hub_env, self.fake, self.broker.url, **kw)
        return self.hub

    def start_host(self, name: str = "box", sessions: FakeSessions | None = None) -> Host:
        self.hosts[name] = Host(self.host_envs[name], self.broker.url, name, sessions)
        return self.hosts[name]

    async def close(self) -> None:
        for host in self.hosts.values():
            with contextlib.suppress(Exception):
                await host.stop()
        if self.hub is not None:
            with contextlib.suppress(Exception):
                await self.hub.stop()


@pytest.fixture
async def machines(tmp_path_factory, broker) -> Any:
    fake = FakeBotAPI()
    fake.add_private_chat(OWNER)
    async with fake.running() as base:
        m = Machines(tmp_path_factory.mktemp("m", numbered=True), broker, fake, base)
        try:
            yield m
        finally:
            await m.close()


async def hub_sees(hub: Hub, name: str, timeout: float = 10.0, pred: Any = None) -> Any:
    """Wait until the hub's view has session ``name`` (``claude-jim@box``) [matching pred]."""
    def seen() -> Any:
        sess = hub.port.sessions.get(name)
        return sess if sess is not None and (pred is None or pred(sess)) else None

    return await eventually(seen, timeout, f"the hub to see {name}")
