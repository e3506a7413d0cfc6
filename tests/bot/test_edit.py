"""Edit then allow from the chat: ✏️ on a request, the next message is the corrected
command, and the waiting hook gets it as ``updatedInput`` only when the policy allows it.

A team group (owner, admin) on the real chat (aiogram over HTTP to the fake Bot API, the
real Daemon); the waiting hook is a bound datagram socket."""

from __future__ import annotations

import json
import os
import socket

import pytest
from bot.conftest import eventually
from bot.test_team import GROUP, PEOPLE, group, members

from aipager.proto import paths

__all__ = ["group", "members"]  # the team's fixtures, imported to apply here


@pytest.fixture
def hook_reply():
    path = os.path.join(os.environ["AIPAGER_INSTANCE_DIR"], "reply-e.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.setblocking(False)
    yield path, sock
    sock.close()


def _received(sock) -> list[dict]:
    got = []
    while True:
        try:
            got.append(json.loads(sock.recv(65536)))
        except BlockingIOError:
            return got


async def _request(chat, reply_addr: str) -> dict:
    session = chat.start("jim")
    chat.feed(session, "UserPromptSubmit", prompt="deploy", prompt_id="p1")
    chat.feed(session, "PermissionRequest", tool_name="Bash", tool_use_id="t1", cwd="/srv/app",
              tool_input={"command": "make deploy", "description": "Deploy"},
              aipager_request_id="rid-e", aipager_reply_addr=reply_addr)
    await chat.fake.wait_for("sendMessage", lambda p: "make deploy" in str(p["text"]))
    return next(m for m in chat.fake.bot_messages(GROUP)
                if "make deploy" in m["text"] and m.get("reply_markup"))


def _buttons(message: dict) -> dict[str, str]:
    return {b["text"]: b["callback_data"] for row in message["reply_markup"]["inline_keyboard"]
            for b in row}


async def _edit(chat, who: str, message: dict, corrected: str) -> dict:
    await chat.fake.user_taps(message["message_id"], _buttons(message)["✏️ Edit"],
                              user=PEOPLE[who], chat_id=GROUP)
    await chat.fake.wait_for("sendMessage", lambda p: "the corrected command" in str(p["text"]))
    ask = next(m for m in chat.fake.bot_messages(GROUP) if "the corrected command" in m["text"])
    assert ask["text"].startswith("✏️ Reply to this message")  # a group: the bot reads replies
    return await chat.fake.user_says(corrected, user=PEOPLE[who], chat_id=GROUP,
                                     reply_to=ask["message_id"])


def _audit(chat) -> list[dict]:
    try:
        with open(paths.audit_log(chat.bot.env), "rb") as fh:
            return [json.loads(line) for line in fh]
    except FileNotFoundError:
        return []


async def test_the_corrected_command_is_what_the_hook_runs(chat, hook_reply):
    path, sock = hook_reply
    message = await _request(chat, path)
    assert "✏️ Edit" in _buttons(message)

    sent = await _edit(chat, "admin", message, "make deploy ENV=staging")

    await eventually(lambda: _received(sock) or None, what="the decision")  # drains it
    await eventually(lambda: any(r.get("edited_input") for r in _audit(chat)))
    [record] = [r for r in _audit(chat) if r.get("action") == "permission_answer"]
    assert record["edited_input"] == {"command": "make deploy ENV=staging",
                                      "description": "Deploy"}
    assert record["who"] == "@adam" and record["role"] == "admin"
    await eventually(lambda: chat.fake.reactions.get((GROUP, sent["message_id"])) == ["👌"],
                     what="👌 on the correction")
    shown = chat.fake.message(GROUP, message["message_id"])["text"]
    # who edited it, and what ran instead of the command shown above
    assert "\n✏️ Edited by @adam · " in shown
    assert shown.endswith(", and allowed with this instead:\nmake deploy ENV=staging")


async def test_an_edit_past_the_floor_is_refused_and_the_request_stays(chat, hook_reply):
    path, sock = hook_reply
    message = await _request(chat, path)

    await _edit(chat, "admin", message, "sudo make deploy")

    said = await chat.fake.wait_for("sendMessage", lambda p: "Not allowed" in str(p["text"]))
    assert "sudo" in said["text"] or "safety policy" in said["text"]
    assert _received(sock) == []
    assert chat.daemon.core.registry.get("claude-jim").requests[0].answered == ""
    assert [r["action"] for r in _audit(chat)] == ["edit_refused"]
    # the buttons still answer it
    await chat.fake.user_taps(message["message_id"], _buttons(message)["✅ Allow"],
                              user=PEOPLE["admin"], chat_id=GROUP)
    got = await eventually(lambda: _received(sock) or None, what="the plain allow")
    assert got[0]["decision"] == {"behavior": "allow"}


async def test_a_role_that_may_not_approve_gets_no_edit(chat, hook_reply):
    path, sock = hook_reply
    message = await _request(chat, path)
    query = await chat.fake.user_taps(message["message_id"], _buttons(message)["✏️ Edit"],
                                      user=PEOPLE["read_only"], chat_id=GROUP)
    toast = await chat.fake.wait_for("answerCallbackQuery",
                                     lambda p: p["callback_query_id"] == query)
    assert "may not" in str(toast.get("text"))
    await chat.fake.user_says("rm -rf /", user=PEOPLE["read_only"], chat_id=GROUP)
    assert _received(sock) == []


async def test_an_absolute_path_is_the_corrected_path_not_an_unknown_command(chat, hook_reply):
    """✏️ Edit on a Write asks for the corrected path; "/tmp/…" was taken as "Unknown
    command /tmp/…": the answer the chat asked for wins over command parsing."""
    path, sock = hook_reply
    session = chat.start("jim")
    chat.feed(session, "UserPromptSubmit", prompt="write notes", prompt_id="p1")
    chat.feed(session, "PermissionRequest", tool_name="Write", tool_use_id="t2", cwd="/srv/app",
              tool_input={"file_path": "/srv/app/notes.txt", "content": "hello"},
              aipager_request_id="rid-w", aipager_reply_addr=path)
    await chat.fake.wait_for("sendMessage", lambda p: "/srv/app/notes.txt" in str(p["text"]))
    message = next(m for m in chat.fake.bot_messages(GROUP)
                   if "/srv/app/notes.txt" in m["text"] and m.get("reply_markup"))
    await chat.fake.user_taps(message["message_id"], _buttons(message)["✏️ Edit"],
                              user=PEOPLE["admin"], chat_id=GROUP)
    await chat.fake.wait_for("sendMessage", lambda p: "the corrected path" in str(p["text"]))
    ask = next(m for m in chat.fake.bot_messages(GROUP) if "the corrected path" in m["text"])
    await chat.fake.user_says("/tmp/notes.txt", user=PEOPLE["admin"], chat_id=GROUP,
                              reply_to=ask["message_id"])
    # decided as an edit (allowed, or refused by the policy): never "Unknown command"
    record = await eventually(lambda: next((r for r in _audit(chat) if r.get("action") in (
        "permission_answer", "edit_refused")), None), what="the edit decided")
    assert "/tmp/notes.txt" in json.dumps(record)
    assert not any("Unknown command" in t for t in chat.sent_texts())


async def test_the_edit_button_goes_when_the_hook_stops_waiting(chat, hook_reply):
    """An edited call needs the waiting hook: after its deadline ✏️ Edit stayed and a tap
    on it could only fail."""
    path, sock = hook_reply
    message = await _request(chat, path)
    assert "✏️ Edit" in _buttons(message)
    chat.feed("claude-jim", "permission_reply_timeout", aipager_request_id="rid-e")
    edited = await chat.fake.wait_for(
        "editMessageText", lambda p: "make deploy" in str(p["text"]), timeout=10)
    markup = edited["reply_markup"]
    markup = json.loads(markup) if isinstance(markup, str) else markup
    labels = {b["text"] for row in markup["inline_keyboard"] for b in row}
    assert "✏️ Edit" not in labels and {"✅ Allow", "❌ Deny", "⏹ Stop"} <= labels
