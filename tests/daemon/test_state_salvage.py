"""A damaged saved state: the daemon starts, keeps every usable record, sets the file aside
and says so in the log, `aipager status --json` and `aipager doctor`."""

from __future__ import annotations

import json
import os
import signal

import orjson
import pytest
from support.daemon_proc import spawn, wait_for
from typer.testing import CliRunner

from aipager.proto import paths
from aipager.cli.app import app
from aipager.daemon import persist, salvage
from aipager.daemon.core import DaemonCore
from aipager.port.model import State
from aipager.port.outputs import RecordingNotifier
from aipager.daemon.registry import Registry


def good_session(name: str) -> dict:
    """A sound saved session, as the daemon writes it."""
    core = DaemonCore(RecordingNotifier())
    core.feed({"hook_event_name": "UserPromptSubmit", "session": name, "prompt": "hello",
               "prompt_id": "p1"})
    core.feed({"hook_event_name": "PreToolUse", "session": name, "tool_name": "Bash",
               "tool_use_id": "t1", "tool_input": {"command": "ls"}, "prompt_id": "p1",
               "agent_id": "a1", "agent_type": "Explore"})
    core.feed({"hook_event_name": "Stop", "session": name, "prompt_id": "p1",
               "last_assistant_message": "done"})
    return orjson.loads(orjson.dumps(persist.build_state(core.registry, {})))["sessions"][0]


def state_bytes(*sessions: dict) -> bytes:
    return orjson.dumps({"version": 1, "daemon": {"pid": None, "socket": "/x.sock",
                                                  "counters": {}}, "sessions": list(sessions)})


