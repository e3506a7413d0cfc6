"""The safety policy on the real path: chat messages typed into a session with their
permission notes, and aipager's own ``/model`` switches.

Until the Telegram layer lands, the test plays the daemon's chat side with the daemon's own
typing seam (``DtachIO.type_prompt`` with a note), exactly what a queued chat message does.
"""

from __future__ import annotations

import dataclasses
import asyncio
import os
import re
import stat

import pytest

from aipager.port.model import PromptNote
from aipager.proto import paths
from e2e.kit.daemon import CHAT_ID, OWNER_ID, USER_ID
from e2e.kit.sequences import record
from fakes import anthropic as fa

# Runs by default (scripts/test.sh); `-m 'not e2e'` leaves it out of a quick loop.
pytestmark = pytest.mark.e2e

SESSION = "claude-e2e"
TUI_ARGS = ("--permission-mode", "default", "--allowedTools", "Bash,Write,Edit,Read,Agent")


def _type_from_chat(home, text: str, *, user_id: int, label: str, role: str, msg_id: int) -> None:
    """Type ``text`` as the daemon does for a chat message from ``user_id``."""
    from aipager.daemon import encode
    from aipager.daemon.terminal import DtachIO

    note = PromptNote(msg_id, CHAT_ID, text, user_id, label, role)
    typed = encode.encode(home.aipager_env(), text, note, cwd=home.project).text
    asyncio.run(DtachIO(home.aipager_env()).type_prompt(
        SESSION, typed, note=dataclasses.replace(note, text=typed)))


def _finished(seq: int):
    def pred(sess: dict) -> bool:
        task = sess.get("task") or {}
        return task.get("seq") == seq and bool(task.get("ended_at")) and sess["state"] == "ready"
    return pred


def test_user_task_stopped_by_the_floor_while_the_owners_identical_task_runs(
        daemon, dtach_session, fake_anthropic, claude_home):
    first = os.path.join(claude_home.project, "made-one")
    second = os.path.join(claude_home.project, "made-two")
    prompt = "E2E-GUARD make the two files"
    fake_anthropic.script("E2E-GUARD", fa.bash(f"touch {first}"), fa.bash(f"touch {second}"),
                          fa.text("Guarded task over."))
    dtach_session(*TUI_ARGS)

    _type_from_chat(claude_home, prompt, user_id=USER_ID, label="guest", role="user", msg_id=11)

    sess = daemon.wait_session(_finished(1), 30, "the user's task finished")
    assert sess["task"]["prompt"] == prompt
    assert sess["task"]["blocked"], "the daemon did not record the safety block"
    denied = [b for r in fake_anthropic.requests_with("E2E-GUARD") for b in r.tool_results()]
    assert len(denied) == 2, denied
    assert all(b.get("is_error") and "aipager" in str(b.get("content")) for b in denied), denied
    assert not os.path.exists(first) and not os.path.exists(second)
    blocked = [line for line in daemon.log().splitlines() if f"notice {SESSION}" in line]
    assert blocked, daemon.log()[-2000:]
    assert sess["card"].startswith("🛑 e2e · done; a safety rule refused a tool: "), sess["card"]
    # The audit log holds both denials, naming who asked for the task.
    records = claude_home.audit()
    assert [(r["action"], r["session"], r["tool"], r["task"]) for r in records] == [
        ("safety_blocked", SESSION, "Bash", 1)] * 2, records
    assert all(r["authors"] == [{"user_id": USER_ID, "msg_id": 11, "chat_id": str(CHAT_ID)}]
               for r in records), records
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", r["ts"]) for r in records)
    assert "halted" in records[1]["reason"]
    assert stat.S_IMODE(os.stat(paths.audit_log(claude_home.aipager_env())).st_mode) == 0o600

    _type_from_chat(claude_home, prompt, user_id=OWNER_ID, label="owner", role="owner", msg_id=12)

    sess = daemon.wait_session(_finished(2), 30, "the owner's task finished")
    assert not sess["task"]["blocked"]
    assert os.path.exists(first) and os.path.exists(second)
    assert [r["status"] for r in sess["rows"] if r["task"] == 2] == ["ok", "ok"], sess["rows"]
    assert sess["card"].startswith("✅ e2e · done · "), sess["card"]
    assert len(claude_home.audit()) == 2  # the owner's task added nothing


def test_model_switch_with_aipagers_marker_skips_the_question(daemon, dtach_session,
                                                              fake_anthropic, claude_home):
    from aipager.policy import marker

    fake_anthropic.script("E2E-MODEL", fa.text("Some context first."))
    tui = dtach_session(*TUI_ARGS)
    tui.type("E2E-MODEL hello")
    sess = daemon.wait_session(_finished(1), 30, "the first task finished")

    # Without aipager's marker Claude Code asks (this proves the check below can fail).
    tui.type("/model haiku")
    tui.wait_shown("Switch model?")
    tui.press_until(b"\x1b", lambda: tui.shows("Kept model as Opus"))  # Esc: keep the model
    shown_before = tui.count("Switch model?")

    marker.write_modelswitch_marker(claude_home.aipager_env(), SESSION, "sonnet",
                                    sess["claude_session_id"])
    tui.type("/model sonnet")

    tui.wait_shown("Set model to Sonnet")
    assert not os.path.exists(marker.paths.modelswitch_marker(claude_home.aipager_env(), SESSION))
    assert tui.count("Switch model?") == shown_before
    # The status line reports the new model and the daemon picks it up.
    daemon.wait_session(lambda s: "Sonnet" in (s["model"] or ""), 20, "the model Sonnet")


def test_hook_denies_a_user_members_task_and_reports_safety_blocked(run_claude_p, fake_anthropic,
                                                                    hook_socket, claude_home):
    from aipager.policy import notes

    first = os.path.join(claude_home.project, "never-one")
    second = os.path.join(claude_home.project, "never-two")
    prompt = "E2E-FLOOR make two files"
    fake_anthropic.script("E2E-FLOOR", fa.bash(f"touch {first}"), fa.bash(f"touch {second}"),
                          fa.text("Could not do it."))
    # What the daemon writes before typing a chat message from a `user` member.
    notes.write_note(claude_home.aipager_env(), SESSION, msg_id=21, chat_id=CHAT_ID,
                     author_user_id=USER_ID, author_label="guest", role="user", text=prompt)

    run = run_claude_p(prompt)

    assert run.returncode == 0, run.describe()
    hook_socket.wait_event("SessionEnd")
    pickup = hook_socket.wait_event("queue_pickup")
    assert [(c["msg_id"], c["author_user_id"]) for c in pickup["consumed"]] == [(21, USER_ID)]
    blocked = hook_socket.hook_events("safety_blocked")
    assert [(b["session"], b["tool"]) for b in blocked] == [(SESSION, "Bash")] * 2
    # The first denial halts the task: every later tool call is refused too.
    assert "halted" in blocked[1]["reason"]
    # Both calls reached PreToolUse and were denied: nothing ran, no PostToolUse.
    assert len(hook_socket.hook_events("PreToolUse")) == 2
    assert not hook_socket.hook_events("PostToolUse")
    denied = [b for r in fake_anthropic.requests_with("E2E-FLOOR") for b in r.tool_results()]
    assert len(denied) == 2 and all(b.get("is_error") for b in denied), denied
    assert not os.path.exists(first) and not os.path.exists(second)
    assert not os.listdir(notes.paths.notes_dir(claude_home.aipager_env(), SESSION))
    record("print_safety_blocked", hook_socket.raw)
