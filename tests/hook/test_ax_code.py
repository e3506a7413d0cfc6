"""aipager-hook as an AX Code lifecycle hook (``"protocol": "claude-code"``).

AX Code (spec seeds/004) runs the hook with ``HOOK_EVENT``, ``HOOK_TOOL``,
``HOOK_SESSION_ID`` and ``HOOK_ARGS_STDIN=1`` in a sanitized environment that
keeps ordinary variables (so ``CLAUDE_DTACH_SESSION`` reaches the hook).  For
PreToolUse and UserPromptSubmit it decodes the answer with Claude Code's
semantics: exit 2 blocks; exit 0 with a ``permissionDecision`` (flat, or the
nested ``hookSpecificOutput`` alias) allows or denies; anything else is a
non-blocking error.  ``ax_decode`` is that decoder, strict: an answer AX would
read as an error fails the test, so the hook may print valid JSON or nothing.

Every test runs the installed native binary and the Python twin.
"""

from __future__ import annotations

import json
import os

import pytest
from support import hookrun

from aipager.policy import hookside, notes, snapshot

SESSION = "claude-ax"
AX_SESSION_ID = "ses_01JAXCODE"
SUDO = {"command": "sudo rm -rf /var/lib/thing", "description": "clean up"}


def ax_env(event: str, tool: str = "", args: dict | None = None, **extra: str) -> dict:
    """The environment AX Code gives a hook command (spec: HOOK_* variables)."""
    return hookrun.hook_env(
        SESSION,
        HOOK_EVENT=event,
        HOOK_TOOL=tool,
        HOOK_SESSION_ID=AX_SESSION_ID,
        HOOK_ARGS_JSON=json.dumps(args or {}),
        HOOK_ARGS_STDIN="1",
        HOOK_PACK="",
        **extra,
    )


def ax_decode(res: hookrun.Result) -> tuple[str, str]:
    """``("block" | "allow", reason)`` as AX Code reads a claude-code PreToolUse answer.

    Fails the test when AX would log the answer as a non-blocking error (a
    nonzero exit other than 2, or stdout that is neither empty nor a decision).
    """
    if res.exit == 2:
        return "block", res.stderr.decode().strip()
    assert res.exit == 0, f"AX reads exit {res.exit} as an error: {res.stderr!r}"
    text = res.stdout.decode().strip()
    if not text:
        return "allow", ""
    doc = json.loads(text)  # malformed stdout: AX would not see a decision
    assert isinstance(doc, dict)
    nested = doc.get("hookSpecificOutput") or {}
    decision = doc.get("permissionDecision") or nested.get("permissionDecision")
    reason = doc.get("reason") or nested.get("permissionDecisionReason") or ""
    assert decision in ("allow", "deny", "ask"), doc
    return ("block" if decision == "deny" else decision), reason


def telegram_task(env: dict, role: str) -> None:
    """The snapshot of a task a chat member with ``role`` started (via their note)."""
    notes.write_note(env, SESSION, msg_id=41, chat_id=-100777, author_user_id=7,
                     author_label="ana", role=role, text="tidy the server")
    taken = notes.list_notes(env, SESSION)
    snapshot.write(env, SESSION, hookside.task_rules(env, taken, [], 1.0))


def terminal_task(env: dict) -> None:
    snapshot.write(env, SESSION, hookside.task_rules(env, [], [], 1.0))


def run(kind: str, stdin: dict, env: dict, receiver) -> hookrun.Result:
    return hookrun.run(hookrun.contender_cmd(kind, "hook"), json.dumps(stdin).encode(),
                       env, receiver)


def forwarded(res: hookrun.Result, name: str) -> list[dict]:
    return [d for d in res.sent if d.get("hook_event_name") == name]


# ------------------------------------------------- Claude-shaped stdin, AX env
# A payload without hook_event_name and with AX's lowercase tool id: the name
# comes from $HOOK_EVENT, the tool is matched case-insensitively.

CLAUDE_SHAPED = {"session_id": AX_SESSION_ID, "tool_name": "bash", "tool_input": SUDO}


