"""The README's order, `aipager start` then `aipager setup`: the running daemon starts the
chat when setup saves the config (it once never did, and setup's "Run `aipager start`" then
failed with "already running")."""

from __future__ import annotations

import asyncio
import contextlib
import os

from fakes.telegram_api import OWNER, TOKEN, FakeBotAPI

from aipager import config, main
from aipager.cli.setup_cmd import next_step


async def test_a_daemon_started_before_setup_starts_the_chat_once_the_config_is_saved():
    fake = FakeBotAPI()
    fake.add_private_chat(OWNER)
    async with fake.running() as base:
        env = dict(os.environ, AIPAGER_TELEGRAM_API_BASE=base)
        daemon = main.compose(env, None, web=False)
        waiting = asyncio.create_task(main.chat_once_set_up(env, daemon.notifier._targets[-1],
                                                            daemon, poll=0.05))
        try:
            await asyncio.sleep(0.2)
            assert not waiting.done() and fake.calls_of("getUpdates") == []
            # setup writes the config (a broken one first: it waits for the next write)
            path = config.save(env, config.Config(bot_token=TOKEN, chat_id=OWNER["id"]))
            with open(path, "w") as fh:
                fh.write("{")
            await asyncio.sleep(0.2)
            assert fake.calls_of("getUpdates") == []
            config.save(env, config.Config(bot_token=TOKEN, chat_id=OWNER["id"]))
            await fake.wait_for("getMe", lambda p: True, timeout=10, ok=None)
            await fake.user_says("/status")
            await fake.wait_for("sendMessage", lambda p: "session" in str(p["text"]).lower(),
                                timeout=10)
            # the chat is given the daemon's outputs from now on
            kinds = [type(t).__name__ for t in daemon.notifier._targets[-1]._targets]
            assert kinds == ["ChatNotifier"]
        finally:
            waiting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await waiting


def test_setup_names_the_next_step_for_a_daemon_that_runs_or_not():
    cfg = config.Config(bot_token=TOKEN, chat_id=OWNER["id"])
    assert "Run `aipager start`" in next_step(None, cfg, running=False)
    assert "starts the chat" in next_step(None, cfg, running=True)
    assert "aipager start" not in next_step(None, cfg, running=True)
    other = config.Config(bot_token="111111:AAotherOTHERotherOTHERother0", chat_id=OWNER["id"])
    assert "stop it" in next_step(other, cfg, running=True)
    assert "from now on" in next_step(cfg, config.Config(TOKEN, -100123), running=True)
