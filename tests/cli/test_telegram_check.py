"""aipager.install.telegram_check with the real aiogram client against the fake Bot API."""

from __future__ import annotations

import pytest

from aipager.install import telegram_check as tg
from aipager.proto.errors import ChatUnreachable, TelegramUnreachable, TokenRejected
from fakes.telegram_api import OWNER, TOKEN, FakeBotAPI


@pytest.fixture
async def api():
    fake = FakeBotAPI()
    async with fake.running() as base:
        fake.base = base
        yield fake


async def test_token_and_chat(api):
    bot = await tg.check_token(TOKEN, api.base)
    assert (bot.id, bot.username) == (123456, "aipager_test_bot")
    await api.user_says("hi")
    chat = await tg.check_chat(TOKEN, OWNER["id"], api.base)
    assert (chat.id, chat.kind, chat.title) == (OWNER["id"], "private", "Owner")
    assert [m["text"] for m in api.sent] == [tg.TEST_MESSAGE]
    await tg.check_chat(TOKEN, OWNER["id"], api.base, send_test=False)
    assert len(api.sent) == 1


async def test_errors_are_translated(api):
    with pytest.raises(TokenRejected):
        await tg.check_token("111111:AAnobodyNOBODYnobodyNOBODY0", api.base)
    with pytest.raises(TokenRejected, match="malformed"):
        await tg.check_token("nonsense", api.base)
    with pytest.raises(ChatUnreachable, match="chat not found"):
        await tg.check_chat(TOKEN, 5, api.base)
    api.add_private_chat()
    api.blocked.add(OWNER["id"])
    with pytest.raises(ChatUnreachable, match="blocked"):
        await tg.check_chat(TOKEN, OWNER["id"], api.base)
    with pytest.raises(TelegramUnreachable):
        await tg.check_token(TOKEN, "http://127.0.0.1:9", timeout=5)


async def test_detect_chat_waits_for_a_message(api):
    import asyncio

    async def later():
        await asyncio.sleep(0.2)
        await api.user_says("hello")

    task = asyncio.create_task(later())
    found = await tg.detect_chat(TOKEN, api.base, wait=5)
    await task
    assert found is not None and found.id == OWNER["id"]
    # Confirmed: the daemon's chat, starting next, never types setup's "hello" into a
    # session as a (paid) prompt; a second look waits for a new message.
    assert await tg.detect_chat(TOKEN, api.base, wait=1) is None
    await api.user_says("again")
    again = await tg.detect_chat(TOKEN, api.base, wait=1)
    assert again is not None and again.id == OWNER["id"]
    assert await tg.detect_chat(TOKEN, api.base, wait=0) is None  # no time, no look


def test_api_base_from_env():
    assert tg.api_base({}) is None
    assert tg.api_base({"AIPAGER_TELEGRAM_API_BASE": "http://127.0.0.1:1"}) == "http://127.0.0.1:1"


async def test_detect_chat_backs_off_when_the_server_does_not_hold_the_poll(api):
    """A server (or proxy) answering getUpdates at once with nothing: no busy loop."""
    held = api._handlers["getupdates"]

    async def at_once(bot, params):
        return await held(bot, {**params, "timeout": 0})

    api._handlers["getupdates"] = at_once
    assert await tg.detect_chat(TOKEN, api.base, wait=3) is None
    polls = api.calls_of("getUpdates")
    assert 2 <= len(polls) <= 6, len(polls)  # pauses of 0.5, 1, 2 s; without them: hundreds
