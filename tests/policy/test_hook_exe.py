"""The shared case table through the installed aipager-hook (native and twin).

The snapshot file is written by aipager.policy.snapshot, the event goes on
stdin with CLAUDE_DTACH_SESSION and AIPAGER_INSTANCE_DIR set, and the test
reads the decision from stdout and the datagrams from a bound socket.
"""

from __future__ import annotations

import json
import os

import pytest
from support import hookrun
from support.policy_cases import CASE_HOME, case_event, case_snapshot, load_cases

from aipager.proto import paths
from aipager.policy import _match_py, snapshot

NO_NATIVE = os.environ.get("AIPAGER_NO_EXTENSIONS", "") not in ("", "0")
KINDS = ["twin"] if NO_NATIVE else ["native", "twin"]
SESSION = "claude-pol"
CASES = load_cases()


@pytest.fixture(params=KINDS)
def kind(request) -> str:
    if request.param == "native":
        path = hookrun.native_path("hook")
        assert path and hookrun.is_elf(path), "the native aipager-hook must be installed"
    return request.param


@pytest.fixture
def env():
    return hookrun.hook_env(SESSION, HOME=CASE_HOME)


@pytest.fixture
def receiver(env):
    recv = hookrun.Receiver(paths.socket_path(env))
    yield recv
    recv.close()


