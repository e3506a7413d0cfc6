"""The chat on real parts: the real aiogram client over HTTP against the fake Bot API,
the real ``Daemon`` (its event core fed with datagrams as the ingest would), the real
``ChatBot``; only the terminal is a fake (``fakes.sessionio.FakeSessions`` at the
``SessionIO`` seam: it records what would be typed into dtach)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from typing import Any, Callable

import orjson
import pytest
from fakes.sessionio import FakeSessions
from fakes.telegram_api import OWNER, TOKEN, FakeBotAPI

from aipager import config
from tests.support.door import door

STRANGER = {"id": 777, "is_bot": False, "first_name": "Mallory", "username": "mallory"}


async def eventually(pred: Callable[[], Any], timeout: float = 5.0, what: str = "") -> Any:
    """Wait (without sleeping the test's logic into wall-clock assumptions) until ``pred``."""
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or pred}")
        await asyncio.sleep(0.01)


class Chat:
    """One running chat: ``fake`` (Bot API), ``daemon``, ``bot`` (ChatBot), ``sessions``."""

    def __init__(self, fake: FakeBotAPI, daemon: Any, bot: Any, sessions: FakeSessions,
                 chat_id: int = OWNER["id"]) -> None:
        self.fake = fake
        self.daemon = daemon
        self.bot = bot
        self.sessions = sessions
        self.chat_id = chat_id
        #: the running ``bot.run()`` (the fixture stops it; a test may stop it first)
        self.task: asyncio.Task[None] | None = None

    async def stop(self) -> None:
        """Stop the chat as the daemon's shutdown does."""
        assert self.task is not None
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task

    def feed(self, session: str, event: str, **fields: Any) -> None:
        """One hook datagram for ``session`` (through the daemon's delivery path), then a
        card flush as the daemon's tick does."""
        key = "type" if event in ("statusline",) else "hook_event_name"
        doc = {key: event, "session": session, **fields}
        self.daemon.deliver([orjson.dumps(doc)])
        self.daemon.core.flush_cards()

    def start(self, name: str, **fields: Any) -> str:
        session = f"claude-{name}"
        self.sessions.live.add(session)
        self.feed(session, "SessionStart", source="startup", session_id=f"sid-{name}",
                  cwd="/tmp", transcript_path=f"/nonexistent/{name}.jsonl", **fields)
        return session

    def bot_texts(self) -> list[str]:
        return [m.get("text", "") for m in self.fake.bot_messages(self.chat_id)]

    def sent_texts(self) -> list[str]:
        return [str(p.get("text", "")) for p in self.fake.calls_of("sendMessage")]


@pytest.fixture
def members() -> tuple[config.Member, ...]:
    return ()


@pytest.fixture
def group() -> int | None:
    """A group chat id to configure instead of the owner's private chat."""
    return None


@pytest.fixture
def saved_chat_state() -> bytes | None:
    """What the chat-state file holds before the bot starts (None: no file)."""
    return None


@pytest.fixture
async def chat(members, group, saved_chat_state) -> Any:
    from aipager.bot.service import ChatBot
    from aipager.daemon.app import Daemon

    fake = FakeBotAPI()
    fake.add_private_chat(OWNER)
    chat_id = fake.add_group_chat(group, "team") if group else OWNER["id"]
    async with fake.running() as base:
        env = dict(os.environ, AIPAGER_TELEGRAM_API_BASE=base)
        cfg = config.Config(bot_token=TOKEN, chat_id=chat_id, members=members)
        config.save(env, cfg)
        if saved_chat_state is not None:
            from aipager.proto import paths

            path = paths.chat_state_file(env)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as fh:
                fh.write(saved_chat_state)
        bot = ChatBot(env, cfg)
        sessions = FakeSessions()
        daemon = Daemon(env, notifier=bot.notifier, session_io=sessions)
        bot.attach(door(daemon))
        task = asyncio.create_task(bot.run())
        running = Chat(fake, daemon, bot, sessions, chat_id)
        running.task = task
        try:
            yield running
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
