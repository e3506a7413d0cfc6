"""Subagents: pairing, nesting, pauses, continuations, timeouts."""

from __future__ import annotations

from aipager.texts import render
from aipager.daemon.knobs import Knobs

S = "claude-jim"


def ev(name: str, **kw) -> dict:
    return {"hook_event_name": name, "session": S, "prompt_id": "p1", **kw}


def call(tid: str, kind: str, desc: str, caller: str | None = None) -> dict:
    extra = {"agent_id": caller, "agent_type": "x"} if caller else {}
    return ev("PreToolUse", tool_name="Agent", tool_use_id=tid,
              tool_input={"description": desc, "prompt": "p", "subagent_type": kind}, **extra)


def start(core, aid: str, kind: str) -> None:
    core.feed(ev("SubagentStart", agent_id=aid, agent_type=kind))


def test_single_waiting_call_gives_description(core):
    core.feed(ev("UserPromptSubmit", prompt="go"))
    core.feed(call("u1", "Explore", "find the bug"))
    start(core, "a1", "Explore")
    agent = core.registry.get(S).agents["a1"]
    assert (agent.description, agent.parent) == ("find the bug", None)


def test_two_waiting_calls_of_a_type_give_no_description(core):
    core.feed(ev("UserPromptSubmit", prompt="go"))
    core.feed(call("u1", "Explore", "one"))
    core.feed(call("u2", "Explore", "two"))
    start(core, "a1", "Explore")
    assert core.registry.get(S).agents["a1"].description == ""


def test_nesting_when_all_candidates_come_from_one_agent(core):
    core.feed(ev("UserPromptSubmit", prompt="go"))
    start(core, "p", "pipeline-runner")
    core.feed(call("u1", "ship-tester", "test it", caller="p"))
    start(core, "c", "ship-tester")
    sess = core.registry.get(S)
    assert sess.agents["c"].parent == "p"
    row = render.agent_row(sess, sess.agents["c"], core.registry.clock())
    assert row.startswith("🤖 pipeline-runner › ship-tester · test it")


def test_candidates_from_different_agents_defer_to_the_parents_post_tool_use(core):
    core.feed(ev("UserPromptSubmit", prompt="go"))
    start(core, "p1", "runner")
    start(core, "p2", "runner")
    core.feed(call("u1", "tester", "a", caller="p1"))
    core.feed(call("u2", "tester", "b", caller="p2"))
    start(core, "c", "tester")
    sess = core.registry.get(S)
    assert sess.agents["c"].parent is None
    core.feed(ev("PostToolUse", tool_name="Agent", tool_use_id="u2", agent_id="p2", agent_type="runner",
                 tool_input={}, tool_response={"agentId": "c", "status": "async_launched"}))
    assert sess.agents["c"].parent == "p2" and sess.agents["c"].description == "b"


def test_stop_while_child_runs_is_a_pause_and_same_id_continues(core):
    core.feed(ev("UserPromptSubmit", prompt="go"))
    start(core, "p", "runner")
    core.feed(call("u1", "tester", "t", caller="p"))
    start(core, "c", "tester")
    core.feed(ev("SubagentStop", agent_id="p", agent_type="runner"))
    sess = core.registry.get(S)
    assert sess.agents["p"].status == "paused" and len(sess.running_agents()) == 2
    core.feed(ev("SubagentStop", agent_id="c", agent_type="tester"))
    start(core, "p", "runner")
    assert sess.agents["p"].status == "running" and len(sess.agents) == 2
    core.feed(ev("SubagentStop", agent_id="p", agent_type="runner"))
    assert sess.agents["p"].status == "done"


def test_two_minute_rule(core, clock):
    core.feed(ev("UserPromptSubmit", prompt="go"))
    start(core, "p", "runner")
    core.feed(call("u1", "tester", "t", caller="p"))
    start(core, "c", "tester")
    core.feed(ev("SubagentStop", agent_id="p", agent_type="runner"))
    core.feed(ev("SubagentStop", agent_id="c", agent_type="tester"))
    sess = core.registry.get(S)
    clock.advance(119)
    core.tick()
    assert sess.agents["p"].status == "paused"
    clock.advance(2)
    core.tick()
    assert sess.agents["p"].status == "lapsed" and sess.running_agents() == []
    assert not render.agent_row(sess, sess.agents["p"], clock()).startswith("✅")
    # a tool call of its own later still counts as its continuation
    core.feed(ev("PreToolUse", tool_name="Read", tool_use_id="r", tool_input={"file_path": "/x"},
                 agent_id="p", agent_type="runner"))
    assert sess.agents["p"].status == "running"


def test_silence_timeout_drops_an_agent_whose_stop_was_lost(make_core, clock):
    core = make_core(Knobs.from_env({"AIPAGER_SUBAGENT_TTL": "600"}))
    core.feed(ev("UserPromptSubmit", prompt="go"))
    start(core, "a", "Explore")
    start(core, "b", "Explore")
    clock.advance(500)
    core.feed(ev("MessageDisplay", agent_id="b", delta="still here"))  # any event with its id
    clock.advance(101)
    core.tick()
    sess = core.registry.get(S)
    assert (sess.agents["a"].status, sess.agents["b"].status) == ("dropped", "running")


def test_untyped_stop_with_unknown_id_is_ignored(core):
    core.feed(ev("SubagentStop", agent_id="zzz"))
    assert core.registry.get(S).agents == {}
    assert core.ctx.counters["untyped_stop_ignored"] == 1


def test_done_row_and_tool_count(core, clock):
    core.feed(ev("UserPromptSubmit", prompt="go"))
    start(core, "a", "Explore")
    for i in range(3):
        core.feed(ev("PreToolUse", tool_name="Read", tool_use_id=f"r{i}", tool_input={"file_path": "/x"},
                     agent_id="a", agent_type="Explore"))
    clock.advance(65)
    core.feed(ev("SubagentStop", agent_id="a", agent_type="Explore"))
    sess = core.registry.get(S)
    assert render.agent_row(sess, sess.agents["a"], clock()) == "✅ 🤖 Explore · 3 tools used · 1m 05s"


def test_agent_stop_closes_its_own_requests(core, notifier):
    core.feed(ev("UserPromptSubmit", prompt="go"))
    start(core, "a", "Explore")
    core.feed(ev("PermissionRequest", tool_name="Bash", tool_input={"command": "ls"}, agent_id="a",
                 agent_type="Explore"))
    assert core.registry.get(S).state.value == "waiting"
    core.feed(ev("SubagentStop", agent_id="a", agent_type="Explore"))
    assert core.registry.get(S).requests == [] and len(notifier.of("request_closed")) == 1
    assert core.registry.get(S).state.value == "working"


def test_gone_sessions_age_out_after_two_weeks(core, clock):
    core.feed(ev("SessionEnd", reason="other"))
    clock.advance(13 * 86400)
    core.tick()
    assert core.registry.get(S) is not None
    clock.advance(2 * 86400)
    core.tick()
    assert core.registry.get(S) is None