def read(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def write_state(data: bytes) -> str:
    path = paths.daemon_state_file(dict(os.environ))
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(data)
    return path


def mistyped() -> list[dict]:
    """Sessions each with one (or a few) wrong-typed fields."""
    out = []
    for name, changes in [
        ("claude-rows", {"rows": 5}),
        ("claude-task", {"task": "x"}),
        ("claude-state", {"state": "bogus"}),
        ("claude-agents", {"subagents": [{"id": ["unhashable"], "type": "Explore", "task": 1,
                                          "started_at": 1.0, "last_seen": 1.0}]}),
        ("claude-agents2", {"subagents": [{"id": {"a": 1}, "type": "Explore", "task": 1,
                                           "started_at": 1.0, "last_seen": 1.0}]}),
        ("claude-numbers", {"context_pct": "high", "cost_usd": [1], "total_input": True,
                            "registered_at": "yesterday", "task_seq": 1.5}),
        ("claude-lists", {"delivered_answers": "p:x", "queued_messages": {"a": 1},
                          "notices": [5, {"name": "n", "text": [1]}],
                          "requests": [{"key": "k"}]}),
        ("claude-waiting", {"state": "waiting", "requests": 7}),
        ("claude-label", {"label": 5}),
    ]:
        sess = good_session(name)
        sess.update(changes)
        out.append(sess)
    return out


# ------------------------------------------------------------------ salvage, in-process


def test_wrong_types_keep_the_session_and_drop_the_field():
    sessions, seen, problems = salvage.sessions_of(state_bytes(good_session("claude-good"),
                                                               *mistyped(), 5, {"name": 7}))
    reg = Registry()
    reg.restore(sessions)
    assert seen == 12
    assert set(reg.sessions) == {"claude-good"} | {s["name"] for s in mistyped()}
    good = reg.get("claude-good")
    assert good.task.prompt == "hello" and list(good.agents) == ["a1"] and len(good.rows) == 1
    assert list(reg.get("claude-rows").rows) == [] and reg.get("claude-rows").task.prompt == "hello"
    assert reg.get("claude-task").task is None and len(reg.get("claude-task").rows) == 1
    assert reg.get("claude-state").state == State.UNKNOWN
    assert reg.get("claude-agents").agents == {} and reg.get("claude-agents2").agents == {}
    numbers = reg.get("claude-numbers")
    assert (numbers.context_pct, numbers.cost_usd, numbers.total_input, numbers.task_seq) == (
        None, None, None, 0)
    assert numbers.registered_at == numbers.last_event_at
    lists = reg.get("claude-lists")
    assert list(lists.delivered) == [] and lists.queue == [] and lists.requests == []
    assert lists.notices == []
    assert reg.get("claude-waiting").state == State.READY  # nothing left to answer
    assert reg.get("claude-label").label == "label"
    text = "\n".join(problems)
    for expected in ("claude-rows: rows: expected a list, got int",
                     "claude-task: task: expected an object, got 'x'",
                     "claude-state: state: 'bogus' is not usable",
                     "claude-agents: subagents[0].id: list is not usable (dropped)",
                     "sessions[10]: expected an object, got int", "sessions[11]: no usable name"):
        assert expected in text


def test_a_truncated_file_keeps_the_sessions_written_before_the_cut():
    data = state_bytes(good_session("claude-a"), good_session("claude-b"), good_session("claude-c"))
    cut = data[: data.index(b'"claude-c"') + 40]
    sessions, _, problems = salvage.sessions_of(cut)
    assert [s["name"] for s in sessions] == ["claude-a", "claude-b"]
    assert problems[0].startswith("not valid JSON")


@pytest.mark.parametrize("data", [b"", b"\x00\xff\xfe garbage \x80", b"[1, 2]", b"null",
                                  b'{"sessions": {"claude-a": {}}}', b'{"sessions": [' * 5000])
def test_garbage_restores_nothing_and_says_why(data):
    sessions, _, problems = salvage.sessions_of(data)
    assert sessions == [] and problems


def test_restore_saved_keeps_the_damaged_file_aside(caplog):
    env = dict(os.environ)
    data = state_bytes(good_session("claude-a"), *mistyped())
    path = write_state(data)
    reg = Registry()
    problem = persist.restore_saved(env, reg, now=1_700_000_000).problem
    assert "claude-a" in reg.sessions and len(reg.sessions) == 10
    (kept,) = persist.kept_aside(env)
    assert kept == path + ".damaged-20231114T221320Z"
    assert read(kept) == data and not os.path.exists(path)
    assert problem.startswith("the saved state was damaged (") and f"kept as {kept}" in problem
    assert "restored 10 of 10 session(s)" in problem
    assert problem in caplog.text and "saved state: claude-rows: rows" in caplog.text
    # a second damaged file the same second is kept too
    write_state(b"{")
    persist.restore_saved(env, Registry(), now=1_700_000_000)
    assert len(persist.kept_aside(env)) == 2


def test_a_sound_file_is_left_alone():
    env = dict(os.environ)
    path = write_state(state_bytes(good_session("claude-a")))
    reg = Registry()
    assert persist.restore_saved(env, reg).problem is None
    assert list(reg.sessions) == ["claude-a"] and os.path.exists(path)
    assert persist.kept_aside(env) == []


def test_status_while_down_names_a_damaged_file():
    write_state(b'{"version": 1, "daemon": {"pid": nu')
    res = CliRunner().invoke(app, ["status", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert "damaged, not valid JSON" in doc["state_error"]
    checks = {c["name"]: c for c in json.loads(
        CliRunner().invoke(app, ["doctor", "--json", "--offline"]).output)}
    assert checks["saved state"]["ok"] is False
    assert "damaged" in checks["saved state"]["detail"]


# ------------------------------------------------------------------ the real daemon


DAMAGE = {
    "truncated": lambda: state_bytes(good_session("claude-a"), good_session("claude-b"),
                                     good_session("claude-c"))[:-30],
    "random bytes": lambda: os.urandom(4096),
    "wrong types": lambda: state_bytes(good_session("claude-a"), good_session("claude-b"),
                                       *mistyped()),
    "wrong shape": lambda: orjson.dumps({"version": 1, "daemon": 5, "sessions": [
        good_session("claude-a"), good_session("claude-b"), "x"]}),
}


@pytest.mark.parametrize("kind", DAMAGE)
def test_the_daemon_starts_on_a_damaged_state(kind):
    env = dict(os.environ)
    data = DAMAGE[kind]()
    path = write_state(data)
    proc = spawn()
    try:
        wait_for(lambda: persist.load_state(env)["daemon"].get("alive") or proc.poll() is not None)
        assert proc.poll() is None, proc.stderr.read().decode()
        state = persist.load_state(env)
        names = {s["name"] for s in state["sessions"]}
        if kind != "random bytes":
            assert {"claude-a", "claude-b"} <= names
            assert next(s for s in state["sessions"] if s["name"] == "claude-a")["task"]["prompt"] == "hello"
        if kind == "wrong types":
            assert names == {"claude-a", "claude-b"} | {s["name"] for s in mistyped()}
        (kept,) = persist.kept_aside(env)
        assert read(kept) == data
        problem = state["daemon"]["state_error"]
        assert problem.startswith("the saved state was damaged") and kept in problem

        status = json.loads(CliRunner().invoke(app, ["status", "--json"]).output)
        assert status["state_error"] == problem
        res = CliRunner().invoke(app, ["doctor", "--json", "--offline"])
        check = next(c for c in json.loads(res.output) if c["name"] == "saved state")
        assert check["ok"] is False and kept in check["detail"] and problem in check["detail"]
        assert res.exit_code == 1
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=10)
    assert proc.returncode == 0
    with open(paths.log_file(env), encoding="utf-8") as fh:
        assert "the saved state was damaged" in fh.read()
    # the file written at shutdown is sound: the next start restores it whole, quietly
    reg = Registry()
    assert persist.restore_saved(env, reg).problem is None
    assert os.path.exists(path) and len(persist.kept_aside(env)) == 1
