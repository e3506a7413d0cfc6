"""An MCP server's form (Claude Code's Elicitation hook, payload recorded from the real
2.1.328 in tests/fixtures/elicitation.json) as the daemon keeps and answers it: a ``form``
output with its fields, an answer checked against them and sent to the hook waiting on a
real datagram socket, the hook giving up, the server's tool call closing it."""

from __future__ import annotations

import copy
import json
import os

import orjson
import pytest

from aipager.daemon import replies
from aipager.daemon.app import Daemon
from aipager.port.model import State
from aipager.port.backend import Already, ByHook, Gone, InTerminal, Refused, Who

from daemon.test_replies import RID, S, HookSocket

HERE = os.path.dirname(__file__)
ALICE = Who("@alice", 1, "owner")


@pytest.fixture
def hook():
    sock = HookSocket()
    yield sock
    sock.close()


def elicitation(reply_addr: str, **changes: object) -> dict:
    with open(os.path.join(HERE, "..", "fixtures", "elicitation.json"), encoding="utf-8") as fh:
        ev = json.load(fh)
    ev.update(session=S, aipager_request_id=RID, aipager_reply_addr=reply_addr)
    ev.update(changes)
    return ev


def _asked(core, ev: dict) -> str:
    core.feed({"hook_event_name": "UserPromptSubmit", "session": S, "prompt": "release it"})
    core.feed({"hook_event_name": "PreToolUse", "session": S, "tool_name": "mcp__releaser__ask",
               "tool_use_id": "toolu_mcp", "tool_input": {}})
    core.feed(ev)
    return core.registry.get(S).requests[0].key


def test_a_form_is_a_request_with_its_fields(core, notifier, hook: HookSocket) -> None:
    key = _asked(core, elicitation(hook.path))
    sess = core.registry.get(S)
    assert sess.state == State.WAITING
    (out,) = notifier.of("form", S)
    assert out.data["key"] == key and out.data["server"] == "releaser"
    assert out.data["message"] == "Where should the release go?"
    assert [f["name"] for f in out.data["fields"]] == ["channel", "note", "replicas", "notify"]
    assert out.data["reply_addr"] == hook.path
    assert "releaser asks: Where should the release go?" in out.text
    # the same event again (a journal replay) shows nothing new
    core.feed(elicitation(hook.path))
    assert len(notifier.of("form", S)) == 1


async def test_an_accepted_form_reaches_the_hook_checked_and_in_order(hook: HookSocket) -> None:
    daemon = Daemon(dict(os.environ))
    key = _asked(daemon.core, elicitation(hook.path))

    got = await daemon.answer_form(S, key, ALICE, "accept",
                                   {"replicas": 3, "channel": "beta", "notify": False})

    assert got == ByHook()
    (data,) = hook.received()
    assert data == (b'{"v":1,"request_id":"' + RID.encode() + b'","elicitation":{"action":"accept",'
                    b'"content":{"channel":"beta","replicas":3,"notify":false}}}')
    sess = daemon.core.registry.get(S)
    assert sess.requests == [] and sess.state == State.WORKING
    assert await daemon.answer_form(S, key, ALICE, "decline", {}) == Gone()
    with open(daemon.audit.path, "rb") as fh:
        (record,) = [orjson.loads(line) for line in fh]
    assert (record["action"], record["answer"], record["server"]) == ("form_answer", "accept",
                                                                      "releaser")
    # which fields, never their values (a form may ask for anything)
    assert record["fields"] == ["channel", "notify", "replicas"] and b"beta" not in orjson.dumps(record)


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_decline_and_cancel_send_no_content(hook: HookSocket, action: str) -> None:
    daemon = Daemon(dict(os.environ))
    key = _asked(daemon.core, elicitation(hook.path))
    assert await daemon.answer_form(S, key, ALICE, action, {"channel": "beta"}) == ByHook()
    assert orjson.loads(hook.received()[0])["elicitation"] == {"action": action}


