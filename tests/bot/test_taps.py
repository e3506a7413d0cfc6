"""Permission taps on the real path from the chat to the hook's reply socket, the
keystroke fallback, and taps that must act on nothing (forged, stale, doubled, strangers)."""

from __future__ import annotations

import asyncio
import json
import os
import socket

import pytest
from support.screens import rows
from bot.conftest import STRANGER, eventually
from fakes.telegram_api import OWNER

from aipager import config
from aipager.bot.callbacks import RequestTap, SessionTap

SUGGESTION = [{"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "make test:*"}],
               "behavior": "allow", "destination": "localSettings"}]


@pytest.fixture
def hook_reply(tmp_path):
    """A datagram socket standing where a waiting hook listens for its decision."""
    path = os.path.join(os.environ["AIPAGER_INSTANCE_DIR"], "reply-1.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(5)
    yield path, sock
    sock.close()


def _ask(chat, session, *, reply_addr="", tool_use_id="t1", command="make test", suggest=False):
    fields = {"tool_name": "Bash", "tool_use_id": tool_use_id,
              "tool_input": {"command": command, "description": "Run the tests"}}
    if reply_addr:
        fields.update(aipager_reply_addr=reply_addr, aipager_request_id=f"req-{tool_use_id}")
    if suggest:
        fields["permission_suggestions"] = SUGGESTION
    chat.feed(session, "PermissionRequest", **fields)


def _buttons(message):
    return {b["text"]: b["callback_data"] for row in message["reply_markup"]["inline_keyboard"]
            for b in row}


async def _request_message(chat, command="make test"):
    await chat.fake.wait_for("sendMessage", lambda p: command in str(p["text"]))
    return next(m for m in chat.fake.bot_messages(chat.chat_id)
                if command in m["text"] and m.get("reply_markup"))


async def test_allow_reaches_the_waiting_hook_and_the_buttons_give_way(chat, hook_reply):
    path, sock = hook_reply
    session = chat.start("jim")
    chat.feed(session, "UserPromptSubmit", prompt="run the tests", prompt_id="p1")
    _ask(chat, session, reply_addr=path)
    message = await _request_message(chat)
    assert set(_buttons(message)) == {"✅ Allow", "❌ Deny", "⏹ Stop", "✏️ Edit"}
    code = [e for e in message.get("entities") or [] if e["type"] == "pre"]
    assert code, "the command is shown as code"
    query = await chat.fake.user_taps(message["message_id"], _buttons(message)["✅ Allow"])
    reply = json.loads(await asyncio.to_thread(sock.recv, 65536))
    assert reply == {"v": 1, "request_id": "req-t1", "decision": {"behavior": "allow"}}
    toast = await chat.fake.wait_for("answerCallbackQuery", lambda p: p["callback_query_id"] == query)
    assert toast["text"] == "Allowed"
    edited = await chat.fake.wait_for("editMessageText", lambda p: "Allowed by @owner" in p["text"])
    assert not edited.get("reply_markup")
    assert chat.sessions.keys == []  # nothing typed: the hook took it
    # A second tap on the same (now plain) message acts on nothing.
    again = await chat.fake.user_taps(message["message_id"], _buttons(message)["❌ Deny"])
    toast = await chat.fake.wait_for("answerCallbackQuery", lambda p: p["callback_query_id"] == again)
    assert "no longer open" in toast["text"]
    sock.settimeout(0.3)
    with pytest.raises(TimeoutError):
        await asyncio.to_thread(sock.recv, 65536)
    # The audit log has the answer with who and how.
    from aipager.proto import paths

    with open(paths.audit_log(chat.bot.env), encoding="utf-8") as fh:
        records = [json.loads(line) for line in fh]
    assert [(r["action"], r["answer"], r["via"], r["who"]) for r in records] == [
        ("permission_answer", "allow", "hook_decision", "@owner")]


async def test_always_allow_is_offered_only_with_a_rule_and_passes_it_on(chat, hook_reply):
    path, sock = hook_reply
    session = chat.start("jim")
    chat.feed(session, "UserPromptSubmit", prompt="run the tests", prompt_id="p1")
    _ask(chat, session, reply_addr=path, suggest=True)
    message = await _request_message(chat)
    assert "Bash(make test:*)" in message["text"]
    await chat.fake.user_taps(message["message_id"], _buttons(message)["🟢 Always allow"])
    reply = json.loads(await asyncio.to_thread(sock.recv, 65536))
    assert reply["decision"] == {"behavior": "allow", "updatedPermissions": SUGGESTION}


async def test_deny_names_who_denied(chat, hook_reply):
    path, sock = hook_reply
    session = chat.start("jim")
    _ask(chat, session, reply_addr=path)
    message = await _request_message(chat)
    await chat.fake.user_taps(message["message_id"], _buttons(message)["❌ Deny"])
    reply = json.loads(await asyncio.to_thread(sock.recv, 65536))
    assert reply["decision"]["behavior"] == "deny"
    assert "@owner" in reply["decision"]["message"]
    await chat.fake.wait_for("editMessageText", lambda p: "Denied by @owner" in p["text"])


async def test_after_the_hook_gave_up_a_tap_answers_the_dialog_with_keys(chat):
    session = chat.start("jim")
    chat.feed(session, "UserPromptSubmit", prompt="run the tests", prompt_id="p1")
    _ask(chat, session)  # no reply address: the hook is not waiting
    chat.sessions.screens[session] = rows("permission_bash")  # its dialog, as drawn
    message = await _request_message(chat)
    await chat.fake.user_taps(message["message_id"], _buttons(message)["✅ Allow"])
    await eventually(lambda: chat.sessions.keys, what="keys pressed")
    assert chat.sessions.keys == [(session, [b"1"])]
    await chat.fake.wait_for("editMessageText", lambda p: "Allowed by @owner" in p["text"])
    # The PostToolUse that follows closes the request without a second line.
    chat.feed(session, "PostToolUse", tool_name="Bash", tool_use_id="t1",
              tool_input={"command": "make test", "description": "Run the tests"},
              tool_response={})
    again = await chat.fake.user_taps(message["message_id"], _buttons(message)["✅ Allow"])
    await chat.fake.wait_for("answerCallbackQuery", lambda p: p["callback_query_id"] == again)
    assert chat.sessions.keys == [(session, [b"1"])]
    shown = chat.fake.message(chat.chat_id, message["message_id"])["text"]
    assert shown.count("Allowed by") == 1 and "terminal" not in shown


async def test_answered_in_the_terminal_the_buttons_go_and_a_tap_types_nothing(chat):
    session = chat.start("jim")
    _ask(chat, session)
    message = await _request_message(chat)
    chat.feed(session, "PostToolUse", tool_name="Bash", tool_use_id="t1",
              tool_input={"command": "make test", "description": "Run the tests"},
              tool_response={})
    await chat.fake.wait_for("editMessageText", lambda p: "answered in the terminal" in p["text"])
    query = await chat.fake.user_taps(message["message_id"], _buttons(message)["✅ Allow"])
    toast = await chat.fake.wait_for("answerCallbackQuery", lambda p: p["callback_query_id"] == query)
    assert "no longer open" in toast["text"]
    assert chat.sessions.keys == []


@pytest.mark.parametrize("data", [
    RequestTap(h=987654, act="allow").pack(),   # a handle never given out
    "r:1:allow_everything",                     # an act no button has
    "r:1:s3",                                   # a suggestion never offered
    "s:1:detonate",                             # … on a session button
    "q:1:z:0",                                  # … on a question button
    "set:theme:dark",                           # a setting there is not
    "p:1:notanumber",                           # a picker's message number
    "r:notanumber:allow",                       # not even the shape
    "zz:whatever",                              # another prefix
    SessionTap(h=987654, act="kill_yes").pack(),
])
async def test_forged_callback_data_acts_on_nothing(chat, data):
    session = chat.start("jim")
    _ask(chat, session)
    message = await _request_message(chat)
    query = await chat.fake.user_taps(message["message_id"], data)
    toast = await chat.fake.wait_for("answerCallbackQuery", lambda p: p["callback_query_id"] == query)
    assert toast.get("text") == "This button has expired."
    assert chat.sessions.keys == [] and chat.sessions.typed == []
    assert chat.daemon.core.registry.get(session).requests, "the request is still open"


async def test_a_strangers_tap_acts_on_nothing(chat):
    session = chat.start("jim")
    _ask(chat, session)
    message = await _request_message(chat)
    chat.fake.add_private_chat(STRANGER)
    query = await chat.fake.user_taps(message["message_id"], _buttons(message)["✅ Allow"],
                                      user=STRANGER, chat_id=OWNER["id"])
    toast = await chat.fake.wait_for("answerCallbackQuery", lambda p: p["callback_query_id"] == query)
    assert "not a member" in toast["text"]
    assert chat.sessions.keys == []
    assert chat.daemon.core.registry.get(session).requests[0].answered == ""


async def test_an_edit_request_shows_its_diff_when_previews_are_on(chat):
    session = chat.start("jim")
    chat.bot.state.set_pref(chat.chat_id, "diffs", True)
    chat.feed(session, "PermissionRequest", tool_name="Edit", tool_use_id="e1",
              tool_input={"file_path": "/srv/app.py", "old_string": "x = 1", "new_string": "x = 2"})
    message = await _request_message(chat, "/srv/app.py")
    assert "- x = 1\n+ x = 2" in message["text"]
    kinds = {(e["type"], e.get("language")) for e in message.get("entities") or []}
    assert ("pre", "diff") in kinds


@pytest.mark.parametrize("members", [(config.Member(OWNER["id"], "owner", "Owner"),)])
async def test_the_verdict_names_the_username_not_the_config_label(chat, hook_reply):
    # setup stores the private chat's title ("Owner", a first name) as the owner's label
    path, _sock = hook_reply
    session = chat.start("jim")
    chat.feed(session, "UserPromptSubmit", prompt="run the tests", prompt_id="p1")
    _ask(chat, session, reply_addr=path)
    message = await _request_message(chat)
    await chat.fake.user_taps(message["message_id"], _buttons(message)["✅ Allow"])
    edited = await chat.fake.wait_for("editMessageText", lambda p: "Allowed by" in p["text"])
    assert "Allowed by @owner ·" in edited["text"], edited["text"]


def test_enum_acts_pack_as_the_buttons_already_in_the_chat():
    # aiogram packs an enum member as its value: buttons sent before the acts became
    # enums keep working, and suggestion i of a request is act "s<i>".
    from aipager.bot.callbacks import (SCOPES, QuestionAct, QuestionTap, RequestAct,
                                       SessionAct, Setting, SettingTap)

    assert RequestTap(h=1, act=RequestAct.ALLOW).pack() == "r:1:allow"
    assert [RequestTap(h=1, act=a).pack() for a in SCOPES] == ["r:1:s0", "r:1:s1", "r:1:s2"]
    assert SessionTap(h=2, act=SessionAct.KILL_YES).pack() == "s:2:kill_yes"
    assert QuestionTap(h=3, act=QuestionAct.OTHER).pack() == "q:3:o:0"
    assert SettingTap(name=Setting.DIFFS, value="on").pack() == "set:diffs:on"
    assert RequestTap.unpack("r:1:s2").act is RequestAct.SCOPE_2
    from aipager.texts.render import SCOPES_SHOWN

    assert len(SCOPES) == SCOPES_SHOWN  # every suggestion the daemon offers has its act
    with pytest.raises(ValueError):
        RequestTap.unpack("r:1:allow_everything")


async def test_a_scoped_button_s_verdict_names_what_it_remembered(chat, hook_reply):
    """"📁 Allow, and reads in /srv/data · this session" was reported as "🟢 Always allowed":
    the line that replaces the buttons says the folder and where it is kept, and so does the
    toast, with what Claude Code does with it (reads there stop asking, changes still ask)."""
    path, sock = hook_reply
    session = chat.start("jim")
    folder = {"type": "addDirectories", "directories": ["/srv/data"], "destination": "session"}
    mode = {"type": "setMode", "mode": "acceptEdits", "destination": "session"}
    chat.feed(session, "PermissionRequest", tool_name="Read", tool_use_id="t9",
              tool_input={"file_path": "/srv/data/a.csv"}, aipager_reply_addr=path,
              aipager_request_id="req-t9", permission_suggestions=[folder, mode])
    message = await _request_message(chat, "/srv/data/a.csv")
    tap = await chat.fake.user_taps(message["message_id"],
                                    _buttons(message)["📁 Allow, and reads in /srv/data · this session"])
    reply = json.loads(await asyncio.to_thread(sock.recv, 65536))
    assert reply["decision"] == {"behavior": "allow", "updatedPermissions": [folder]}
    edited = await chat.fake.wait_for("editMessageText", lambda p: "@owner" in p["text"])
    assert "📁 Allow, and reads in /srv/data · this session · chosen by @owner" in edited["text"]
    assert "Always allowed" not in edited["text"]
    toast = await chat.fake.wait_for("answerCallbackQuery",
                                     lambda p: p["callback_query_id"] == tap)
    assert toast["text"] == ("Allowed. For this session only, reads in /srv/data no longer ask; "
                             "a change there still asks.")


async def test_in_auto_mode_its_own_dialog_holds_a_message_and_offers_no_allow(chat):
    """Auto mode's Bash dialog: "✅ Allow" once pressed "1" on a dialog listing "No" first,
    the dialog stayed, and a message sent during that hang was typed into it (👀, then
    nothing).  Now the request names the command, answers only in the terminal, and a
    message waits for it."""
    session = chat.start("jim")
    chat.feed(session, "UserPromptSubmit", prompt="clean up", prompt_id="p1",
              permission_mode="auto")
    chat.feed(session, "PreToolUse", tool_name="Bash", tool_use_id="t5",
              tool_input={"command": "rm -rf build", "description": "clean"})
    chat.feed(session, "Notification", notification_type="permission_prompt",
              message="Claude needs your permission to use Bash")
    message = await _request_message(chat, "only in the terminal")
    assert "rm -rf build" in message["text"] and "cannot be undone" in message["text"]
    assert set(_buttons(message)) == {"⏹ Stop"}
    assert "only in the terminal" in message["text"]
    await chat.fake.user_says("and also the cache")
    await chat.fake.wait_for("sendMessage", lambda p: "Held for jim" in str(p["text"]))
    assert chat.sessions.typed == []
    # answered at the computer: the call ran, the held message goes in
    chat.feed(session, "PostToolUse", tool_name="Bash", tool_use_id="t5",
              tool_input={"command": "rm -rf build", "description": "clean"})
    typed = await eventually(lambda: chat.sessions.typed, what="the held message typed")
    assert "and also the cache" in typed[0][1]
