"""Updates run once: the update journal (``bot.inbox``) across stops, crashes and damage.

The real ``ChatBot`` over HTTP against the fake Bot API, stopped and started again on
the same state folder; ``FakeSessions.typed`` is what reached the terminal.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os

import orjson
import pytest
from bot.conftest import FakeSessions, eventually
from fakes.telegram_api import OWNER, TOKEN, FakeBotAPI

from aipager import config
from aipager.proto import paths
from aipager.bot import chatstate
from tests.support.door import door

SESSION = "claude-jim"


class Run:
    """One ChatBot and daemon on ``env``; ``stop`` cancels its task as a daemon stop does."""

    def __init__(self, env: dict, sessions: FakeSessions) -> None:
        from aipager.bot.service import ChatBot
        from aipager.daemon.app import Daemon

        self.env = env
        self.bot = ChatBot(env, config.load(env))
        self.daemon = Daemon(env, notifier=self.bot.notifier, session_io=sessions)
        self.bot.attach(door(self.daemon))
        sessions.live.add(SESSION)
        self.daemon.deliver([orjson.dumps({
            "hook_event_name": "SessionStart", "session": SESSION, "source": "startup",
            "session_id": "sid-jim", "cwd": "/tmp", "transcript_path": "/nonexistent/jim.jsonl"})])
        self.task: asyncio.Task | None = None

    def start(self) -> Run:
        self.task = asyncio.create_task(self.bot.run())
        return self

    async def stop(self) -> None:
        assert self.task is not None
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task
        self.daemon.journal.close()


@pytest.fixture
async def world():
    fake = FakeBotAPI()
    fake.add_private_chat(OWNER)
    async with fake.running() as base:
        env = dict(os.environ, AIPAGER_TELEGRAM_API_BASE=base)
        config.save(env, config.Config(bot_token=TOKEN, chat_id=OWNER["id"]))
        os.makedirs(paths.state_dir(env), mode=0o700, exist_ok=True)
        yield fake, env


def typed(sessions: FakeSessions, text: str) -> list:
    return [t for t in sessions.typed if t[1] == text]


async def _settled() -> None:
    """Anything a restart would repeat went before the last message waited for (messages
    of a chat are handled in order); a moment more for good measure."""
    await asyncio.sleep(0.3)


@pytest.mark.parametrize("saved", [True, False], ids=["state-saved", "killed-before-save"])
async def test_an_update_telegram_delivers_again_is_typed_once(world, monkeypatch, saved):
    fake, env = world
    sessions = FakeSessions()
    if not saved:
        # killed before any save: the chat state never says it was handled
        monkeypatch.setattr(chatstate, "save", lambda env, state: None)
    first = Run(env, sessions).start()
    await fake.user_says("hello once")
    update = dict(fake.updates[-1])
    await eventually(lambda: typed(sessions, "hello once"), what="the message typed")
    await first.stop()
    monkeypatch.undo()
    assert (chatstate.load(env).handled >= update["update_id"]) == saved
    # Telegram never heard the next poll's offset: it delivers the update again
    await fake.push_raw_update(update)

    second = Run(env, sessions).start()
    try:
        await fake.user_says("and then this")
        await eventually(lambda: typed(sessions, "and then this"), what="the next message")
        await _settled()
    finally:
        await second.stop()
    assert len(typed(sessions, "hello once")) == 1
    assert chatstate.load(env).handled > update["update_id"]


async def test_a_message_journaled_but_not_handled_is_typed_after_a_restart(world):
    fake, env = world
    sessions = FakeSessions()
    first = Run(env, sessions)
    keep = first.bot.inbox.keep

    def keep_then_die(batch):
        fresh = keep(batch)
        if fresh:
            raise asyncio.CancelledError  # stopped hard right after the journal write
        return fresh

    first.bot.inbox.keep = keep_then_die
    first.start()
    await fake.user_says("do not lose me")
    update = dict(fake.updates[-1])
    await eventually(lambda: first.task.done(), what="the bot stopped")
    await first.stop()
    assert not sessions.typed
    # Telegram forgets it as the next poll of a live bot would have confirmed it: only the
    # journal still has it
    fake.updates = [u for u in fake.updates if u["update_id"] > update["update_id"]]

    second = Run(env, sessions).start()
    try:
        await eventually(lambda: typed(sessions, "do not lose me"), what="the kept message")
        await fake.user_says("next")
        await eventually(lambda: typed(sessions, "next"), what="the next message")
        await _settled()
    finally:
        await second.stop()
    assert [t[1] for t in sessions.typed] == ["do not lose me", "next"]
    # handled and saved: the journal holds nothing any more
    assert os.path.getsize(paths.updates_journal_file(env)) == 0


class DyingSessions(FakeSessions):
    """Types, then the handler is stopped before it returns (a kill mid-handler)."""

    async def type_prompt(self, session, text, *, note, submitting=None):
        await super().type_prompt(session, text, note=note, submitting=submitting)
        raise asyncio.CancelledError


async def test_a_stop_right_after_typing_does_not_type_again(world, monkeypatch):
    fake, env = world
    monkeypatch.setattr(chatstate, "save", lambda env, state: None)  # no save: a kill
    dying = DyingSessions()
    first = Run(env, dying).start()
    await fake.user_says("typed just before the stop")
    await eventually(lambda: typed(dying, "typed just before the stop"), what="typed")
    await first.stop()
    monkeypatch.undo()

    sessions = FakeSessions()
    second = Run(env, sessions).start()
    try:
        await fake.user_says("after the restart")
        await eventually(lambda: typed(sessions, "after the restart"), what="the next message")
        await _settled()
    finally:
        await second.stop()
    assert [t[1] for t in sessions.typed] == ["after the restart"]


async def test_a_damaged_journal_is_kept_aside_and_the_bot_starts(world, caplog):
    caplog.set_level(logging.INFO, "aipager.bot")
    fake, env = world
    path = paths.updates_journal_file(env)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    good = {"update_id": 900, "message": {"message_id": 90, "date": 0, "text": "before the damage",
                                          "chat": {"id": OWNER["id"], "type": "private"},
                                          "from": OWNER}}
    with open(path, "wb") as fh:
        fh.write(orjson.dumps({"u": good}) + b"\n" + b"\x00garbage{\n" + b'{"u": {"upd')
    fake._next_update = 1000  # Telegram's ids are past the journal's
    sessions = FakeSessions()
    run = Run(env, sessions).start()
    try:
        await eventually(lambda: typed(sessions, "before the damage"), what="the good record")
        await fake.user_says("after the damage")
        await eventually(lambda: typed(sessions, "after the damage"), what="a new message")
    finally:
        await run.stop()
    folder = os.path.dirname(path)
    kept = [n for n in os.listdir(folder) if n.startswith("chat-updates.jsonl.damaged-")]
    assert len(kept) == 1
    assert b"garbage" in open(os.path.join(folder, kept[0]), "rb").read()
    assert "the update journal" in caplog.text and "was damaged (line 2 is not JSON)" in caplog.text
    assert os.stat(path).st_mode & 0o777 == 0o600


async def test_a_symlinked_journal_is_never_followed(world, tmp_path):
    fake, env = world
    path = paths.updates_journal_file(env)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    target = tmp_path / "elsewhere"
    target.write_bytes(b"")
    os.symlink(target, path)
    sessions = FakeSessions()
    run = Run(env, sessions).start()
    try:
        await fake.user_says("through no symlink")
        await eventually(lambda: typed(sessions, "through no symlink"), what="typed")
    finally:
        await run.stop()
    assert target.read_bytes() == b""
    assert not os.path.islink(path)
