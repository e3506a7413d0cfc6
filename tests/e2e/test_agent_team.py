"""An agent team on the real Claude Code 2.1.328: the teammates' permission requests answered
from the chat (issue 47).

With ``CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1`` a session has one implicit team: an ``Agent``
call with a ``name`` spawns a teammate (its result says ``"status": "teammate_spawned"``,
``teammate_id`` ``worker1@session-…``); no TeamCreate or ToolSearch is needed (``team_name``
is "deprecated; ignored").  Without the variable the same call starts a plain background
subagent (``async_launched``, ``agent_type`` general-purpose).  With ``--teammate-mode
in-process`` (what sessions aipager starts get) the teammates run inside the lead's process,
so their PermissionRequest fires through the lead's hooks with ``agent_id`` and
``agent_type`` = the teammate's name (tests/fixtures/events/PermissionRequest-teammate.json).
The lead's turn ends at once (its Stop comes while the teammates still wait); each
teammate's request stays open, labelled with its name, until answered.
"""

from __future__ import annotations

import json
import os
import re

import pytest

from e2e.kit.chat import Phone, buttons, text_of
from fakes import anthropic as fa

pytestmark = pytest.mark.e2e

SESSION = "claude-e2e"
TEAMS = {"CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS": "1"}
#: nothing pre-allowed (the teammates' Bash asks); teammates in process, as in the sessions
#: aipager starts
ARGS = ("--permission-mode", "default", "--teammate-mode", "in-process")
REASON = "not now: worker1 already made one"
HELD = "E2E-HELD hello from the phone"


def _teammate(name: str, key: str) -> fa.Block:
    return fa.Block("tool_use", name="Agent", input={
        "description": f"{name} job", "prompt": f"{key} make your file", "name": name})


def _request(phone: Phone, who: str, command: str) -> dict:
    """The permission message of teammate ``who`` for ``command`` (with its buttons)."""
    return phone.wait_message(
        lambda m: text_of(m).startswith(f"🔐 e2e · {who} · Bash") and command in text_of(m)
        and "✅ Allow" in buttons(m), 60, f"{who}'s permission request")


def _verdict(phone: Phone, message: dict, words: str, timeout: float = 20.0) -> dict:
    pattern = re.compile(rf"\n{re.escape(words)} by @owner · \d\d:\d\d$")
    return phone.wait(lambda snap: next(
        (m for m in phone.messages(snap) if m["message_id"] == message["message_id"]
         and pattern.search(text_of(m)) and not buttons(m)), None),
        timeout, f"the request edited to {words!r}")


def _queued(daemon) -> list[dict]:
    """The phone's message in the daemon's saved queue."""
    sess = daemon.session() or {}
    return [m for m in sess.get("queued_messages") or [] if m.get("text") == HELD]


