"""A stopping daemon's chat: what is due goes out within ``$AIPAGER_STOP_GRACE`` seconds
(3 by default), and what is still unsent then is kept for the next start, not lost."""

from __future__ import annotations

import pytest
from bot.conftest import eventually

from aipager.bot import chatstate
from aipager.bot.outbox import React
from aipager.bot.service import CLOSE_GRACE, close_grace


@pytest.mark.parametrize(("raw", "seconds"), [
    (None, CLOSE_GRACE), ("", CLOSE_GRACE), ("0", 0.0), ("1.5", 1.5), ("soon", CLOSE_GRACE),
    ("-1", CLOSE_GRACE), ("nan", CLOSE_GRACE), ("inf", CLOSE_GRACE), ("61", CLOSE_GRACE),
])
def test_the_grace_is_read_from_the_environment(raw, seconds):
    env = {} if raw is None else {"AIPAGER_STOP_GRACE": raw}
    assert close_grace(env) == seconds


async def _a_reaction_waiting_for_the_pace(chat) -> int:
    """Telegram answers the 👀 on a typed message "retry after 1": it waits a second."""
    beta = chat.start("beta")
    chat.fake.fail("setMessageReaction", 429, retry_after=1)
    sent = await chat.fake.user_says("hello beta")
    await eventually(lambda: chat.sessions.typed, what="the message typed")
    assert chat.sessions.typed[0][:2] == (beta, "hello beta")
    await chat.fake.wait_for("setMessageReaction", ok=False)
    assert not _reacted(chat, sent["message_id"])
    return int(sent["message_id"])


def _reacted(chat, message_id: int) -> bool:
    return any(str(p.get("message_id")) == str(message_id)
               for p in chat.fake.calls_of("setMessageReaction", ok=True))


async def test_within_the_grace_what_is_due_is_sent_before_the_stop(chat):
    message_id = await _a_reaction_waiting_for_the_pace(chat)
    chat.bot.env["AIPAGER_STOP_GRACE"] = "3"
    await chat.stop()
    assert _reacted(chat, message_id)
    assert chat.bot.outbox.pending() == []


async def test_without_a_grace_the_unsent_is_saved_for_the_next_start(chat):
    message_id = await _a_reaction_waiting_for_the_pace(chat)
    assert chat.bot.env["AIPAGER_STOP_GRACE"] == "0"  # the suite's setting
    await chat.stop()
    assert not _reacted(chat, message_id)
    saved = chatstate.load(chat.bot.env).pending
    assert [op.msg_id for op in saved if isinstance(op, React)] == [message_id]
