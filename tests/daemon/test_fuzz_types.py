"""Wrong types in every field a handler reads: never a handler exception, never a bad state.

The fields come from the daemon's own source (every ``ev.get("x")``,
``_str(ev, "x")`` … and every ``.get("x")`` a handler applies to nested
input), so a field a handler starts reading later is fuzzed without a change
here.  Each dispatch key gets a realistic event and a session warmed up with a
task, an agent, a request and a background command, so the handlers reach
their deeper branches.
"""

from __future__ import annotations

import pathlib
import re

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.sequences import FakeClock

import aipager.daemon
from aipager.daemon import persist, salvage
from aipager.daemon.core import DaemonCore
from aipager.daemon.events import statusline
from aipager.port.outputs import RecordingNotifier

S = "claude-fz"
DAEMON = pathlib.Path(aipager.daemon.__file__).parent
SOURCES = sorted(p for p in DAEMON.rglob("*.py") if p.name not in ("drain.py", "deepq.py"))

_TOP = re.compile(r'\b(?:ev|event|msg)\.get\(\s*"(\w+)"|\b_(?:str|text|notes|dig)\(\s*ev\s*,\s*"(\w+)"'
                  r'|\bev\["(\w+)"\]')
#: any identifier-like string literal: keys read in loops (``for key in ("agentId", …)``) too
_ANY = re.compile(r'"([A-Za-z_]\w{0,40})"')


def _names(pattern: re.Pattern) -> set[str]:
    found: set[str] = set()
    for path in SOURCES:
        for match in pattern.finditer(path.read_text("utf-8")):
            found.update(g for g in match.groups() if g)
    return found


#: top-level fields the handlers read
TOP_FIELDS = sorted(_names(_TOP) | set(statusline._FLAT))
#: every name the daemon's code spells: the nested fields' keys among them
NESTED_NAMES = sorted(_names(_ANY))
#: fields that hold objects or lists of objects
STRUCTURED = ("tool_input", "tool_response", "sl_tokens", "error", "model", "context_window",
              "cost", "consumed", "expired", "files", "permission_suggestions")

#: (orjson decodes integers past 64 bits as floats: the extremes here are what a datagram can hold)
JUNK = (None, 0, -1, 2**64 - 1, -2**63, 1.5, True, False, "", "x", [], [1], ["a", "b"], {}, {"a": 1},
        [[1]], {"a": [1]}, [{"a": 1}])


def test_the_source_scan_finds_the_fields():
    for name in ("agent_id", "transcript_path", "tool_name", "tool_input", "prompt_id", "where",
                 "sl_tokens", "consumed", "aipager_request_id", "context_pct"):
        assert name in TOP_FIELDS
    for name in ("command", "questions", "backgroundTaskId", "agentId", "msg_id", "author_user_id",
                 "display_name", "file_path", "task_id"):
        assert name in NESTED_NAMES


