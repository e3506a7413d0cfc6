"""The interactive TUI in dtach: typed prompts, the status line, session end."""

from __future__ import annotations

import json
import os

import pytest

from e2e.kit.sequences import record
from fakes import anthropic as fa

# Runs by default (scripts/test.sh); `-m 'not e2e'` leaves it out of a quick loop.
pytestmark = pytest.mark.e2e

SESSION = "claude-e2e"


def test_typed_prompt_runs_and_status_line_writes_its_file(dtach_session, fake_anthropic,
                                                           hook_socket, claude_home):
    fake_anthropic.script("E2E-TUI", fa.text("Typed prompt answered.", input_tokens=5000))
    tui = dtach_session()

    tui.type("E2E-TUI hello from the keyboard")

    submit = hook_socket.wait_event("UserPromptSubmit")
    assert submit["prompt"] == "E2E-TUI hello from the keyboard"
    stop = hook_socket.wait_event("Stop")
    assert stop["last_assistant_message"] == "Typed prompt answered."
    tui.wait_shown("Typed prompt answered.")
    # The status line ran in the session: its file holds Claude Code's raw status JSON and a
    # statusline datagram named the session.
    line = hook_socket.wait_for(lambda e: e.get("type") == "statusline", what="statusline")
    assert line["session"] == SESSION
    assert line["session_id"] == submit["session_id"]
    with open(claude_home.status_file(), encoding="utf-8") as fh:
        status = json.load(fh)
    assert status["session_id"] == submit["session_id"]
    assert "context_window" in status and status["version"] == "2.1.328"

    tui.type("/exit")

    end = hook_socket.wait_event("SessionEnd")
    assert end["session"] == SESSION
    names = hook_socket.names()
    assert names[0] == "SessionStart" and names.count("UserPromptSubmit") == 1
    assert tui.wait_exit(15) is not None, "claude did not exit after /exit"
    record("tui_prompt", hook_socket.raw)


def _order(names: list[str], *expected: str) -> None:
    it = iter(names)
    missing = [n for n in expected if n not in it]
    assert not missing, f"{expected} not in order within {names}"


def test_permission_dialog_answered_at_the_terminal(dtach_session, fake_anthropic, hook_socket,
                                                    claude_home):
    target = os.path.join(claude_home.project, "approved")
    fake_anthropic.script("E2E-TPERM", fa.bash(f"touch {target}"), fa.text("Approved and done."))
    # nobody answers the hook's reply wait: a short one, then Claude Code draws its dialog
    claude_home.extra_env["AIPAGER_PERMISSION_REPLY_DEADLINE"] = "1"
    tui = dtach_session("--permission-mode", "default")  # nothing pre-allowed

    tui.type("E2E-TPERM make it")

    request = hook_socket.wait_event("PermissionRequest")
    assert request["tool_name"] == "Bash" and request["tool_input"]["command"] == f"touch {target}"
    timeout = hook_socket.wait_event("permission_reply_timeout")
    assert (timeout["session"], timeout["aipager_request_id"]) == (SESSION, request["aipager_request_id"])
    note = hook_socket.wait_event("Notification", notification_type="permission_prompt")
    assert note["session"] == SESSION
    tui.wait_shown("Do you want to proceed?")
    assert not os.path.exists(target)

    tui.press_until(b"1", lambda: bool(hook_socket.hook_events("PostToolUse")))

    hook_socket.wait_event("Stop")
    assert os.path.exists(target)
    _order(hook_socket.names(), "UserPromptSubmit", "PreToolUse", "PermissionRequest",
           "Notification", "PostToolUse", "Stop")
    record("tui_permission", hook_socket.raw)


def test_question_answered_at_the_terminal(dtach_session, fake_anthropic, hook_socket):
    question = {"questions": [{
        "question": "Which colour should the button be?", "header": "Colour", "multiSelect": False,
        "options": [{"label": "Green", "description": "calm"},
                    {"label": "Red", "description": "loud"}],
    }]}
    fake_anthropic.script("E2E-TASK", fa.tool("AskUserQuestion", question), fa.text("Green it is."))
    tui = dtach_session("--permission-mode", "default", "--allowedTools", "Bash")

    tui.type("E2E-TASK pick one")

    asked = hook_socket.wait_event("PreToolUse", tool_name="AskUserQuestion")
    assert asked["tool_input"]["questions"][0]["header"] == "Colour"
    tui.wait_shown("Which colour should the button be?")

    # The first option (Green) is preselected.
    tui.press_until(b"\r", lambda: bool(hook_socket.hook_events("PostToolUse")))

    done = hook_socket.wait_event("PostToolUse", tool_name="AskUserQuestion")
    assert "Green" in json.dumps(done["tool_response"])
    assert hook_socket.wait_event("Stop")["last_assistant_message"] == "Green it is."
    record("tui_question", hook_socket.raw)


def test_compact_in_the_tui(dtach_session, fake_anthropic, hook_socket):
    fake_anthropic.script("E2E-TCOMPACT", fa.text("Something to compact."))
    tui = dtach_session("--permission-mode", "default")
    tui.type("E2E-TCOMPACT say something")
    hook_socket.wait_event("Stop")

    tui.type("/compact")

    pre = hook_socket.wait_event("PreCompact")
    assert pre["trigger"] == "manual"
    hook_socket.wait_event("PostCompact")
    restarted = hook_socket.wait_event("SessionStart", source="compact")
    assert restarted["session"] == SESSION
    # 2.1.328 restarts the session (SessionStart source=compact) before PostCompact.
    _order(hook_socket.names(), "Stop", "PreCompact", "SessionStart", "PostCompact")
    record("tui_compact", hook_socket.raw)
