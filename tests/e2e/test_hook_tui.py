"""The interactive TUI in dtach: typed prompts, the status line, session end."""

from __future__ import annotations

import json

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
