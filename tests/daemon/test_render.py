"""render: card and notice text as pure functions of session state."""

from __future__ import annotations

from aipager.texts import render
from aipager.port.model import Agent, BgCommand, Row, Session, State, Task

T0 = 1_800_000_000.0


def _session(**kw) -> Session:
    sess = Session(name="claude-jim", label="jim", registered_at=T0, **kw)
    sess.task = Task(seq=1, started_at=T0)
    return sess


def test_notice_strings_match_the_issue():
    assert render.compacted("jim", 82, 4) == "📦 jim · Conversation compacted: 82% → 4%"
    assert render.compacting("jim") == "🔄 jim · Compacting the conversation"
    assert render.context_warning("jim", 82.4) == "⚠️ jim · Context at 82% - will compact soon"
    assert render.still_waiting("jim") == "⬆️ jim · still waiting for your answer above"


def test_elapsed_formats():
    assert [render.elapsed(s) for s in (0, 59, 61, 3599, 3720)] == ["0s", "59s", "1m 01s", "59m 59s", "1h 02m"]


def test_agent_rows_running_done_and_nested():
    sess = _session()
    parent = Agent(id="a1", type="pipeline-runner", task=1, started_at=T0, last_seen=T0,
                   activity="Bash: make", tool_count=3)
    child = Agent(id="a2", type="ship-tester", task=1, started_at=T0 + 5, last_seen=T0, parent="a1")
    sess.agents = {"a1": parent, "a2": child}
    assert render.agent_row(sess, parent, T0 + 12) == "🤖 pipeline-runner · Bash: make · 12s"
    assert render.agent_row(sess, child, T0 + 12).startswith("🤖 pipeline-runner › ship-tester · ")
    parent.status, parent.ended_at = "done", T0 + 75
    assert render.agent_row(sess, parent, T0 + 99) == "✅ 🤖 pipeline-runner · 3 tools used · 1m 15s"


def test_card_lists_rows_agents_and_commands_in_start_order():
    sess = _session(state=State.WORKING)
    sess.task.commentary = "Looking at it."
    sess.rows.append(Row(id="t1", tool="Bash", summary="Bash: ls", task=1, started_at=T0 + 1, status="ok"))
    sess.rows.append(Row(id="t2", tool="Bash", summary="Bash: false", task=1, started_at=T0 + 3,
                         status="failed", error="Exit code 1"))
    sess.rows.append(Row(id="t3", tool="Bash", summary="Bash: sub", task=1, started_at=T0 + 4, agent="a1"))
    sess.agents["a1"] = Agent(id="a1", type="Explore", task=1, started_at=T0 + 2, last_seen=T0)
    sess.bg["b1"] = BgCommand(id="b1", command="sleep 100", task=1, started_at=T0 + 5)
    text = render.card(sess, T0 + 10)
    assert text.splitlines() == [
        "⏳ jim · working · 10s",
        "> Looking at it.",
        "✓ Bash: ls",
        "🤖 Explore · starting · 8s",
        "✗ Bash: false — Exit code 1",
        "⚙️ shell: sleep 100 · running · 5s",
    ]


def test_card_folds_old_rows_and_shows_compacting():
    sess = _session(state=State.WORKING)
    for i in range(render.CARD_ROWS + 5):
        sess.rows.append(Row(id=f"t{i}", tool="Read", summary=f"Read: /f{i}", task=1, started_at=T0 + i))
    sess.compacting = True
    lines = render.card(sess, T0 + 100).splitlines()
    assert lines[1] == "▸ 5 earlier tool calls"
    assert lines[-1] == "🔄 jim · Compacting the conversation"
    assert lines[-2] == f"⏳ Read: /f{render.CARD_ROWS + 4}"


def test_live_status_after_stop_names_agents_and_commands():
    sess = _session(state=State.READY)
    sess.task.ended_at = T0 + 3
    sess.agents["a1"] = Agent(id="a1", type="Explore", task=1, started_at=T0, last_seen=T0,
                              activity="Grep: foo")
    sess.bg["b1"] = BgCommand(id="b1", command="npm test", task=1, started_at=T0)
    status = render.live_status(sess)
    assert status.splitlines() == [
        "🔄 jim · 1 agent still working (Explore) · 1 background command",
        "  🤖 Explore · Grep: foo",
    ]
    assert render.card(sess, T0 + 9).splitlines()[0] == status.splitlines()[0]


def test_card_is_a_pure_function():
    sess = _session(state=State.WORKING)
    assert render.card(sess, T0 + 5) == render.card(sess, T0 + 5)
