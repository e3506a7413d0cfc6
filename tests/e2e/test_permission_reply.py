"""A permission request answered through the hook's reply socket, in the real Claude Code TUI.

The test plays the daemon's part with its own seam (``aipager.daemon.replies``): it reads
the PermissionRequest the hook forwarded and sends ``decision_for(...)`` to the event's
``aipager_reply_addr``.  Claude Code then acts on the hook's decision without drawing its
own dialog.  (The terminal path, when nobody answers in time, is
``test_hook_tui.py::test_permission_dialog_answered_at_the_terminal``.)
"""

from __future__ import annotations

import json
import os

import pytest

from aipager.daemon import replies
from aipager.port.model import Request
from fakes import anthropic as fa

pytestmark = pytest.mark.e2e

DIALOG = "Do you want to proceed?"


def _tap(request: dict, kind: str) -> None:
    req = Request(key="p:e2e", kind="permission", tool=request["tool_name"], opened_at=0.0,
                  request_id=request["aipager_request_id"],
                  suggestions=request.get("permission_suggestions") or [])
    decision = replies.decision_for(kind, req, "@e2e")
    assert replies.send_reply(request["aipager_reply_addr"], request["aipager_request_id"], decision)


def _waited(hook_socket, request: dict) -> None:
    """The hook took the reply: nothing timed out, its socket is gone, no dialog was drawn."""
    assert not [e for e in hook_socket.events if e.get("hook_event_name") == "permission_reply_timeout"]
    assert not os.path.exists(request["aipager_reply_addr"])
    assert not hook_socket.hook_events("Notification")


def _dialog_closed(tui, answer: str) -> None:
    """No dialog waits: Claude Code draws its own dialog while the hook still waits for the
    reply (on a loaded machine the reply can come after it), so what holds is that the
    hook's answer closed it: Claude's answer gets drawn after the dialog's last drawing.
    Drawing lags the Stop hook on a loaded machine, hence the wait."""
    dialog, said = "".join(DIALOG.split()), "".join(answer.split())

    def closed(screen: str) -> bool:
        flat = "".join(screen.split())
        last = flat.rfind(dialog)
        return last == -1 or flat.rfind(said) > last

    tui.wait_screen(closed, 20.0, f"{answer!r} drawn after the last dialog")


def test_allow_from_the_reply_socket_runs_the_command(dtach_session, fake_anthropic, hook_socket,
                                                      claude_home):
    target = os.path.join(claude_home.project, "allowed")
    fake_anthropic.script("E2E-RALLOW", fa.bash(f"touch {target}"), fa.text("Allowed and done."))
    tui = dtach_session("--permission-mode", "default")  # nothing pre-allowed

    tui.type("E2E-RALLOW make it")

    request = hook_socket.wait_event("PermissionRequest")
    assert request["tool_input"]["command"] == f"touch {target}"
    assert os.path.exists(request["aipager_reply_addr"]) and not os.path.exists(target)
    _tap(request, "allow")

    hook_socket.wait_event("PostToolUse", tool_name="Bash")
    assert hook_socket.wait_event("Stop")["last_assistant_message"] == "Allowed and done."
    assert os.path.exists(target)
    _waited(hook_socket, request)
    _dialog_closed(tui, "Allowed and done.")


def test_deny_from_the_reply_socket_keeps_the_command_from_running(dtach_session, fake_anthropic,
                                                                    hook_socket, claude_home):
    target = os.path.join(claude_home.project, "denied")
    fake_anthropic.script("E2E-RDENY", fa.bash(f"touch {target}"), fa.text("Understood, left alone."))
    tui = dtach_session("--permission-mode", "default")

    tui.type("E2E-RDENY make it")

    request = hook_socket.wait_event("PermissionRequest")
    _tap(request, "deny")

    assert hook_socket.wait_event("Stop")["last_assistant_message"] == "Understood, left alone."
    assert not os.path.exists(target)
    assert not hook_socket.hook_events("PostToolUse")
    # the model was told why, in the words of the tap
    results = [r.tool_results() for r in fake_anthropic.requests_with("E2E-RDENY")]
    assert "Denied via aipager by @e2e" in json.dumps(results)
    _waited(hook_socket, request)
    _dialog_closed(tui, "Understood, left alone.")