def test_two_teammates_ask_one_is_allowed_one_denied_with_a_reason_and_a_message_waits(
        daemon, dtach_session, fake_anthropic, fake_telegram, claude_home):
    phone = Phone(fake_telegram)
    claude_home.extra_env.update(TEAMS)
    made = {n: os.path.join(claude_home.project, n) for n in ("w1", "w2")}
    fake_anthropic.script("E2E-TEAMLEAD", fa.Reply([_teammate("worker1", "E2E-WORKER1"),
                                                    _teammate("worker2", "E2E-WORKER2")]),
                          fa.text("Team launched."))
    fake_anthropic.script("E2E-WORKER1", fa.bash(f"touch {made['w1']}"),
                          fa.text("worker1 finished."))
    fake_anthropic.script("E2E-WORKER2", fa.bash(f"touch {made['w2']}"),
                          fa.text("worker2 read the refusal."))
    fake_anthropic.script("E2E-HELD", fa.text("The held message arrived."))
    tui = dtach_session(*ARGS)
    daemon.wait_session(lambda s: s["claude_session_id"] and s["state"] == "ready", 30,
                        "the session ready")

    phone.say("E2E-TEAMLEAD make a team of two")

    # Two requests, each naming its teammate and its command.
    first = _request(phone, "worker1", f"touch {made['w1']}")
    second = _request(phone, "worker2", f"touch {made['w2']}")
    assert "worker2" not in text_of(first) and "worker1" not in text_of(second)
    assert {"✅ Allow", "❌ Deny", "⏹ Stop"} <= set(buttons(first)) & set(buttons(second))
    # the daemon's saved view (written a moment after the chat's): whose each request is
    sess = daemon.wait_session(lambda s: {r["agent_name"] for r in s["requests"]}
                               == {"worker1", "worker2"}, 15, "both teammates' requests saved")
    asking = {r["agent_name"]: r["agent"] for r in sess["requests"]}
    assert all(re.fullmatch(rf"a{name}-[0-9a-f]+", agent) for name, agent in asking.items())
    assert not any(os.path.exists(p) for p in made.values())

    # A message from the phone while the teammates wait: held, never typed into a dialog.
    said = phone.say(HELD)
    phone.wait(lambda snap: any(p.get("text", "").startswith("⏳ Held for e2e: Claude is waiting")
                                for p in phone.replies_to(said["message_id"], snap)), 20,
               "the held line")
    daemon.wait_session(lambda s: [(m["text"], m["status"], m["held_for"])
                                   for m in s["queued_messages"]] == [(HELD, "held", "dialog")],
                        15, "the message saved as held for the dialog")

    # ✅ on worker1's: its command runs (through its waiting hook).
    query = phone.tap(first, "✅ Allow")
    assert phone.toast(query)["text"] == "Allowed"
    _verdict(phone, first, "✅ Allowed")
    phone.wait(lambda _s: os.path.exists(made["w1"]), 30, "worker1's file")
    phone.wait(lambda _s: [b for r in fake_anthropic.requests_with("E2E-WORKER1")
                           for b in r.tool_results() if not b.get("is_error")], 30,
               "worker1 reading its command's result")
    # worker2 still asks: the message still waits, untyped
    assert [m["status"] for m in _queued(daemon)] == ["held"]
    before = len(fake_anthropic.requests)
    assert not fake_anthropic.requests_with("E2E-HELD")
    assert not tui.shows(HELD)

    # A reply to worker2's request: denied with the reply as the reason, which worker2 reads.
    reason = phone.say(REASON, reply_to=second["message_id"])
    _verdict(phone, second, "❌ Denied")
    phone.wait(lambda snap: phone.reactions(reason["message_id"], snap) == ["👌"], 15,
               "the 👌 on the reason")

    def told(_snap: object) -> list[dict]:
        return [b for r in fake_anthropic.requests_with("E2E-WORKER2") for b in r.tool_results()
                if b.get("is_error") and f"Denied via aipager by @owner: {REASON}"
                in json.dumps(b.get("content"))]
    phone.wait(told, 30, "worker2 told the reason")
    assert not os.path.exists(made["w2"])
    results = [b for r in fake_anthropic.requests_with("E2E-WORKER2") for b in r.tool_results()]
    assert len(results) == 1, results  # one call, refused once

    # Both dialogs settled: the held message goes in, to the lead, as a prompt of its own.
    phone.wait(lambda snap: any("The held message arrived." in t for t in phone.sent_texts(snap)),
               40, "the held message's answer")
    held_at = [i for i, r in enumerate(list(fake_anthropic.requests))
               if r.prompt_index("E2E-HELD") is not None]
    assert held_at and held_at[0] >= before, (held_at, before)
    lead = fake_anthropic.requests[held_at[0]]
    assert lead.prompt_index("E2E-TEAMLEAD") is not None  # the lead's conversation
    assert HELD in json.dumps(lead.last_user())
    for key in ("E2E-WORKER1", "E2E-WORKER2"):  # no teammate ever read it
        assert not any(HELD in r.text() for r in fake_anthropic.requests_with(key)), key
    daemon.wait_session(lambda s: not s["queued_messages"] and not s["requests"], 15,
                        "the queue and the requests empty")
    answers = [(r["answer"], r.get("reason", ""), r["via"]) for r in claude_home.audit()
               if r["action"] == "permission_answer"]
    assert answers == [("allow", "", "hook_decision"), ("deny", REASON, "hook_decision")], answers