def base_events() -> list[dict]:
    """One realistic event per dispatch key (some keys twice, with other shapes)."""
    tool = {"tool_name": "Bash", "tool_use_id": "t1", "tool_input": {"command": "ls"}}
    ask = {"tool_name": "AskUserQuestion", "tool_use_id": "q1",
           "tool_input": {"questions": [{"question": "q?", "options": [{"label": "x"}]}]}}
    agent = {"tool_name": "Agent", "tool_use_id": "g1",
             "tool_input": {"description": "d", "subagent_type": "Explore"}}
    evs = [
        {"hook_event_name": "SessionStart", "source": "startup", "session_id": "c1", "model": "m"},
        {"hook_event_name": "SessionStart", "source": "compact"},
        {"hook_event_name": "SessionEnd", "reason": "other"},
        {"hook_event_name": "UserPromptSubmit", "prompt": "hello", "prompt_id": "p2"},
        {"hook_event_name": "UserPromptSubmit", "prompt": "<task-notification>\n<task-id>bg1</task-id>"
         "\n<status>completed</status>", "prompt_id": "p2"},
        {"hook_event_name": "PreToolUse", **tool, "agent_id": "a1", "agent_type": "Explore"},
        {"hook_event_name": "PreToolUse", **ask},
        {"hook_event_name": "PreToolUse", **agent},
        {"hook_event_name": "PreToolUse", "tool_name": "Write", "tool_use_id": "w1",
         "tool_input": {"file_path": "/x", "content": "a"}},
        {"hook_event_name": "PermissionRequest", **tool, "aipager_request_id": "r1",
         "aipager_reply_addr": "/x.sock", "permission_suggestions": [{"type": "addRules"}]},
        {"hook_event_name": "PermissionRequest", **ask},
        {"hook_event_name": "PostToolUse", **tool, "tool_response": {"backgroundTaskId": "bg2"}},
        {"hook_event_name": "PostToolUse", **agent, "tool_response": {"agentId": "a1"}},
        {"hook_event_name": "PostToolUse", "tool_name": "TaskStop", "tool_use_id": "s1",
         "tool_input": {"task_id": "bg1"}},
        {"hook_event_name": "PostToolUse", "tool_name": "SendUserFile", "tool_use_id": "f1",
         "tool_input": {"files": ["/etc/hostname"], "caption": "c"}, "cwd": "/"},
        {"hook_event_name": "PostToolUseFailure", **tool, "error": "boom"},
        {"hook_event_name": "Notification", "notification_type": "permission_prompt", "message": "m"},
        {"hook_event_name": "Notification", "notification_type": "agent_needs_input"},
        {"hook_event_name": "Notification", "notification_type": "worker_permission_prompt",
         "message": "worker2 needs permission for Bash"},
        {"hook_event_name": "Notification", "notification_type": "idle_prompt"},
        {"hook_event_name": "Stop", "last_assistant_message": "done", "prompt_id": "p1"},
        {"hook_event_name": "Stop", "prompt_id": "p0"},
        {"hook_event_name": "StopFailure", "error": {"type": "overloaded", "message": "m"},
         "error_type": "rate_limit", "error_details": "d"},
        {"hook_event_name": "SubagentStart", "agent_id": "a2", "agent_type": "Explore"},
        {"hook_event_name": "SubagentStop", "agent_id": "a1", "agent_type": "Explore"},
        {"hook_event_name": "PreCompact"},
        {"hook_event_name": "PostCompact"},
        {"hook_event_name": "MessageDisplay", "message_id": "m1", "delta": "text"},
        {"hook_event_name": "MessageDisplay", "message_id": "m1", "delta": "text", "agent_id": "a1"},
        {"hook_event_name": "Interrupt"},
        {"hook_event_name": "Elicitation", "mcp_server_name": "releaser", "message": "Where?",
         "mode": "form", "aipager_request_id": "r2", "aipager_reply_addr": "/y.sock",
         "requested_schema": {"type": "object", "properties": {
             "channel": {"type": "string", "enum": ["a", "b"]}, "n": {"type": "integer"}},
             "required": ["channel"]}},
        {"type": "statusline", "context_pct": 85, "cost_usd": 1.0, "model_name": "Opus",
         "total_input": 5, "session_id": "c1"},
        {"type": "statusline", "model": {"display_name": "Opus"},
         "context_window": {"used_percentage": 10}, "cost": {"total_cost_usd": 1}},
        {"hook_event_name": "queue_pickup", "consumed": [{"msg_id": 1, "chat_id": 2,
                                                           "author_user_id": 3}],
         "expired": [{"msg_id": 4, "chat_id": 2}]},
        {"hook_event_name": "prompt_blocked", "reason": "merged",
         "given_up": [{"msg_id": 1, "chat_id": 2, "author_user_id": 3}],
         "expired": [{"msg_id": 4, "chat_id": 2}]},
        {"hook_event_name": "safety_blocked", "tool": "Bash", "reason": "no"},
        {"hook_event_name": "send_files_refused", "tool_use_id": "f1",
         "files": [{"path": "/x", "code": "c", "reason": "r"}]},
        {"hook_event_name": "permission_reply_timeout", "aipager_request_id": "r1"},
        {"type": "hook_memory_cap_hit", "hook": "aipager-hook", "tool": "Bash"},
        {"type": "report_error", "where": "hook", "event": "PreToolUse", "kind": "OSError"},
    ]
    return [{"session": S, "prompt_id": "p1", "transcript_path": "/nonexistent/t.jsonl",
             "sl_tokens": {"context_pct": 5}, **e} for e in evs]