def test_telegram_user_sudo_is_denied_in_a_form_ax_accepts(kind, receiver, tmp_path):
    env = ax_env("PreToolUse", "bash", SUDO)
    telegram_task(env, "user")
    res = run(kind, dict(CLAUDE_SHAPED, cwd=str(tmp_path)), env, receiver)

    assert ax_decode(res)[0] == "block"
    # exit 0 + the nested alias, exactly as Claude Code reads it too
    assert res.exit == 0
    out = json.loads(res.stdout)["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    assert out["permissionDecisionReason"].startswith("aipager safety policy: ")
    assert out["hookEventName"] == "PreToolUse"
    # the event reaches the daemon named, and the block is reported
    [event] = forwarded(res, "PreToolUse")
    assert event["session"] == SESSION and event["tool_name"] == "bash"
    [blocked] = forwarded(res, "safety_blocked")
    assert blocked["session"] == SESSION and blocked["tool"] == "bash"
    assert snapshot.read(env, SESSION)["halted"]


def test_terminal_task_is_allowed_with_empty_stdout(kind, receiver, tmp_path):
    env = ax_env("PreToolUse", "bash", SUDO)
    terminal_task(env)
    res = run(kind, dict(CLAUDE_SHAPED, cwd=str(tmp_path)), env, receiver)

    assert (res.exit, res.stdout) == (0, b"")  # AX reads any other text as a failure
    assert ax_decode(res) == ("allow", "")
    assert len(forwarded(res, "PreToolUse")) == 1
    assert forwarded(res, "safety_blocked") == []


def test_outside_an_aipager_session_the_hook_is_silent(kind, receiver, tmp_path):
    # AX started by hand (no CLAUDE_DTACH_SESSION): never in AX's way
    env = ax_env("PreToolUse", "bash", SUDO, CLAUDE_DTACH_SESSION=None)
    res = run(kind, dict(CLAUDE_SHAPED, cwd=str(tmp_path)), env, receiver)
    assert (res.exit, res.stdout, res.sent) == (0, b"", [])


# ------------------------------------------ observation-only events (AX only)


@pytest.mark.parametrize("event, stdin", [
    ("Interrupt", {"sessionID": AX_SESSION_ID, "reason": "user", "time": 1764680000123}),
    ("PostCompact", {"sessionID": AX_SESSION_ID, "time": 1764680000456}),
    ("Interrupt", {}),
])
def test_observation_events_are_forwarded_with_session(kind, receiver, event, stdin):
    res = run(kind, stdin, ax_env(event, "", stdin), receiver)
    assert (res.exit, res.stdout) == (0, b"")
    [sent] = res.sent
    assert sent["hook_event_name"] == event
    assert sent["session"] == SESSION
    assert {k: sent[k] for k in stdin} == stdin


# ------------------------------------------------- AX's own stdin: the arguments
# Spec 004: "HOOK_ARGS_STDIN=1 - the complete JSON arguments are always
# available on stdin" and HOOK_ARGS_JSON holds the same tool arguments: AX
# writes the tool's arguments to stdin, not a Claude Code payload; the tool id
# is only in $HOOK_TOOL.  The hook must judge that call, not fail closed on it.


def test_ax_arguments_on_stdin_are_judged_by_the_rules(kind, receiver, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # AX runs hooks in the project folder
    env = ax_env("PreToolUse", "bash", {"command": "ls -la"})
    telegram_task(env, "admin")  # the floor only: ls is fine, sudo is not
    allowed = run(kind, {"command": "ls -la"}, env, receiver)
    assert ax_decode(allowed) == ("allow", ""), allowed.stdout

    env = ax_env("PreToolUse", "bash", SUDO)
    denied = run(kind, SUDO, env, receiver)
    decision, reason = ax_decode(denied)
    assert decision == "block"
    assert "sudo" in reason, reason  # the floor's rule, not "the check failed"
    [blocked] = forwarded(denied, "safety_blocked")
    assert blocked["tool"] == "bash" and blocked["session"] == SESSION


def test_ax_arguments_of_a_write_are_checked_against_the_paths(kind, receiver, tmp_path):
    env = ax_env("PreToolUse", "write")
    telegram_task(env, "user")
    target = os.path.join(hookrun.hook_env()["HOME"], ".ssh", "authorized_keys")
    args = {"filePath": target, "content": "ssh-ed25519 AAAA attacker"}
    res = run(kind, args, dict(env, HOOK_ARGS_JSON=json.dumps(args)), receiver)
    decision, reason = ax_decode(res)
    assert decision == "block"
    assert "the check failed" not in reason, reason
