"""The daemon's port (``aipager.port.backend``) as ``Daemon`` implements it: typed outcomes,
the keystroke fallback taken by the daemon itself, one verdict per request.

The real ``Daemon`` with its event core; the terminal is ``fakes.sessionio.FakeSessions``
(it records the keys a dialog would get)."""

from __future__ import annotations

import inspect
import os

import orjson
import pytest
from fakes.sessionio import FakeSessions
from support.screens import rows

from aipager.daemon import dialogkeys
from aipager.port import backend as port
from aipager.daemon.app import Daemon
from aipager.port.outputs import RecordingNotifier
from aipager.port.backend import (Already, ByKeys, DaemonPort, Gone, InTerminal, KeysFailed,
                                 Who)
from aipager.daemon.terminal import ESCAPE

S = "claude-jim"
ALICE = Who("@alice", 42, "admin")


@pytest.fixture
def rig():
    notifier = RecordingNotifier()
    sessions = FakeSessions()
    sessions.live.add(S)
    daemon = Daemon(dict(os.environ), notifier=notifier, session_io=sessions)
    daemon.core.feed({"hook_event_name": "UserPromptSubmit", "session": S, "prompt": "go"})
    yield daemon, notifier, sessions
    daemon.journal.close()


def _permission(daemon: Daemon, tool: str = "Bash", tool_input: dict | None = None) -> str:
    """A PermissionRequest whose hook no longer waits (no reply address): keys answer it."""
    daemon.core.feed({"hook_event_name": "PermissionRequest", "session": S, "tool_name": tool,
                      "tool_use_id": "toolu_1", "tool_input": tool_input or {"command": "ls"}})
    daemon.session_io.screens[S] = rows("permission_bash")  # its dialog, as drawn
    return daemon.core.registry.get(S).requests[0].key


def _question(daemon: Daemon, questions: list[dict]) -> str:
    ev = {"session": S, "tool_name": "AskUserQuestion", "tool_use_id": "q1",
          "tool_input": {"questions": questions}}
    daemon.core.feed({"hook_event_name": "PreToolUse", **ev})
    daemon.core.feed({"hook_event_name": "PermissionRequest", **ev})
    return daemon.core.registry.get(S).requests[0].key


def _q(text: str, options: list[str], multi: bool = False) -> dict:
    return {"question": text, "header": "", "multiSelect": multi,
            "options": [{"label": o, "description": ""} for o in options]}


def test_the_daemon_offers_everything_the_port_names(rig) -> None:
    """Each member of the Protocol exists on ``Daemon`` with the same parameters (mypy
    checks the types where the composition root hands a Daemon to the chat)."""
    daemon = rig[0]
    members = [n for n in vars(DaemonPort) if not n.startswith("_")]
    assert {"answer_request", "answer_question", "start_session", "type_prompt",
            "sessions", "env"} <= set(members)
    for name in members:
        ours = getattr(DaemonPort, name)
        assert hasattr(daemon, name), f"Daemon lacks the port's {name}"
        theirs = getattr(Daemon, name, None)
        if inspect.isfunction(ours):
            assert list(inspect.signature(theirs).parameters) == \
                list(inspect.signature(ours).parameters), name


async def test_no_hook_waits_so_the_daemon_presses_the_dialogs_keys(rig) -> None:
    daemon, notifier, sessions = rig
    key = _permission(daemon)

    assert await daemon.answer_request(S, key, "allow_always", ALICE) == ByKeys()

    assert sessions.keys == [(S, dialogkeys.permission("allow_always"))]
    [said] = notifier.of("request_answered", S)
    assert said.data == {"key": key, "request_id": "", "via": "keys", "answer": "allow_always",
                         "who": "@alice", "scope": {}, "edited": ""}
    # a second tap presses nothing
    assert await daemon.answer_request(S, key, "deny", Who("@bob")) == Already()
    assert len(sessions.keys) == 1
    with open(daemon.audit.path, "rb") as fh:
        [record] = [orjson.loads(line) for line in fh]
    assert (record["via"], record["who"], record["who_id"], record["role"]) == \
        ("keystroke_fallback", "@alice", 42, "admin")


async def test_no_key_is_pressed_when_the_screen_shows_no_dialog(rig) -> None:
    """Answered at the computer meanwhile: the input line is back.  "1" would be typed as
    text and Esc would interrupt the running task: nothing is pressed, the tap is told."""
    daemon, notifier, sessions = rig
    key = _permission(daemon)
    sessions.screens[S] = rows("idle")
    for kind in ("allow", "deny"):
        outcome = await daemon.answer_request(S, key, kind, ALICE)
        assert isinstance(outcome, KeysFailed) and "not on the screen" in outcome.reason
    assert sessions.keys == []
    assert not daemon.core.registry.get(S).requests[0].answered  # still open to a tap


async def test_keys_that_cannot_be_pressed_leave_the_request_open_to_another_tap(rig) -> None:
    daemon, notifier, sessions = rig
    key = _permission(daemon)
    sessions.live.clear()

    outcome = await daemon.answer_request(S, key, "allow", ALICE)

    assert isinstance(outcome, KeysFailed) and "not running" in outcome.reason
    assert not notifier.of("request_answered")
    sessions.live.add(S)
    assert await daemon.answer_request(S, key, "allow", ALICE) == ByKeys()
    assert sessions.keys == [(S, [b"1"])]


