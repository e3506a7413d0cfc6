"""The audit log: records from aipager's own datagrams, the append-only file, the core's wiring."""

from __future__ import annotations

import logging
import os
import stat

import orjson

from aipager.daemon import audit
from aipager.daemon.core import DaemonCore
from aipager.port.model import QueuedMessage, Session, Task
from aipager.port.outputs import RecordingNotifier

S = "claude-jim"
#: 2026-12-02 13:45:07.9 UTC
NOW = 1796219107.9


def _session(**task) -> Session:
    sess = Session(name=S, label="jim", registered_at=0.0)
    if task:
        sess.task = Task(seq=3, started_at=0.0, **task)
    return sess


def test_timestamps_are_utc_iso_seconds():
    assert audit.iso_seconds(NOW) == "2026-12-02T13:45:07Z"


def test_safety_blocked_names_tool_reason_task_and_authors():
    sess = _session(authors=[{"user_id": 2002, "msg_id": 11, "label": "guest"}])
    ev = {"hook_event_name": "safety_blocked", "session": S, "tool": "Bash", "reason": "rm -rf /"}
    assert audit.from_event(ev, sess, NOW) == {
        "ts": "2026-12-02T13:45:07Z", "session": S, "action": "safety_blocked", "label": "jim",
        "tool": "Bash", "reason": "rm -rf /", "task": 3,
        "authors": [{"user_id": 2002, "msg_id": 11, "label": "guest"}],
    }


def test_safety_blocked_without_a_task_has_no_authors():
    ev = {"hook_event_name": "safety_blocked", "session": S, "tool": "Bash", "reason": "x"}
    record = audit.from_event(ev, _session(), NOW)
    assert (record["task"], record["authors"]) == (None, [])


def test_refused_files_keep_path_code_and_reason_only():
    ev = {"hook_event_name": "send_files_refused", "session": S, "tool_use_id": "t1",
          "files": [{"path": "/etc/shadow", "code": "no_access", "reason": "protected", "extra": 1},
                    "junk"]}
    record = audit.from_event(ev, _session(), NOW)
    assert record["action"] == "send_files_refused" and record["tool_use_id"] == "t1"
    assert record["files"] == [{"path": "/etc/shadow", "code": "no_access", "reason": "protected"}]


def test_memory_cap_and_error_reports():
    cap = audit.from_event({"type": "hook_memory_cap_hit", "session": S, "hook": "aipager-hook",
                            "tool": "Read"}, _session(), NOW)
    assert (cap["action"], cap["hook"], cap["tool"]) == ("hook_memory_cap_hit", "aipager-hook", "Read")
    # An error report keeps its shape only: anything else it carried stays out.
    err = audit.from_event({"type": "report_error", "where": "hook", "hook": "aipager-hook",
                            "kind": "ValueError", "place": "hook.py:12", "payload": "secret"},
                           None, NOW)
    assert err == {"ts": "2026-12-02T13:45:07Z", "session": None, "action": "report_error",
                   "where": "hook", "hook": "aipager-hook", "kind": "ValueError",
                   "place": "hook.py:12"}


def test_other_events_are_not_audited():
    for ev in ({"hook_event_name": "Stop", "session": S}, {"type": "statusline", "session": S},
               {"hook_event_name": "queue_pickup", "session": S}):
        assert audit.from_event(ev, _session(), NOW) is None


def test_file_is_0600_and_appended(tmp_path):
    path = str(tmp_path / "state" / "audit.jsonl")
    sink = audit.AuditFile(path)
    sink.write({"action": "a", "n": 1})
    sink.write({"action": "b", "n": 2})
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    with open(path, "rb") as fh:
        assert [orjson.loads(line) for line in fh] == [{"action": "a", "n": 1}, {"action": "b", "n": 2}]


def test_a_write_failure_is_logged_and_counted_never_raised(tmp_path, caplog):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    sink = audit.AuditFile(str(blocker / "audit.jsonl"))
    with caplog.at_level(logging.ERROR, logger="aipager.daemon"):
        sink.write({"action": "a"})
    assert sink.failures == 1
    assert "audit log" in caplog.text


