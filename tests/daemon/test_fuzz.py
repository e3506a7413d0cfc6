"""Random event streams (hypothesis): handlers never fail and the session model stays coherent."""

from __future__ import annotations

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.sequences import FakeClock

from aipager.daemon import persist
from aipager.daemon.core import DaemonCore
from aipager.daemon.knobs import Knobs
from aipager.port.model import State
from aipager.port.outputs import RecordingNotifier

SESSIONS = ("claude-a", "claude-b")
TOOLS = ("Bash", "Read", "Agent", "AskUserQuestion", "TaskStop")
AGENTS = ("a1", "a2", "a3")
TYPES = ("Explore", "general-purpose")
IDS = ("t1", "t2", "t3", "t4")
PROMPTS = ("p1", "p2", "p3")

_maybe_agent = st.one_of(st.none(), st.sampled_from(AGENTS))


def _tool_input(tool: str) -> dict:
    if tool == "Agent":
        return {"description": "d", "subagent_type": "Explore"}
    if tool == "AskUserQuestion":
        return {"questions": [{"question": "q?", "options": [{"label": "x"}]}]}
    if tool == "TaskStop":
        return {"task_id": "bg1"}
    return {"command": "ls"}


@st.composite
def events(draw) -> dict:
    name = draw(st.sampled_from((
        "SessionStart", "SessionEnd", "UserPromptSubmit", "PreToolUse", "PermissionRequest",
        "PostToolUse", "PostToolUseFailure", "permission_prompt", "idle_prompt", "Stop",
        "StopFailure", "SubagentStart", "SubagentStop", "PreCompact", "PostCompact",
        "MessageDisplay", "Interrupt", "statusline", "queue_pickup", "safety_blocked", "tick", "restart")))
    ev: dict = {"session": draw(st.sampled_from(SESSIONS)), "prompt_id": draw(st.sampled_from(PROMPTS))}
    if name in ("permission_prompt", "idle_prompt"):
        ev.update(hook_event_name="Notification", notification_type=name)
    elif name == "statusline":
        ev.update(type="statusline", context_pct=draw(st.integers(0, 100)))
    else:
        ev["hook_event_name"] = name
    if name in ("PreToolUse", "PermissionRequest", "PostToolUse", "PostToolUseFailure"):
        tool = draw(st.sampled_from(TOOLS))
        ev.update(tool_name=tool, tool_use_id=draw(st.sampled_from(IDS)), tool_input=_tool_input(tool))
        if name == "PostToolUse" and tool == "Bash" and draw(st.booleans()):
            ev["tool_response"] = {"backgroundTaskId": "bg1"}
        if name == "PostToolUse" and tool == "Agent":
            ev["tool_response"] = {"agentId": draw(st.sampled_from(AGENTS))}
    if name in ("SubagentStart", "SubagentStop", "PreToolUse", "PostToolUse", "MessageDisplay",
                "PermissionRequest"):
        agent = draw(_maybe_agent) if name not in ("SubagentStart", "SubagentStop") else draw(st.sampled_from(AGENTS))
        if agent:
            ev["agent_id"] = agent
            if draw(st.booleans()) or name == "SubagentStart":
                ev["agent_type"] = draw(st.sampled_from(TYPES))
    if name == "SessionStart":
        ev["source"] = draw(st.sampled_from(("startup", "resume", "clear", "compact")))
    if name == "UserPromptSubmit":
        ev["prompt"] = draw(st.sampled_from((
            "hello", "<task-notification>\n<task-id>bg1</task-id>\n<status>completed</status>",
            "<task-notification>\n<task-id>a1</task-id>\n<status>completed</status>")))
    if name in ("Stop", "StopFailure"):
        ev["last_assistant_message"] = draw(st.sampled_from(("", "Done.", "Other.")))
    if name == "MessageDisplay":
        ev.update(message_id="m", delta="text")
    if name == "queue_pickup":
        ev["consumed"] = [{"msg_id": 1, "chat_id": 2}]
    return ev


def check(core: DaemonCore, knobs: Knobs) -> None:
    assert core.counters["errors"] == 0
    for sess in core.registry:
        assert len(sess.rows) <= knobs.rows_cap
        assert set(sess.row_index) == {r.id for r in sess.rows}
        if sess.requests:
            assert sess.state == State.WAITING, (sess.state, sess.requests)
        if sess.state == State.WAITING:
            assert sess.requests
        if sess.state == State.GONE:
            assert not sess.running_agents() and not sess.running_bg()
        for agent in sess.agents.values():
            assert agent.parent != agent.id


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(events(), st.floats(0, 200)), max_size=60))
def test_random_streams_keep_the_model_coherent(stream):
    knobs = Knobs(rows_cap=5, subagent_silence=300, bg_shell_max_track=600, dedup_window=0)
    clock = FakeClock()
    out = RecordingNotifier()
    def new_core() -> DaemonCore:
        return DaemonCore(out, knobs=knobs, clock=clock, read_answer=lambda p: "From transcript.",
                          monotonic=clock, read_notifications=lambda p: [])

    core = new_core()
    for ev, dt in stream:
        clock.advance(dt)
        if ev.get("hook_event_name") == "tick":
            core.tick()
        elif ev.get("hook_event_name") == "restart":
            saved = orjson.loads(orjson.dumps(persist.build_state(core.registry, {})))
            core = new_core()
            persist.restore(core.registry, saved)
        else:
            core.feed(ev)
        core.flush_cards()
        check(core, knobs)
    delivered = [(o.session, o.data["prompt_id"], o.data["digest"]) for o in out.of("answer")]
    assert len(delivered) == len(set(delivered))