async def test_a_plan_whose_hook_is_gone_is_left_to_the_terminal(rig) -> None:
    daemon, _, sessions = rig
    key = _permission(daemon, "ExitPlanMode", {"plan": "Paint it."})

    assert await daemon.answer_request(S, key, "allow", ALICE) == InTerminal()
    assert sessions.keys == []
    assert daemon.core.registry.get(S).requests[0].answered == ""


async def test_stop_answers_the_dialog_then_interrupts_once(rig) -> None:
    daemon, _, sessions = rig
    key = _permission(daemon)

    assert await daemon.answer_request(S, key, "stop", ALICE) == ByKeys()

    assert sessions.keys == [(S, [ESCAPE]), (S, [ESCAPE])]
    # a burst of stops presses nothing more
    assert await daemon.stop_session(S) is False
    assert len(sessions.keys) == 2


async def test_unknown_request_and_unknown_answer(rig) -> None:
    daemon, _, sessions = rig
    key = _permission(daemon)
    assert await daemon.answer_request(S, "p:nope:", "allow", ALICE) == Gone()
    assert await daemon.answer_request("claude-nobody", key, "allow", ALICE) == Gone()
    with pytest.raises(ValueError, match="unknown answer"):
        await daemon.answer_request(S, key, "maybe", ALICE)  # type: ignore[arg-type]
    assert sessions.keys == []


async def test_a_request_whose_tool_runs_while_its_keys_go_in_gets_one_verdict(rig) -> None:
    """The PostToolUse can arrive before the daemon has said the keys went in: the close
    carries the answer (never "answered in the terminal"), and nothing else follows."""
    daemon, notifier, sessions = rig
    key = _permission(daemon)
    press = sessions.press

    async def tool_runs_first(session, keys):
        await press(session, keys)
        daemon.core.feed({"hook_event_name": "PostToolUse", "session": S, "tool_name": "Bash",
                          "tool_use_id": "toolu_1", "tool_input": {"command": "ls"}})

    sessions.press = tool_runs_first
    assert await daemon.answer_request(S, key, "allow", ALICE) == ByKeys()

    [closed] = notifier.of("request_closed", S)
    assert (closed.data["via"], closed.data["answer"], closed.data["who"]) == \
        ("keys", "allow", "@alice")
    assert not daemon.core.registry.get(S).requests


async def test_a_question_is_answered_with_its_own_keys(rig) -> None:
    daemon, notifier, sessions = rig
    key = _question(daemon, [_q("Colour?", ["Red", "Blue"]), _q("Size?", ["S", "M", "L"])])
    daemon.core.registry.get(S).requests[0].dialog_at = 1.0  # long on screen

    answers = [dialogkeys.Answer([1]), dialogkeys.Answer([], "extra large")]
    assert await daemon.answer_question(S, key, ALICE, answers) == ByKeys()

    expected = dialogkeys.questions(
        [dialogkeys.Question("Colour?", ("Red", "Blue")),
         dialogkeys.Question("Size?", ("S", "M", "L"))], answers)
    assert sessions.keys == [(S, expected)]
    [said] = notifier.of("request_answered", S)
    assert (said.data["answer"], said.data["who"]) == ("question_answer", "@alice")
    assert await daemon.answer_question(S, key, ALICE, None) == Already()
    assert len(sessions.keys) == 1


async def test_a_question_declined_and_answers_that_do_not_fit(rig) -> None:
    daemon, _, sessions = rig
    key = _question(daemon, [_q("Colour?", ["Red", "Blue"])])
    daemon.core.registry.get(S).requests[0].dialog_at = 1.0
    with pytest.raises(ValueError, match="do not fit"):
        await daemon.answer_question(S, key, ALICE, [])
    assert sessions.keys == []

    assert await daemon.answer_question(S, key, ALICE, None) == ByKeys()
    assert sessions.keys == [(S, [ESCAPE])]
    assert await daemon.answer_question(S, "q:nope", ALICE, None) == Gone()


def test_outcomes_are_a_closed_set_of_frozen_values() -> None:
    kinds = port.Outcome.__args__  # type: ignore[attr-defined]
    assert {k.__name__ for k in kinds} == {"ByHook", "ByKeys", "Already", "Gone", "InTerminal",
                                           "KeysFailed", "Refused"}
    with pytest.raises(AttributeError):
        KeysFailed("x").reason = "y"  # type: ignore[misc]


async def test_auto_modes_own_dialog_is_left_to_the_terminal_but_stop_ends_it(rig) -> None:
    daemon, notifier, sessions = rig
    daemon.core.feed({"hook_event_name": "Notification", "session": S,
                      "notification_type": "agent_needs_input", "message": "Claude needs your input"})
    key = daemon.core.registry.get(S).requests[0].key
    assert notifier.of("permission")[-1].data["buttons"] == ["stop"]

    assert await daemon.answer_request(S, key, "allow", ALICE) == InTerminal()
    assert sessions.keys == []
    assert await daemon.answer_request(S, key, "stop", ALICE) == ByKeys()
    assert sessions.keys == [(S, [ESCAPE]), (S, [ESCAPE])]