def test_core_records_a_block_with_the_author_of_the_picked_up_message(clock):
    sink = audit.RecordingAudit()
    core = DaemonCore(RecordingNotifier(), clock=clock, monotonic=clock, audit=sink)
    core.feed({"hook_event_name": "SessionStart", "session": S, "source": "startup"})
    core.registry.get(S).queue.append(QueuedMessage(msg_id="11", text="make files", queued_at=0.0,
                                                    sender="guest"))
    core.feed({"hook_event_name": "queue_pickup", "session": S,
               "consumed": [{"note": "n1", "msg_id": 11, "chat_id": -42, "author_user_id": 2002}],
               "expired": []})
    core.feed({"hook_event_name": "UserPromptSubmit", "session": S, "prompt": "make files",
               "prompt_id": "p1"})
    core.feed({"hook_event_name": "safety_blocked", "session": S, "tool": "Bash",
               "reason": "the floor denies it"})
    (record,) = sink.records
    assert record["action"] == "safety_blocked" and record["reason"] == "the floor denies it"
    assert record["authors"] == [{"user_id": 2002, "msg_id": 11, "chat_id": "-42", "label": "guest"}]
    task = core.registry.get(S).task
    assert task.origin == "telegram" and task.authors == record["authors"]
    # The next prompt, typed at the terminal, has no author.
    core.feed({"hook_event_name": "Stop", "session": S, "prompt_id": "p1"})
    core.feed({"hook_event_name": "UserPromptSubmit", "session": S, "prompt": "ls", "prompt_id": "p2"})
    assert core.registry.get(S).task.authors == []
    assert core.registry.get(S).task.origin == "terminal"


def test_core_without_a_sink_still_handles_safety_events(core):
    core.feed({"hook_event_name": "safety_blocked", "session": S, "tool": "Bash", "reason": "x"})
    core.feed({"type": "report_error", "where": "hook", "kind": "OSError", "place": "p"})
    assert core.counters["handled"] == 2 and core.counters["errors"] == 0
    assert [r["action"] for r in core.ctx.audit.records] == ["safety_blocked", "report_error"]


def _blocked(reason: str) -> bytes:
    return orjson.dumps({"hook_event_name": "safety_blocked", "session": S, "tool": "Bash",
                         "reason": reason})


def test_every_block_is_audited_and_told_an_identical_one_at_once_is_merged(core, notifier, clock):
    core.feed({"hook_event_name": "SessionStart", "session": S, "source": "startup"})
    core.feed({"hook_event_name": "UserPromptSubmit", "session": S, "prompt": "a", "prompt_id": "p1"})
    core.feed_bytes(_blocked("tool Bash is denied"))
    core.feed_bytes(_blocked("task halted"))
    core.feed_bytes(_blocked("task halted"))  # byte-identical, at once: audited, one message
    clock.advance(1)
    core.feed({"hook_event_name": "Stop", "session": S, "prompt_id": "p1"})
    core.feed({"hook_event_name": "UserPromptSubmit", "session": S, "prompt": "b", "prompt_id": "p2"})
    core.feed_bytes(_blocked("tool Bash is denied"))  # a new task: its own notice
    clock.advance(10)
    core.feed_bytes(_blocked("task halted"))
    core.feed_bytes(_blocked("task halted"))
    clock.advance(10)
    core.feed_bytes(_blocked("task halted"))  # seconds later: told again
    reasons = [r["reason"] for r in core.ctx.audit.records if r["action"] == "safety_blocked"]
    assert reasons == ["tool Bash is denied", "task halted", "task halted", "tool Bash is denied",
                       "task halted", "task halted", "task halted"]
    told = [n.split(": ", 1)[1] for n in notifier.notices("safety_blocked")]
    tail = ". Claude was told and may go on without it."
    assert told == [f"{reason}{tail}" for reason in (
        "tool Bash is denied", "task halted", "tool Bash is denied", "task halted",
        "task halted")]
