"""The chat types prompts, never keystrokes: what a member sends is checked before it is typed,
refused in one line and audited; the owner may opt in to raw keys for themselves only."""

from __future__ import annotations

import json

import pytest

from aipager import config
from aipager.proto import paths
from fakes.telegram_api import OWNER

from .conftest import eventually

GUEST = {"id": 5151, "is_bot": False, "first_name": "Guest", "username": "guest"}


def _audit(env) -> list[dict]:
    with open(paths.audit_log(env), encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


@pytest.fixture
def members():
    return (config.Member(OWNER["id"], "owner", "owner"), config.Member(GUEST["id"], "user", "guest"))


@pytest.fixture
def group():
    return -100777


async def test_a_members_shell_line_is_refused_told_and_audited(chat):
    chat.start("jim")
    msg = await chat.fake.user_says("/jim !rm -rf ~", user=GUEST, chat_id=chat.chat_id)
    refusal = await chat.fake.wait_for("sendMessage", lambda p: "🔒 Not sent" in str(p["text"]))
    assert "shell command" in refusal["text"]
    assert refusal["reply_parameters"]["message_id"] == msg["message_id"]
    await chat.fake.wait_for("setMessageReaction", lambda p: p["reaction"][0]["emoji"] == "🤷")
    assert chat.sessions.typed == [] and chat.sessions.keys == []
    records = [r for r in _audit(chat.daemon.env) if r["action"] == "chat_prompt_refused"]
    assert [(r["who_id"], r["refused"]) for r in records] == [(GUEST["id"], "shell")]


async def test_control_bytes_are_removed_before_a_message_is_pasted(chat):
    session = chat.start("jim")
    await chat.fake.user_says("/jim hello\x03\x03 there\x1b[201~\r/exit", user=GUEST,
                              chat_id=chat.chat_id)
    typed = await eventually(lambda: chat.sessions.typed, what="the message typed")
    assert typed[0][:2] == (session, "hello there[201~\n/exit")


async def test_the_owners_own_bang_is_refused_unless_they_opted_in(chat):
    session = chat.start("jim")
    await chat.fake.user_says("/jim !ls", chat_id=chat.chat_id)
    await chat.fake.wait_for("sendMessage", lambda p: "🔒 Not sent" in str(p["text"]))
    assert chat.sessions.typed == []

    cfg = config.load(chat.daemon.env)
    config.save(chat.daemon.env, config.Config(**{**cfg.__dict__,
                                                  "extra": {**cfg.extra, "owner_raw_keys": True}}))
    await chat.fake.user_says("/jim !ls", chat_id=chat.chat_id)
    typed = await eventually(lambda: chat.sessions.typed, what="the owner's raw keys")
    assert typed == [(session, "!ls", None)]  # as keys, with no note
    # ... and never for anyone else
    await chat.fake.user_says("/jim !id", user=GUEST, chat_id=chat.chat_id)
    await eventually(lambda: sum("🔒 Not sent" in t for t in chat.sent_texts()) == 2,
                     what="the member still refused")
    assert len(chat.sessions.typed) == 1


async def test_a_message_a_crash_cut_off_is_marked_and_its_author_told(chat):
    session = chat.start("jim")
    msg = await chat.fake.user_says("/jim a long message", chat_id=chat.chat_id)
    await eventually(lambda: chat.sessions.typed, what="typed")
    chat.sessions.cut = [{"session": session, "chat_id": chat.chat_id,
                          "msg_id": msg["message_id"]}]
    await chat.daemon.recover_typing()
    told = await chat.fake.wait_for("sendMessage", lambda p: "cut this message off" in str(p["text"]))
    assert "Send it again" in told["text"]
    assert told["reply_parameters"]["message_id"] == msg["message_id"]
    await chat.fake.wait_for("setMessageReaction", lambda p: p["reaction"][0]["emoji"] == "🤷")
