"""Saved state: atomic, owner-only, readable while the daemon is down, restorable."""

from __future__ import annotations

import os
import stat

from aipager.proto import paths
from aipager.daemon import persist
from aipager.daemon.core import DaemonCore
from aipager.port.outputs import RecordingNotifier

S = "claude-jim"


def test_load_state_without_a_file_is_empty(tmp_path):
    env = dict(os.environ)
    state = persist.load_state(env)
    assert state["sessions"] == [] and state["daemon"]["alive"] is False
    assert state["daemon"]["socket"] == paths.socket_path(env)


def test_save_then_load_reports_the_schema(core, clock):
    env = dict(os.environ)
    core.feed({"hook_event_name": "UserPromptSubmit", "session": S, "prompt": "x", "prompt_id": "p"})
    core.feed({"hook_event_name": "PreToolUse", "session": S, "tool_name": "Bash", "tool_use_id": "t",
               "tool_input": {"command": "ls"}, "prompt_id": "p"})
    core.feed({"hook_event_name": "PermissionRequest", "session": S, "tool_name": "Bash",
               "tool_input": {"command": "ls"}, "prompt_id": "p"})
    core.feed({"type": "statusline", "session": S, "context_pct": 12, "cost_usd": 0.3, "model_name": "Opus"})
    persist.save_state(env, core.registry, {"pid": os.getpid(), "socket": "/nonexistent.sock"})
    path = paths.daemon_state_file(env)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    state = persist.load_state(env)
    assert state["daemon"]["alive"] is False  # no socket: not a live daemon
    (sess,) = state["sessions"]
    assert {k: sess[k] for k in ("name", "label", "state", "model", "context_pct", "cost_usd",
                                  "waiting_for", "rows_count")} == {
        "name": S, "label": "jim", "state": "waiting", "model": "Opus", "context_pct": 12,
        "cost_usd": 0.3, "waiting_for": "permission", "rows_count": 1}
    for key in ("subagents", "background_commands", "queued_messages", "delivered_answers"):
        assert isinstance(sess[key], list)


def test_saved_state_shows_each_sessions_rendered_card(core, clock):
    from aipager.texts import render

    env = dict(os.environ)
    core.feed({"hook_event_name": "SessionStart", "session": "claude-idle", "source": "startup"})
    core.feed({"hook_event_name": "UserPromptSubmit", "session": S, "prompt": "x", "prompt_id": "p"})
    core.feed({"hook_event_name": "PreToolUse", "session": S, "tool_name": "Bash", "tool_use_id": "t",
               "tool_input": {"command": "ls"}, "prompt_id": "p"})
    clock.advance(65)
    persist.save_state(env, core.registry, {"pid": os.getpid()})
    cards = {s["name"]: s["card"] for s in persist.load_state(env)["sessions"]}
    assert cards[S] == render.card(core.registry.get(S), clock()) == (
        "⏳ jim · working · 1m 05s\n⏳ Bash: ls")
    assert cards["claude-idle"] == render.card(core.registry.get("claude-idle"), clock())
    # The card is for readers only: restoring ignores it.
    fresh = DaemonCore(RecordingNotifier(), clock=clock)
    persist.restore(fresh.registry, persist.load_state(env))
    assert fresh.registry.get(S).rows[0].summary == "Bash: ls"


def test_saved_state_keeps_the_latest_notices(core, clock):
    env = dict(os.environ)
    core.feed({"hook_event_name": "UserPromptSubmit", "session": S, "prompt": "x", "prompt_id": "p"})
    core.feed({"type": "statusline", "session": S, "context_pct": 85})
    for n in range(25):
        core.feed({"hook_event_name": "safety_blocked", "session": S, "tool": "Bash", "reason": f"r{n}"})
    persist.save_state(env, core.registry, {"pid": os.getpid()})
    (sess,) = persist.load_state(env)["sessions"]
    notices = sess["notices"]
    assert len(notices) == 20 and notices[-1]["name"] == "safety_blocked"
    assert notices[-1]["text"] == ("🛑 jim · a safety rule refused Bash: r24. Claude was told "
                                   "and may go on without it.")
    assert notices[-1]["at"] == clock()
    # The oldest ones (the context warning, r0-r4) were pushed out.
    assert ": r5. Claude was told" in notices[0]["text"]


def test_alive_when_pid_runs_and_socket_exists(tmp_path):
    env = dict(os.environ)
    sock = tmp_path / "s.sock"
    sock.write_text("")
    persist.save_state(env, DaemonCore(RecordingNotifier()).registry, {"pid": os.getpid(), "socket": str(sock)})
    assert persist.load_state(env)["daemon"]["alive"] is True


def test_delivered_answer_is_not_resent_after_restart(core, clock, tmp_path):
    env = dict(os.environ)
    stop = {"hook_event_name": "Stop", "session": S, "prompt_id": "p", "last_assistant_message": "Done."}
    core.feed({"hook_event_name": "UserPromptSubmit", "session": S, "prompt": "x", "prompt_id": "p"})
    core.feed(stop)
    assert core.registry.save_now  # an answer must reach disk at once
    persist.save_state(env, core.registry, {"pid": 1})
    out = RecordingNotifier()
    again = DaemonCore(out, clock=clock, read_answer=lambda p: "Done.")
    persist.restore(again.registry, persist.load_state(env))
    again.feed(stop)
    again.feed({"hook_event_name": "Notification", "notification_type": "idle_prompt", "session": S,
                "prompt_id": "p"})
    assert out.of("answer") == []


def test_corrupt_state_file_reads_as_empty():
    env = dict(os.environ)
    path = paths.daemon_state_file(env)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        fh.write("{half")
    assert persist.load_state(env)["sessions"] == []


def test_catch_up_finishes_tasks_whose_stop_was_missed(core, notifier):
    from aipager.daemon.tasks import catch_up

    core.feed({"hook_event_name": "UserPromptSubmit", "session": S, "prompt": "x", "prompt_id": "p",
               "transcript_path": "/t/a.jsonl"})
    core.feed({"hook_event_name": "UserPromptSubmit", "session": "claude-b", "prompt": "y",
               "prompt_id": "q", "transcript_path": "/t/b.jsonl"})
    ended = {"/t/a.jsonl": "Finished while you were away.", "/t/b.jsonl": "Not yet."}
    open_marks = {"claude-b"}  # b's hook has not seen its Stop: its task mark is still there
    assert catch_up(core.ctx, ended.get, open_marks.__contains__) == [S]
    assert notifier.texts("answer") == ["Finished while you were away."]
    assert catch_up(core.ctx, ended.get, open_marks.__contains__) == []  # never twice
