"""An MCP server's form (an elicitation) filled in from the chat through the real aiogram and
the fake Bot API: one field at a time (a choice's buttons, a typed value as a reply, yes/no,
an optional field skipped), then the whole form with ✅ Send; what reaches the waiting hook's
socket is exactly the values; decline, a value that does not fit, a member who may not
answer, and the hook giving up."""

from __future__ import annotations

import json
import os

import orjson
import pytest

from bot.conftest import eventually
from daemon.test_replies import RID, HookSocket

HERE = os.path.dirname(__file__)


@pytest.fixture
def hook():
    sock = HookSocket()
    yield sock
    sock.close()


def _elicit(chat, session, hook_path: str) -> None:
    with open(os.path.join(HERE, "..", "fixtures", "elicitation.json"), encoding="utf-8") as fh:
        ev = json.load(fh)
    for key in ("session_id", "transcript_path", "cwd", "prompt_id", "hook_event_name"):
        ev.pop(key)
    chat.feed(session, "UserPromptSubmit", prompt="release it", prompt_id="p1")
    chat.feed(session, "PreToolUse", tool_name="mcp__releaser__ask", tool_use_id="toolu_m",
              tool_input={})
    chat.feed(session, "Elicitation", aipager_request_id=RID, aipager_reply_addr=hook_path, **ev)


async def _form(chat):
    def ours(text):
        return text.startswith("📋") and "releaser asks" in text
    await chat.fake.wait_for("sendMessage", lambda p: ours(str(p["text"])))
    return next(m for m in chat.fake.bot_messages(chat.chat_id) if ours(m["text"]))


def _buttons(chat, message_id):
    message = chat.fake.message(chat.chat_id, message_id)
    return {b["text"]: b["callback_data"] for row in message["reply_markup"]["inline_keyboard"]
            for b in row}


def _text(chat, message_id) -> str:
    return chat.fake.message(chat.chat_id, message_id)["text"]


async def _tap(chat, mid, label, then):
    await chat.fake.user_taps(mid, _buttons(chat, mid)[label])
    await eventually(lambda: then in _text(chat, mid), what=f"after {label}: {then}")


async def test_a_form_filled_in_step_by_step_reaches_the_hook_exactly(chat, hook):
    session = chat.start("rel")
    _elicit(chat, session, hook.path)
    message = await _form(chat)
    mid = message["message_id"]
    assert "Where should the release go?" in message["text"]
    assert "1/4 · Channel *" in message["text"]
    assert list(_buttons(chat, mid))[:3] == ["Stable", "Beta", "Nightly"]
    await _tap(chat, mid, "Beta", "2/4 · Release note")
    # a typed value: a reply to the form's message
    await chat.fake.user_says("Ships “today” ✓", reply_to=mid)
    await eventually(lambda: "3/4 · Replicas *" in _text(chat, mid), what="replicas asked")
    await chat.fake.user_says("twelve", reply_to=mid)
    await chat.fake.wait_for("sendMessage", lambda p: "a whole number is needed" in p["text"])
    await chat.fake.user_says("12", reply_to=mid)
    await chat.fake.wait_for("sendMessage", lambda p: "at most 9" in p["text"])
    assert "3/4 · Replicas" in _text(chat, mid)
    await chat.fake.user_says("3", reply_to=mid)
    await eventually(lambda: "4/4 · Tell the team" in _text(chat, mid), what="notify asked")
    await _tap(chat, mid, "No", "Send this to releaser?")
    shown = _text(chat, mid)
    assert "Channel: Beta" in shown and "Replicas: 3" in shown and "Tell the team: no" in shown
    assert hook.received() == []  # nothing went before ✅ Send
    await chat.fake.user_taps(mid, _buttons(chat, mid)["✅ Send"])
    got: list[bytes] = []
    await eventually(lambda: got.extend(hook.received()) or got, what="the answer at the hook")
    assert orjson.loads(got[0]) == {"v": 1, "request_id": RID, "elicitation": {
        "action": "accept", "content": {"channel": "beta", "note": "Ships “today” ✓",
                                        "replicas": 3, "notify": False}}}
    final = await chat.fake.wait_for("editMessageText", lambda p: "✅ Sent by @owner" in p["text"])
    assert "Channel: Beta" in final["text"]
    assert "reply_markup" not in chat.fake.message(chat.chat_id, mid) or not \
        chat.fake.message(chat.chat_id, mid)["reply_markup"].get("inline_keyboard")


async def test_skip_and_decline(chat, hook):
    session = chat.start("rel")
    _elicit(chat, session, hook.path)
    mid = (await _form(chat))["message_id"]
    await _tap(chat, mid, "Stable", "2/4 · Release note")
    await _tap(chat, mid, "⏭ Skip", "3/4 · Replicas")
    assert "⏭ Skip" not in _buttons(chat, mid)  # a required field cannot be skipped
    await chat.fake.user_taps(mid, _buttons(chat, mid)["❌ Decline"])
    got: list[bytes] = []
    await eventually(lambda: got.extend(hook.received()) or got, what="the decline at the hook")
    assert orjson.loads(got[0])["elicitation"] == {"action": "decline"}
    await chat.fake.wait_for("editMessageText", lambda p: "❌ Declined by @owner" in p["text"])


async def test_the_hook_giving_up_leaves_the_form_to_the_terminal(chat, hook):
    session = chat.start("rel")
    _elicit(chat, session, hook.path)
    mid = (await _form(chat))["message_id"]
    chat.feed(session, "permission_reply_timeout", aipager_request_id=RID)
    await eventually(lambda: "answer it at the computer" in _text(chat, mid),
                     what="the form said to be in the terminal")
    markup = chat.fake.message(chat.chat_id, mid).get("reply_markup") or {}
    assert not markup.get("inline_keyboard")
    assert hook.received() == []
