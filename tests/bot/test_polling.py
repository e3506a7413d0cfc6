"""Long polling against the fake Bot API: malformed updates, 409 Conflict, outages."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from bot.conftest import eventually
from fakes.telegram_api import OWNER, TOKEN, FakeBotAPI

from aipager import botapi
from aipager.bot import polling


async def _poll(fake, base, seen):
    bot = botapi.build_bot(TOKEN, base)

    async def handle(update):
        seen.append(update)

    async def quick(seconds):
        await asyncio.sleep(min(seconds, 0.05))

    task = asyncio.create_task(polling.poll(bot, handle, timeout=1, sleep=quick))
    return bot, task


async def _stop(bot, task):
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    await bot.session.close()


async def test_a_malformed_update_is_skipped_and_the_rest_handled(caplog):
    fake = FakeBotAPI()
    seen: list = []
    async with fake.running() as base:
        bot, task = await _poll(fake, base, seen)
        try:
            await fake.user_says("before")
            await fake.push_raw_update({"message": {"message_id": "not a number", "chat": 5}})
            await fake.user_says("after")
            await eventually(lambda: len(seen) == 2, what="both good updates")
        finally:
            await _stop(bot, task)
    assert [u.message.text for u in seen] == ["before", "after"]
    assert "skipped a malformed Telegram update" in caplog.text


async def test_a_second_poller_is_reported_once_and_polling_resumes(caplog):
    caplog.set_level(logging.INFO, "aipager.bot")
    fake = FakeBotAPI()
    fake.conflict = True
    seen: list = []
    async with fake.running() as base:
        bot, task = await _poll(fake, base, seen)
        try:
            await eventually(lambda: len(fake.calls_of("getUpdates", ok=False)) >= 4)
            fake.conflict = False
            await fake.user_says("hello", OWNER)
            await eventually(lambda: seen, what="an update after the conflict")
        finally:
            await _stop(bot, task)
    assert caplog.text.count("409 Conflict") == 1
    assert "receiving Telegram updates again" in caplog.text


async def test_an_outage_backs_off_and_recovers():
    fake = FakeBotAPI()
    fake.set_outage(True)
    seen: list = []
    async with fake.running() as base:
        bot, task = await _poll(fake, base, seen)
        try:
            await eventually(lambda: len(fake.calls_of("getUpdates", ok=False)) >= 3)
            fake.set_outage(False)
            await fake.user_says("back")
            await eventually(lambda: seen, what="an update after the outage")
        finally:
            await _stop(bot, task)
    assert seen[0].message.text == "back"
