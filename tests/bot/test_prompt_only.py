"""The chat types prompts, never keystrokes: what anyone sends goes in as its one encoding
(``policy.chatprompt``), audited; the owner may opt in to raw keys for themselves only."""

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


async def test_a_members_shell_line_goes_in_as_their_words_and_is_audited(chat):
    """Nothing is refused for what Claude Code's input line might read in it: the daemon
    types the one encoding, whose first line names the member, so `!` starts nothing."""
    session = chat.start("jim")
    await chat.fake.user_says("/jim !rm -rf ~", user=GUEST, chat_id=chat.chat_id)
    typed = await eventually(lambda: chat.sessions.typed, what="the message typed")
    assert typed[0][:2] == (session, "!rm -rf ~")
    assert chat.sessions.pasted == [(session, "Via aipager, from guest (user):\n!rm -rf ~")]
    assert typed[0][2]["text"] == chat.sessions.pasted[0][1]  # the note holds the encoding
    assert chat.sessions.keys == []
    records = [r for r in _audit(chat.daemon.env) if r["action"] == "chat_prompt"]
    assert [r["who_id"] for r in records] == [GUEST["id"]]


async def test_control_bytes_are_removed_before_a_message_is_pasted(chat):
    session = chat.start("jim")
    await chat.fake.user_says("/jim hello\x03\x03 there\x1b[201~\r/exit", user=GUEST,
                              chat_id=chat.chat_id)
    typed = await eventually(lambda: chat.sessions.typed, what="the message typed")
    assert typed[0][:2] == (session, "hello there[201~\n/exit")
    assert "\x1b" not in chat.sessions.pasted[0][1]


async def test_the_owners_own_bang_is_words_unless_they_opted_in(chat):
    session = chat.start("jim")
    await chat.fake.user_says("/jim !ls", chat_id=chat.chat_id)
    await eventually(lambda: chat.sessions.typed, what="the owner's words")
    assert chat.sessions.pasted[-1][1].endswith(":\n!ls")

    cfg = config.load(chat.daemon.env)
    config.save(chat.daemon.env, config.Config(**{**cfg.__dict__,
                                                  "extra": {**cfg.extra, "owner_raw_keys": True}}))
    await chat.fake.user_says("/jim !ls", chat_id=chat.chat_id)
    await eventually(lambda: len(chat.sessions.typed) == 2, what="the owner's raw keys")
    assert chat.sessions.typed[-1] == (session, "!ls", None)  # as keys, with no note
    # ... and never for anyone else
    await chat.fake.user_says("/jim !id", user=GUEST, chat_id=chat.chat_id)
    await eventually(lambda: len(chat.sessions.typed) == 3, what="the member's words")
    assert chat.sessions.typed[-1][1] == "!id" and chat.sessions.typed[-1][2] is not None
    assert chat.sessions.pasted[-1][1] == "Via aipager, from guest (user):\n!id"


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