@pytest.mark.parametrize(("content", "why"), [
    ({"channel": "beta"}, "Replicas: required"),
    ({"channel": "beta", "replicas": 12}, "at most 9"),
    ({"channel": "beta", "replicas": 2, "sudo": True}, "no field"),
])
async def test_an_answer_that_does_not_fit_is_refused_and_nothing_sent(
        hook: HookSocket, content: dict, why: str) -> None:
    daemon = Daemon(dict(os.environ))
    key = _asked(daemon.core, elicitation(hook.path))
    got = await daemon.answer_form(S, key, ALICE, "accept", content)
    assert isinstance(got, Refused) and why in got.reason
    assert hook.received() == []
    assert daemon.core.registry.get(S).requests[0].answered == ""


async def test_when_the_hook_gave_up_the_form_is_in_the_terminal(notifier, core,
                                                                  hook: HookSocket) -> None:
    key = _asked(core, elicitation(hook.path))
    notifier.clear()
    core.feed({"hook_event_name": "permission_reply_timeout", "session": S,
               "aipager_request_id": RID})
    (out,) = notifier.of("form", S)
    assert out.data["reply_addr"] == "" and out.data["fields"] == []
    assert "answer it at the computer" in out.text
    req = core.registry.get(S).requests[0]
    assert req.key == key and req.reply_addr == ""


async def test_an_answer_after_the_hook_gave_up_sends_nothing(hook: HookSocket) -> None:
    daemon = Daemon(dict(os.environ))
    key = _asked(daemon.core, elicitation(hook.path))
    daemon.core.feed({"hook_event_name": "permission_reply_timeout", "session": S,
                      "aipager_request_id": RID})
    assert await daemon.answer_form(S, key, ALICE, "decline", {}) == InTerminal()
    assert hook.received() == []


def test_the_servers_tool_result_closes_the_form(core, notifier, hook: HookSocket) -> None:
    key = _asked(core, elicitation(hook.path))
    core.feed({"hook_event_name": "PostToolUse", "session": S, "tool_name": "mcp__releaser__ask",
               "tool_use_id": "toolu_mcp", "tool_input": {}, "tool_response": "ok"})
    assert core.registry.get(S).requests == []
    assert notifier.of("request_closed", S)[-1].data["key"] == key


def test_a_form_the_phone_cannot_ask_is_shown_as_in_the_terminal(core, notifier,
                                                                 hook: HookSocket) -> None:
    ev = elicitation(hook.path)
    ev["requested_schema"] = copy.deepcopy(ev["requested_schema"])
    ev["requested_schema"]["properties"]["tags"] = {"type": "array", "items": {"type": "string"}}
    _asked(core, ev)
    (out,) = notifier.of("form", S)
    assert out.data["fields"] == [] and out.data["reply_addr"] == ""
    assert core.registry.get(S).requests[0].terminal_only


async def test_a_second_answer_is_already(hook: HookSocket) -> None:
    daemon = Daemon(dict(os.environ))
    key = _asked(daemon.core, elicitation(hook.path))
    req = daemon.core.registry.get(S).requests[0]
    req.answered = "form_accept"  # answered a moment ago, its close not yet seen
    assert await daemon.answer_form(S, key, ALICE, "cancel", {}) == Already()
    assert hook.received() == []


def test_the_reply_datagram_is_one_the_hook_accepts() -> None:
    data = replies.form_datagram(RID, "accept", {"note": "“quoted” ✓"})
    assert orjson.loads(data) == {"v": 1, "request_id": RID, "elicitation": {
        "action": "accept", "content": {"note": "“quoted” ✓"}}}


def test_an_answer_sent_as_the_hook_gave_up_leaves_the_form_in_the_terminal(
        core, notifier, hook: HookSocket) -> None:
    """The hook's timeout names a form an answer had just closed: it never read the answer,
    so the form opens again, shown as waiting in the terminal, and the phone is told."""
    key = _asked(core, elicitation(hook.path))
    sess = core.registry.get(S)
    assert replies.answer_form(core.ctx, sess, sess.requests[0], "decline", None,
                               "@alice") == replies.VIA_HOOK
    assert sess.requests == []
    notifier.clear()
    core.feed({"hook_event_name": "permission_reply_timeout", "session": S,
               "aipager_request_id": RID})
    (req,) = sess.requests
    assert (req.key, req.answered, req.reply_addr) == (key, "", "")
    (shown,) = notifier.of("form", S)
    assert shown.data["reply_addr"] == "" and "answer it at the computer" in shown.text
    assert notifier.notices("late_tap")