BASE = base_events()


def test_every_dispatch_key_has_a_base_event():
    core = new_core()
    covered = {e.get("notification_type") or e.get("hook_event_name") or e.get("type") for e in BASE}
    assert core.dispatcher.keys() <= covered


def new_core() -> DaemonCore:
    # the real transcript readers: a path of another type must never reach open()
    clock = FakeClock()
    return DaemonCore(RecordingNotifier(maxlen=50), clock=clock, monotonic=clock)


def warm(core: DaemonCore) -> None:
    """A session with a task, an agent, a tool row, a background command and a request."""
    for ev in BASE[:1] + [BASE[3], BASE[5], BASE[7], BASE[11], BASE[22], BASE[9]]:
        core.feed(orjson.loads(orjson.dumps(ev)))


def check(core: DaemonCore, what: object) -> None:
    assert core.counters["errors"] == 0, what
    # the daemon never writes a state it would itself call damaged
    data = orjson.dumps(persist.build_state(core.registry, {}))
    _, _, problems = salvage.sessions_of(data)
    assert problems == [], (what, problems)


def _with(ev: dict, field: str, value) -> dict:
    ev = orjson.loads(orjson.dumps(ev))
    ev[field] = value
    return ev


def _nested(value) -> list:
    """Objects (and a list of one) whose every readable key holds ``value``."""
    obj = dict.fromkeys(NESTED_NAMES, value)
    return [obj, [obj], {"questions": [obj], "edits": [obj], "files": [obj], **obj}]


@pytest.mark.parametrize("base", BASE, ids=[
    f"{i}-{e.get('notification_type') or e.get('hook_event_name') or e.get('type')}"
    for i, e in enumerate(BASE)])
def test_wrong_types_in_every_field(base):
    core = new_core()
    warm(core)
    for field in TOP_FIELDS:
        for value in JUNK:
            core.feed(_with(base, field, value))
            assert core.counters["errors"] == 0, (field, value)
        check(core, field)
    for field in STRUCTURED:
        for value in JUNK:
            for obj in _nested(value):
                core.feed(_with(base, field, obj))
                assert core.counters["errors"] == 0, (field, obj)
        check(core, field)


def test_mistyped_text_fields_are_dropped_and_counted():
    core = new_core()
    core.feed({"hook_event_name": "UserPromptSubmit", "session": S, "prompt": "x", "prompt_id": "p"})
    core.feed({"hook_event_name": "PreToolUse", "session": S, "tool_name": ["Bash"],
               "tool_use_id": "t1", "agent_id": {"a": 1}, "transcript_path": 5,
               "tool_input": {"command": "ls"}})
    core.feed({"hook_event_name": "Stop", "session": S, "prompt_id": "p", "transcript_path": 0})
    sess = core.registry.get(S)
    assert core.counters["errors"] == 0
    assert core.ctx.counters["mistyped_fields"] == 4
    assert sess.transcript_path == "" and list(sess.agents) == []
    assert [r.tool for r in sess.rows] == [""]


_json = st.recursive(st.none() | st.booleans() | st.integers(-2**63, 2**64 - 1)
                     | st.floats(allow_nan=False, allow_infinity=False)
                     | st.text(max_size=5),
                     lambda kids: st.lists(kids, max_size=3) | st.dictionaries(
                         st.sampled_from(NESTED_NAMES), kids, max_size=4), max_leaves=12)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(range(len(BASE))),
                          st.dictionaries(st.sampled_from(TOP_FIELDS), _json, max_size=4)),
                max_size=25))
def test_random_junk_streams(stream):
    core = new_core()
    warm(core)
    for index, junk in stream:
        core.feed({**orjson.loads(orjson.dumps(BASE[index])), **junk})
        core.tick()
    check(core, stream)
