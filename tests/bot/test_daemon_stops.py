"""What the chat says when the daemon stops and starts again (issue 43, item 6).

A clean stop (SIGINT/SIGTERM: the daemon's stop event) is told once, with the sessions
that go on working or wait at the computer; the next start edits that very message to say
it runs again.  After an unclean stop, "running again" is the first thing the chat hears,
before the answers the restart delivers.  The real ``ChatBot`` and ``Daemon`` against the
fake Bot API."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time

from bot.conftest import eventually
from fakes.sessionio import FakeSessions
from fakes.telegram_api import OWNER, TOKEN, FakeBotAPI

from aipager import config
from aipager.bot import chatstate
from aipager.bot.service import RESTARTED, chat_bot
from aipager.daemon.app import Daemon
from tests.support.door import door

STOPPED = ("⏸ aipager stopped on the computer: nothing more from its sessions until it runs "
           "again, and what you send meanwhile waits for it (up to a day).")


def _stopping(chat) -> None:
    """The daemon's SIGTERM, as ``Daemon.serve`` takes it."""
    chat.daemon.stop_event.set()


async def test_a_clean_stop_is_told_once_with_what_goes_on_and_the_next_start_edits_it(chat):
    chat.bot.env["AIPAGER_STOP_GRACE"] = "3"
    jim, ann = chat.start("jim"), chat.start("ann")
    chat.start("bob")
    chat.feed(jim, "UserPromptSubmit", prompt="long job", prompt_id="p1")
    chat.feed(ann, "UserPromptSubmit", prompt="deploy", prompt_id="p2")
    chat.feed(ann, "PermissionRequest", tool_name="Bash", tool_use_id="t1",
              tool_input={"command": "make deploy"})
    await chat.fake.wait_for("sendMessage", lambda p: "make deploy" in str(p["text"]))

    _stopping(chat)
    await chat.stop()

    said = [p for p in chat.fake.calls_of("sendMessage") if "aipager stopped" in str(p["text"])]
    assert [p["text"] for p in said] == [
        f"{STOPPED}\n⏳ Still working there: jim.\n🔐 Waiting for an answer at the computer: ann."]
    assert str(said[0].get("disable_notification")).lower() == "true"  # quiet
    notice = next(m for m in chat.fake.bot_messages(chat.chat_id) if m["text"] == said[0]["text"])

    # the next start: the same message says it runs again; nothing new is posted of it
    env, started = chat.bot.env, chat.daemon.started_at
    posts = len(chat.fake.calls_of("sendMessage"))
    again = chat_bot(env, config.load(env), {"daemon": {"started_at": started,
                                                        "stopped_at": time.time()}})
    daemon = Daemon(env, notifier=again.notifier, session_io=FakeSessions())
    again.attach(door(daemon))
    task = asyncio.create_task(again.run())
    try:
        edited = await chat.fake.wait_for(
            "editMessageText", lambda p: str(p["message_id"]) == str(notice["message_id"]))
        assert "▶️ running again since" in edited["text"]
        assert edited["text"].startswith("⏸ aipager stopped on the computer at ")
        await chat.fake.wait_for("setMyCommands")
        assert not [p for p in chat.fake.calls_of("sendMessage")[posts:]
                    if "aipager" in str(p["text"])]
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    # a chat stopped without the daemon stopping (its own end) says nothing of a stop
    assert len([p for p in chat.fake.calls_of("sendMessage")
                if "aipager stopped" in str(p["text"])]) == 1


async def test_a_stop_notice_left_unsent_is_dropped_by_the_next_start(chat):
    assert chat.bot.env["AIPAGER_STOP_GRACE"] == "0"  # the suite's: nothing more is sent
    chat.fake.set_outage(True)
    _stopping(chat)
    await chat.stop()
    env = chat.bot.env
    assert any(STOPPED in getattr(op, "text", "") for op in chatstate.load(env).pending)
    chat.fake.set_outage(False)

    again = chat_bot(env, config.load(env), {"daemon": {"started_at": chat.daemon.started_at,
                                                        "stopped_at": time.time()}})
    assert not [op for op in again.state.pending if STOPPED in getattr(op, "text", "")]


async def test_after_an_unclean_stop_running_again_comes_before_what_the_restart_delivers(
        tmp_path):
    """The daemon replays what the killed run accepted (here: a task's Stop) before the chat
    runs: the answer was queued first, and "running again" came after it."""
    fake = FakeBotAPI()
    fake.add_private_chat(OWNER)
    async with fake.running() as base:
        env = dict(os.environ, AIPAGER_TELEGRAM_API_BASE=base)
        cfg = config.Config(bot_token=TOKEN, chat_id=OWNER["id"])
        config.save(env, cfg)
        for _run in (1, 2):  # killed again before anything was sent: still said once
            bot = chat_bot(env, cfg, {"daemon": {"started_at": 1.0, "stopped_at": None}})
            bot.save()
        sessions = FakeSessions()
        daemon = Daemon(env, notifier=bot.notifier, session_io=sessions)
        bot.attach(door(daemon))
        sessions.live.add("claude-jim")
        daemon.core.feed({"hook_event_name": "SessionStart", "session": "claude-jim",
                          "session_id": "sid-jim", "cwd": "/tmp", "source": "startup"})
        daemon.core.feed({"hook_event_name": "UserPromptSubmit", "session": "claude-jim",
                          "prompt": "go", "prompt_id": "p1"})
        daemon.core.feed({"hook_event_name": "Stop", "session": "claude-jim", "prompt_id": "p1",
                          "last_assistant_message": "The answer the restart delivers."})
        task = asyncio.create_task(bot.run())
        try:
            await fake.wait_for("sendMessage", lambda p: "The answer the restart" in p["text"])
            texts = [str(p["text"]) for p in fake.calls_of("sendMessage")]
            assert texts.count(RESTARTED) == 1
            answer = next(i for i, t in enumerate(texts) if "The answer the restart" in t)
            assert texts.index(RESTARTED) < answer, texts
            await eventually(lambda: fake.calls_of("setMyCommands"))
            assert [str(p["text"]) for p in fake.calls_of("sendMessage")].count(RESTARTED) == 1
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