def run_hook(kind: str, env: dict, event: dict, receiver) -> tuple[str, str, hookrun.Result]:
    """``(decision, reason, result)`` as Claude Code would read them."""
    res = hookrun.run(hookrun.contender_cmd(kind, "hook"), json.dumps(event).encode(), env, receiver)
    if res.exit == 2:
        return "deny", "exit 2", res
    assert res.exit == 0, res.stderr
    if not res.stdout.strip():
        return "allow", "", res
    out = json.loads(res.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "PreToolUse"
    assert out["permissionDecision"] == "deny"
    return "deny", out["permissionDecisionReason"], res


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_case_through_hook(kind, env, receiver, case):
    snapshot.write(env, SESSION, case_snapshot(case))
    if case["rules"].get("halted"):
        snapshot.record_halt(env, SESSION, case["rules"]["halted"], case_snapshot(case))
    if kind == "native":
        env = dict(env, AIPAGER_DEBUG="1")
    decision, reason, res = run_hook(kind, env, case_event(case), receiver)
    if kind == "native":
        # the compiled side decides every ASCII case itself
        assert (b"declined to stage 2" in res.stderr) == (case.get("c") == "decline"), res.stderr
    expect = "deny" if case["expect"] == "error" else case["expect"]
    assert decision == expect, (reason, res.stderr)
    blocked = [d for d in res.sent if d.get("hook_event_name") == "safety_blocked"]
    forwarded = [d for d in res.sent if d.get("hook_event_name") == "PreToolUse"]
    assert len(forwarded) == 1, "the event is forwarded exactly once, decline or not"
    if decision == "deny" and case["expect"] != "error":
        assert reason.startswith("aipager safety policy: ")
        if "reason" in case:
            assert case["reason"] in reason
        assert blocked and blocked[0]["session"] == SESSION
        assert blocked[0]["reason"] == reason[len("aipager safety policy: "):]
        # sticky: the next call of the task is denied too
        again, why, _ = run_hook(kind, env, {**case_event(case), "tool_name": "Read",
                                             "tool_input": {"file_path": "ok.txt"}}, receiver)
        assert again == "deny" and "task halted" in why
    elif decision == "allow":
        assert not blocked


def test_no_snapshot_means_floor(kind, env, receiver):
    event = {"hook_event_name": "PreToolUse", "cwd": "/home/u/p", "tool_name": "Bash",
             "tool_input": {"command": "sudo id"}}
    decision, reason, _ = run_hook(kind, env, event, receiver)
    assert decision == "deny" and "sudo" in reason
    ok = dict(event, tool_input={"command": "ls"})
    # the block recorded a halted floor snapshot: the task stays stopped
    assert run_hook(kind, env, ok, receiver)[0] == "deny"


@pytest.mark.parametrize("content", [b"{not json", b"[]", b'{"v": 2}'])
def test_corrupt_snapshot_fails_closed(kind, env, receiver, content):
    with open(paths.policy_file(env, SESSION), "wb") as fh:
        fh.write(content)
    event = {"hook_event_name": "PreToolUse", "cwd": "/home/u/p", "tool_name": "Read",
             "tool_input": {"file_path": "a.txt"}}
    decision, reason, _ = run_hook(kind, env, event, receiver)
    assert decision == "deny"
    assert "check failed" in reason


def test_foreign_symlink_snapshot_fails_closed(kind, env, receiver, tmp_path):
    target = tmp_path / "terminal.json"
    target.write_text(json.dumps(snapshot.make("terminal", False, case_snapshot(CASES[3]))))
    os.symlink(target, paths.policy_file(env, SESSION))
    event = {"hook_event_name": "PreToolUse", "cwd": "/home/u/p", "tool_name": "Read",
             "tool_input": {"file_path": "a.txt"}}
    assert run_hook(kind, env, event, receiver)[0] == "deny"


def test_exempt_snapshot_survives_bad_payload(kind, env, receiver):
    snapshot.write(env, SESSION, snapshot.make("telegram", True, case_snapshot(CASES[0])))
    event = {"hook_event_name": "PreToolUse", "cwd": "/home/u/p", "tool_name": "Read",
             "tool_input": {"file_path": 12}}
    assert run_hook(kind, env, event, receiver)[0] == "allow"


def test_halt_reason_matches_python(kind, env, receiver):
    snapshot.write(env, SESSION, case_snapshot({"rules": {"denied_tools": ["bash"]}, "id": "x"}))
    event = {"hook_event_name": "PreToolUse", "cwd": "/home/u/p", "tool_name": "Bash",
             "tool_input": {"command": "ls"}}
    run_hook(kind, env, event, receiver)
    snap = snapshot.read(env, SESSION)
    assert snap["halted"] == "tool Bash is denied for this task"
    assert _match_py.decide(snap, "Read", {}, "/", CASE_HOME) == ("deny", _match_py.REASON_HALTED)


# --- the other policy events, end to end through the installed hook ----------


def _event(name: str, **fields) -> dict:
    return {"hook_event_name": name, "session_id": "cs-1", "cwd": "/home/u/p", **fields}


def test_prompt_pickup_then_tool_call(kind, env, receiver):
    from aipager.policy import notes

    notes.write_note(env, SESSION, msg_id=5, chat_id=-1, author_user_id=9, author_label="bo",
                     role="user", text="fix the tests", style="Be brief.")
    res = hookrun.run(hookrun.contender_cmd(kind, "hook"),
                      json.dumps(_event("UserPromptSubmit", prompt="fix the tests")).encode(), env, receiver)
    assert res.exit == 0, res.stderr
    names = [d.get("hook_event_name") for d in res.sent]
    assert names == ["queue_pickup", "UserPromptSubmit"], "queue_pickup goes before the event"
    assert res.sent[0]["consumed"][0]["msg_id"] == 5
    extra = json.loads(res.stdout)["hookSpecificOutput"]
    assert extra == {"hookEventName": "UserPromptSubmit", "additionalContext": "Be brief."}
    assert snapshot.read(env, SESSION)["authors"][0]["label"] == "bo"
    decision, reason, _ = run_hook(kind, env, _event("PreToolUse", tool_name="Bash",
                                                     tool_input={"command": "ls"}), receiver)
    assert decision == "deny" and "tool Bash is denied" in reason


def test_stop_clears_the_mark(kind, env, receiver):
    snapshot.mark_open(env, SESSION, 1.0)
    hookrun.run(hookrun.contender_cmd(kind, "hook"), json.dumps(_event("Stop")).encode(), env, receiver)
    assert not snapshot.open_task(env, SESSION)


def test_model_switch_marker_through_the_hook(kind, env, receiver):
    from aipager.policy import marker

    marker.write_modelswitch_marker(env, SESSION, "sonnet", "cs-1")
    event = _event("PreModelSwitch", from_model="a", to_model="claude-sonnet-5-5",
                   requested_model="sonnet", source="command")
    first = hookrun.run(hookrun.contender_cmd(kind, "hook"), json.dumps(event).encode(), env, receiver)
    assert json.loads(first.stdout)["hookSpecificOutput"]["permissionDecision"] == "allow"
    assert first.sent == [], "PreModelSwitch is never forwarded"
    again = hookrun.run(hookrun.contender_cmd(kind, "hook"), json.dumps(event).encode(), env, receiver)
    assert again.stdout == b"" and again.exit == 0
