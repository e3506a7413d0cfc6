"""Replays of Claude Code event sequences (recorded live by the e2e harness, or built from
the real 2.1.328 payloads), including lost, repeated and reordered events and a daemon
restart at every point of every sequence."""

from __future__ import annotations

import orjson
import pytest
from support.sequences import FakeClock, load_sequence, sequence_names

from aipager.daemon import persist
from aipager.daemon.core import DaemonCore
from aipager.daemon.knobs import Knobs
from aipager.port.model import State
from aipager.port.outputs import RecordingNotifier

NAMES = sequence_names()


def run(events, *, core=None, knobs=None, clock=None, step=1.0):
    clock = clock or FakeClock()
    out = RecordingNotifier()
    core = core or DaemonCore(out, knobs=knobs, clock=clock, read_answer=lambda p: None, monotonic=clock)
    for event in events:
        core.feed_bytes(orjson.dumps(event))
        clock.advance(step)
        core.flush_cards()
    return core, core.notifier


def signature(core: DaemonCore) -> dict:
    out = {}
    for sess in core.registry:
        out[sess.name] = (
            str(sess.state),
            [(r.tool, r.status) for r in sess.rows],
            sorted((a.type, a.status, a.tool_count) for a in sess.agents.values()),
            sorted((b.id, b.status) for b in sess.bg.values()),
            len(sess.requests),
        )
    return out


def answers(notifier) -> list[str]:
    return [o.text.split("\n\n")[0] for o in notifier.of("answer")]


def test_sequences_exist():
    assert {"print_answer.jsonl", "permission_bash.json", "background_agent.json"} <= set(NAMES)


def test_print_answer():
    core, out = run(load_sequence("print_answer.jsonl")[:-1])
    assert answers(out) == ["Hello from the fake model."]
    assert out.texts("card")[-1].startswith("✅ e2e · done")
    assert out.of("card")[-1].data["final"] is True


def test_print_tools_rows_and_failure():
    core, out = run(load_sequence("print_tools.jsonl"))
    sess = core.registry.get("claude-e2e")
    assert [(r.tool, r.status) for r in sess.rows] == [
        ("Bash", "ok"), ("Bash", "failed"), ("Write", "ok"), ("Edit", "ok")]
    assert sess.state == State.GONE
    assert answers(out) == ["All four steps ran."]


def first_stop(events) -> int:
    return next(i for i, e in enumerate(events) if e.get("hook_event_name") == "Stop") + 1


def test_print_subagent_keeps_work_open_after_stop():
    events = load_sequence("print_subagent.jsonl")
    cut = first_stop(events)
    core, out = run(events[:cut])  # up to the main Stop
    sess = core.registry.get("claude-e2e")
    assert sess.state == State.READY and sess.work_open()
    first = out.of("answer")[0].text
    assert first.startswith("A helper is on it.\n\n🔄 e2e · 1 agent still working (general-purpose)")
    assert out.of("card")[-1].data["final"] is False
    card = out.texts("card")[-1]
    assert "🤖 general-purpose · " in card
    run(events[cut:], core=core)
    (agent,) = sess.agents.values()
    assert (agent.status, agent.tool_count, agent.description) == ("done", 1, "look around")
    assert answers(out) == ["A helper is on it.", "The helper reported back."]


def test_print_background_shell():
    events = load_sequence("print_background_shell.jsonl")
    cut = first_stop(events)
    core, out = run(events[:cut])
    sess = core.registry.get("claude-e2e")
    assert [b.status for b in sess.bg.values()] == ["running"]
    assert out.texts("answer") == ["Started it in the background.\n\n🔄 e2e · 1 background command"]
    run(events[cut:], core=core)
    assert [b.status for b in sess.bg.values()] == ["completed"]


def test_print_compact_without_card_says_compacting():
    core, out = run(load_sequence("print_compact.jsonl"))
    assert out.notices("compacting") == ["🔄 e2e · Compacting the conversation"]


def test_permission_bash():
    core, out = run(load_sequence("permission_bash.json"))
    (perm,) = out.of("permission")
    # the whole command, and the folder it would run in
    assert perm.text == ("🔐 perm · Bash: run cmd\ntouch /home/dev/project/made-by-claude\n"
                         "📁 in /home/dev/project")
    assert perm.data["reply_addr"] == "/run/aipager-reply-1.sock"
    assert len(out.of("request_closed")) == 1
    assert answers(out) == ["All done. The command ran."]
    assert core.registry.get("claude-perm").state == State.GONE


