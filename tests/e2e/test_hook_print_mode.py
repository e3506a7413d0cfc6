"""``claude -p`` fires real hooks into the installed ``aipager-hook``; the datagrams are checked.

No daemon here: ``hook_socket`` stands where the daemon's control socket would be, so these
scenarios pin down exactly what the hook delivers for a real Claude Code run.
"""

from __future__ import annotations

import collections
import copy
import json
import os

import pytest

from e2e.kit.claude import expected_settings
from e2e.kit.sequences import record
from fakes import anthropic as fa

# Runs by default (scripts/test.sh); `-m 'not e2e'` leaves it out of a quick loop.
pytestmark = pytest.mark.e2e

SESSION = "claude-e2e"
#: what Claude Code 2.1.328 hands its statusLine command (trimmed real payload)
STATUS = {
    "session_id": "836d8f07-ca6b-461c-a863-1aa7cddde5b5",
    "model": {"id": "claude-sonnet-5-5", "display_name": "Sonnet 5.5"},
    "workspace": {"current_dir": "/home/dev/project", "project_dir": "/home/dev/project"},
    "version": "2.1.328",
    "cost": {"total_cost_usd": 0.0196, "total_duration_ms": 56104, "total_api_duration_ms": 133,
             "total_lines_added": 0, "total_lines_removed": 0},
    "context_window": {"total_input_tokens": 1200, "total_output_tokens": 40,
                       "context_window_size": 1000000,
                       "current_usage": {"input_tokens": 1200, "output_tokens": 40,
                                         "cache_creation_input_tokens": 0,
                                         "cache_read_input_tokens": 0},
                       "used_percentage": 0, "remaining_percentage": 100},
}


def _once_each(events: list[dict]) -> None:
    """No event was delivered twice (the same name for the same tool call / prompt)."""
    keys = collections.Counter(
        (e["hook_event_name"], e.get("prompt_id"), e.get("tool_use_id"), e.get("agent_id"),
         e.get("prompt"), e.get("message_id"), e.get("index"))
        for e in events
    )
    dupes = [k for k, n in keys.items() if n > 1]
    assert not dupes, f"delivered more than once: {dupes}"


def _order(names: list[str], *expected: str) -> None:
    """``expected`` occurs in ``names`` in this order (other events may sit between)."""
    it = iter(names)
    missing = [n for n in expected if n not in it]
    assert not missing, f"{expected} not in order within {names}"


def test_settings_wired_as_aipager_promises(claude_home, hook_programs):
    settings = claude_home.read_settings()
    want = expected_settings(*hook_programs)
    assert settings["hooks"] == want["hooks"]
    assert settings["statusLine"]["command"] == want["statusLine"]["command"]


def test_answer_only_run_delivers_each_event_once(run_claude_p, fake_anthropic, hook_socket):
    fake_anthropic.script("E2E-HELLO", fa.text("Hello from the fake model."))

    run = run_claude_p("E2E-HELLO say hi")

    assert run.returncode == 0, run.describe()
    assert "Hello from the fake model." in run.stdout
    end = hook_socket.wait_event("SessionEnd")
    events = hook_socket.hook_events()
    names = hook_socket.names()
    _order(names, "SessionStart", "UserPromptSubmit", "Stop", "SessionEnd")
    assert names.count("SessionStart") == 1 and names.count("Stop") == 1
    _once_each(events)
    assert {e["session"] for e in events} == {SESSION}
    assert len({e["session_id"] for e in events}) == 1
    assert hook_socket.wait_event("UserPromptSubmit")["prompt"] == "E2E-HELLO say hi"
    assert hook_socket.wait_event("Stop")["last_assistant_message"] == "Hello from the fake model."
    # Nothing was drawn by a status line in print mode: no status file, so no sl_tokens.
    assert not any("sl_tokens" in e for e in events)
    assert end["reason"]
    record("print_answer", hook_socket.raw)


def test_sl_tokens_come_from_the_status_file(run_claude_p, fake_anthropic, hook_socket, claude_home):
    status = copy.deepcopy(STATUS)
    status["context_window"].update(used_percentage=42, total_input_tokens=4321)
    status["cost"].update(total_lines_added=7, total_lines_removed=3)
    with open(claude_home.status_file(), "w", encoding="utf-8") as fh:
        json.dump(status, fh)
    fake_anthropic.script("E2E-SLT", fa.text("ok"))

    run = run_claude_p("E2E-SLT")

    assert run.returncode == 0, run.describe()
    hook_socket.wait_event("SessionEnd")
    want = {
        "context_pct": 42, "total_output": 40, "total_input": 4321, "current_output": 40,
        "lines_added": 7, "lines_removed": 3,
    }
    for event in hook_socket.hook_events():
        if event["hook_event_name"] == "MessageDisplay":
            assert "sl_tokens" not in event
        else:
            assert event.get("sl_tokens") == want, event["hook_event_name"]


