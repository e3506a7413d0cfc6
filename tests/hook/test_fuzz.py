"""Differential fuzz: random and mutated events through the native hook and
the Python twin must give identical datagrams, stdout and exit codes.

Valid documents exercise the C scanner and splice (the fast path takes them);
single-byte mutations exercise its rejections (it must decline whatever the
twin would treat differently).  PreToolUse and UserPromptSubmit run against a
drawn task state (snapshot, mark, notes, published floor) and must also
leave the same files:
mutated, they exercise the fail-closed check of an unreadable PreToolUse.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import hookrun
from support.mutation import mutate
from support.policy_state import collect_policy_files, prepare_policy_files

NAMES = ["Stop", "PostToolUse", "SessionStart", "Notification", "MessageDisplay", "SubagentStop"]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=12), inner, max_size=5)),
    max_leaves=25,
)
events = st.builds(
    lambda name, extra, before: ({**extra, "hook_event_name": name} if not before
                                 else {"hook_event_name": name, **extra}),
    st.sampled_from(NAMES),
    st.dictionaries(st.text(max_size=15), values, max_size=6),
    st.booleans(),
)
layouts = st.sampled_from([
    {"separators": (",", ":")},
    {"indent": 2},
    {"ensure_ascii": False},
    {"separators": (" , ", " : "), "ensure_ascii": False},
])

SETTINGS = settings(
    max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def both(stdin: bytes) -> tuple:
    env = hookrun.hook_env()
    outcomes = []
    for kind in ("native", "twin"):
        receiver = hookrun.receiver_for(env)
        try:
            done = hookrun.run(hookrun.contender_cmd(kind, "hook"), stdin, env, receiver)
        finally:
            receiver.close()
        outcomes.append((done.exit, done.stdout, json.dumps(done.sent, sort_keys=True)))
    return outcomes[0], outcomes[1]


@SETTINGS
@given(event=events, layout=layouts)
def test_valid_events_agree(native_bins, event: dict, layout: dict) -> None:
    stdin = json.dumps(event, **layout).encode("utf-8", "surrogatepass")
    native, twin = both(stdin)
    assert native == twin


@SETTINGS
@given(event=events, data=st.data())
def test_mutated_events_agree(native_bins, event: dict, data) -> None:
    native, twin = both(mutate(json.dumps(event).encode(), data))
    assert native == twin


POLICY_NAMES = ["PreToolUse", "UserPromptSubmit"]
STATES = st.sampled_from([
    {},
    {"snapshot": {"origin": "terminal"}},
    {"snapshot": {"origin": "terminal"}, "mark": True},
    {"snapshot": {"origin": "telegram"}, "mark": True},
    {"snapshot": {"origin": "telegram", "exempt": True}},
    {"snapshot": {"origin": "terminal", "halted": "x"}},
    {"mark": True, "notes_dir": True},
    {"notes": ["a waiting message"]},
    {"floor": {"no_access": ["/etc/*"], "allowed_tools": ["read", "bash"]}},
    {"floor": {"commands": ["rm +-rf"]}},
])
prompts = st.one_of(
    st.text(max_size=30),
    st.builds(lambda ws, rest: ws + "<task-notification>" + rest,
              st.text(alphabet=" \t\n\x0b\x0c\x1c\x85\xa0\u2028", max_size=3), st.text(max_size=10)),
)
policy_events = st.builds(
    lambda name, extra, prompt, tool, tin: {
        "hook_event_name": name, "session_id": "s1", "cwd": "/home/u/p", **extra,
        **({"prompt": prompt} if name == "UserPromptSubmit" else {"tool_name": tool, "tool_input": tin}),
    },
    st.sampled_from(POLICY_NAMES),
    st.dictionaries(st.sampled_from(["permission_mode", "x", "tool_use_id"]), scalars, max_size=2),
    prompts,
    st.sampled_from(["Bash", "Read", "Write"]),
    st.fixed_dictionaries({}, optional={"command": st.sampled_from(["ls", "sudo id"]),
                                        "file_path": st.sampled_from(["a.txt", "/etc/shadow"])}),
)


def both_in_state(stdin: bytes, state: dict) -> tuple:
    env = hookrun.hook_env("claude-fz", HOME="/home/u")
    outcomes = []
    for kind in ("native", "twin"):
        prepare_policy_files(state, env, "claude-fz")
        receiver = hookrun.receiver_for(env)
        try:
            done = hookrun.run(hookrun.contender_cmd(kind, "hook"), stdin, env, receiver)
        finally:
            receiver.close()
        left = collect_policy_files(env, "claude-fz")
        assert b"Traceback" not in done.stderr
        outcomes.append((done.exit, done.stdout, json.dumps(done.sent, sort_keys=True), left))
    return outcomes[0], outcomes[1]


@SETTINGS
@given(event=policy_events, state=STATES, data=st.data())
def test_policy_events_agree(native_bins, event: dict, state: dict, data) -> None:
    raw = bytearray(json.dumps(event).encode())
    if data.draw(st.booleans()):
        cut = data.draw(st.integers(min_value=0, max_value=len(raw) - 1))
        action = data.draw(st.sampled_from(["truncate", "replace"]))
        if action == "truncate":
            del raw[cut:]
        else:
            raw[cut] = data.draw(st.sampled_from(list(b'{}[]",:\\ \x00\x80\xff')))
    native, twin = both_in_state(bytes(raw), state)
    assert native == twin