def test_terminal_dialog():
    core, out = run(load_sequence("terminal_dialog.json"))
    assert len(out.of("permission")) == 1  # the permission_prompt is the same dialog
    assert out.notices("still_waiting") == ["⬆️ dialog · still waiting for your answer above"]
    assert answers(out) == ["All done. The command ran."]


def test_compaction_sequence():
    core, out = run(load_sequence("compaction.json"))
    assert out.notices("context_warning") == ["⚠️ compact · Context at 82% - will compact soon"]
    assert out.notices("compacted") == ["📦 compact · Conversation compacted: 82% → 4%"]


def test_background_agent_sequence():
    core, out = run(load_sequence("background_agent.json"))
    sess = core.registry.get("claude-agent")
    (agent,) = sess.agents.values()
    assert (agent.status, agent.tool_count, agent.description) == ("done", 1, "look around")
    assert answers(out) == ["Started an agent to look around.", "The agent finished: All done. The command ran."]


# -- robustness over every sequence -------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_repeated_datagrams_change_nothing(name):
    events = load_sequence(name)
    clean, clean_out = run(events)
    doubled = [e for event in events for e in (event, event)]
    dup, dup_out = run(doubled, step=0.5)  # byte-identical repeats within the window
    assert signature(dup) == signature(clean) and answers(dup_out) == answers(clean_out)
    nodedup, nodedup_out = run(doubled, knobs=Knobs(dedup_window=0), step=0.5)
    assert answers(nodedup_out) == answers(clean_out)  # handlers are idempotent on their own
    assert signature(nodedup) == signature(clean)


@pytest.mark.parametrize("name", NAMES)
def test_any_single_lost_event_is_survived(name):
    events = load_sequence(name)
    _, clean_out = run(events)
    for i in range(len(events)):
        core, out = run(events[:i] + events[i + 1:])
        got = answers(out)
        assert len(got) == len(set(got)), (i, got)
        assert set(got) <= set(answers(clean_out)), i
        assert core.counters["errors"] == 0


@pytest.mark.parametrize("name", NAMES)
def test_adjacent_swaps_never_duplicate_or_invent_answers(name):
    events = load_sequence(name)
    _, clean_out = run(events)
    for i in range(len(events) - 1):
        swapped = events[:i] + [events[i + 1], events[i]] + events[i + 2:]
        core, out = run(swapped)
        got = answers(out)
        assert len(got) == len(set(got)) and set(got) <= set(answers(clean_out)), (i, got)
        assert core.counters["errors"] == 0


@pytest.mark.parametrize("name", NAMES)
def test_restart_at_every_point_loses_and_repeats_nothing(name):
    events = load_sequence(name)
    clean, clean_out = run(events)
    for cut in range(1, len(events)):
        clock = FakeClock()
        first, first_out = run(events[:cut], clock=clock)
        saved = orjson.loads(orjson.dumps(persist.build_state(first.registry, {"pid": 1})))
        out = RecordingNotifier()
        second = DaemonCore(out, clock=clock, read_answer=lambda p: None, monotonic=clock)
        persist.restore(second.registry, saved)
        run(events[cut:], core=second, clock=clock)
        assert answers(first_out) + answers(out) == answers(clean_out), cut
        assert signature(second) == signature(clean), cut


def test_lost_stop_is_recovered_by_idle_prompt_from_the_transcript():
    events = [e for e in load_sequence("print_answer.jsonl") if e["hook_event_name"] not in ("Stop", "SessionEnd")]
    idle = {**events[-1], "hook_event_name": "Notification", "notification_type": "idle_prompt"}
    idle.pop("delta", None)
    clock = FakeClock()
    transcript = {events[0]["transcript_path"]: "Hello from the transcript."}
    core = DaemonCore(RecordingNotifier(), clock=clock, read_answer=transcript.get, monotonic=clock)
    run(events + [idle], core=core, clock=clock)
    assert answers(core.notifier) == ["Hello from the transcript."]