def test_tool_rows_in_order_including_a_failing_tool(run_claude_p, fake_anthropic, hook_socket, claude_home):
    target = os.path.join(claude_home.project, "notes.txt")
    fake_anthropic.script(
        "E2E-TOOLS",
        fa.bash("echo tool-one-output"),
        fa.bash("false"),
        fa.tool("Write", {"file_path": target, "content": "alpha\n"}),
        fa.tool("Edit", {"file_path": target, "old_string": "alpha", "new_string": "beta"}),
        fa.text("All four steps ran."),
    )

    run = run_claude_p("E2E-TOOLS do the steps")

    assert run.returncode == 0, run.describe()
    hook_socket.wait_event("SessionEnd")
    rows = [
        (e["hook_event_name"], e["tool_name"])
        for e in hook_socket.hook_events()
        if e["hook_event_name"] in ("PreToolUse", "PostToolUse", "PostToolUseFailure")
    ]
    assert rows == [
        ("PreToolUse", "Bash"), ("PostToolUse", "Bash"),
        ("PreToolUse", "Bash"), ("PostToolUseFailure", "Bash"),
        ("PreToolUse", "Write"), ("PostToolUse", "Write"),
        ("PreToolUse", "Edit"), ("PostToolUse", "Edit"),
    ]
    ok = hook_socket.wait_event("PostToolUse", tool_name="Bash")
    assert "tool-one-output" in json.dumps(ok["tool_response"])
    failed = hook_socket.wait_event("PostToolUseFailure")
    assert failed["tool_input"]["command"] == "false"
    assert "Exit code 1" in failed["error"]
    # Pre and Post of one call carry the same tool_use_id; each call has its own.
    ids = [e["tool_use_id"] for e in hook_socket.hook_events("PreToolUse")]
    assert len(set(ids)) == 4
    _once_each(hook_socket.hook_events())
    with open(target, encoding="utf-8") as fh:
        assert fh.read() == "beta\n"
    # The model was told about the failure, so Claude Code really ran the tools.
    results = [r for r in fake_anthropic.requests_with("E2E-TOOLS") if r.tool_results()]
    assert any(b.get("is_error") for r in results for b in r.tool_results())
    record("print_tools", hook_socket.raw)


def test_subagent_starts_and_stops(run_claude_p, fake_anthropic, hook_socket):
    fake_anthropic.script("E2E-SUB-MAIN", fa.agent("E2E-SUB-CHILD look around", "look around"),
                          fa.text("A helper is on it."))
    fake_anthropic.script("E2E-SUB-CHILD", fa.bash("echo from-the-subagent"), fa.text("Sub done."))
    fake_anthropic.script("<task-notification>", fa.text("The helper reported back."))

    def notified_and_stopped() -> bool:
        names = hook_socket.names()
        return "UserPromptSubmit" in names and names.count("Stop") >= 2

    # Print mode usually stays up after a subagent finished (2.1.328); the harness ends it with SIGINT.
    run = run_claude_p("E2E-SUB-MAIN start a helper", until=notified_and_stopped)

    start = hook_socket.wait_event("SubagentStart")
    agent_id = start["agent_id"]
    stop = hook_socket.wait_event("SubagentStop", agent_id=agent_id)
    assert stop["last_assistant_message"] == "Sub done."
    sub_tool = hook_socket.wait_event("PreToolUse", tool_name="Bash")
    assert sub_tool["agent_id"] == agent_id
    main_stop = hook_socket.wait_event("Stop")
    assert [t["id"] for t in main_stop["background_tasks"]] == [agent_id]
    note = hook_socket.wait_for(
        lambda e: str(e.get("prompt", "")).startswith("<task-notification>"), what="task-notification"
    )
    assert agent_id in note["prompt"]
    names = hook_socket.names()
    _order(names, "UserPromptSubmit", "PreToolUse", "SubagentStart", "SubagentStop",
           "UserPromptSubmit", "Stop")
    _once_each(hook_socket.hook_events())
    # 2.1.328's print mode usually stays up after a subagent's notification and is
    # ended by the harness, but sometimes exits by itself first: either way it ended cleanly
    assert run.stopped_by_harness or run.returncode == 0, run.describe()
    hook_socket.wait_event("SessionEnd")
    record("print_subagent", hook_socket.raw)


def test_background_shell_tracked_to_its_end(run_claude_p, fake_anthropic, hook_socket):
    fake_anthropic.script_background_job("E2E-BG", "sleep 1; echo bg-finished")

    run = run_claude_p("E2E-BG run it in the background")

    assert run.returncode == 0, run.describe()
    hook_socket.wait_event("SessionEnd")
    first_stop = hook_socket.wait_event("Stop")
    (task,) = first_stop["background_tasks"]
    assert task["type"] == "shell" and task["status"] == "running"
    note = hook_socket.wait_for(
        lambda e: str(e.get("prompt", "")).startswith("<task-notification>"), what="task-notification"
    )
    assert task["id"] in note["prompt"] and "completed" in note["prompt"]
    assert hook_socket.names().count("Stop") == 2
    record("print_background_shell", hook_socket.raw)


def test_compact_fires_precompact(run_claude_p, hook_socket):
    run = run_claude_p("/compact")

    assert run.returncode == 0, run.describe()
    hook_socket.wait_event("SessionEnd")
    pre = hook_socket.wait_event("PreCompact")
    assert pre["trigger"] == "manual" and pre["session"] == SESSION
    _order(hook_socket.names(), "SessionStart", "PreCompact", "SessionEnd")
    record("print_compact", hook_socket.raw)
