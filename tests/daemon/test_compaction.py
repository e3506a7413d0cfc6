"""Compaction notices and the context warning."""

from __future__ import annotations

S = "claude-jim"


def ev(name: str, **kw) -> dict:
    return {"hook_event_name": name, "session": S, "session_id": "c1", **kw}


def sl(pct: float, **kw) -> dict:
    return {"type": "statusline", "session": S, "context_pct": pct, "cost_usd": 0.5,
            "model_name": "Opus 5.5", **kw}


def test_statusline_figures_and_warning_once_per_conversation(core, notifier):
    core.feed(ev("SessionStart", source="startup"))
    core.feed(sl(50))
    sess = core.registry.get(S)
    assert (sess.model, sess.context_pct, sess.cost_usd) == ("Opus 5.5", 50, 0.5)
    core.feed(sl(82))
    core.feed(sl(85))
    assert notifier.notices("context_warning") == ["⚠️ jim · Context at 82% - will compact soon"]
    # compaction does not repeat it
    core.feed(ev("PreCompact", trigger="auto"))
    core.feed(ev("PostCompact", trigger="auto"))
    core.feed(ev("SessionStart", source="compact", sl_tokens={"context_pct": 10}))
    core.feed(sl(81))
    assert len(notifier.notices("context_warning")) == 1
    # a new conversation earns it again
    core.feed(ev("SessionStart", source="clear", session_id="c2"))
    core.feed(sl(90))
    assert len(notifier.notices("context_warning")) == 2


def test_nested_statusline_shape_is_understood(core):
    core.feed({"type": "statusline", "session": S, "model": {"display_name": "Sonnet 5.5"},
               "context_window": {"used_percentage": 33}, "cost": {"total_cost_usd": 0.02,
                                                                   "total_lines_added": 4}})
    sess = core.registry.get(S)
    assert (sess.model, sess.context_pct, sess.cost_usd, sess.lines_added) == ("Sonnet 5.5", 33, 0.02, 4)


def test_compacted_line_from_session_start(core, notifier):
    core.feed(sl(82))
    core.feed(ev("PreCompact", trigger="manual"))
    assert notifier.notices("compacting") == ["🔄 jim · Compacting the conversation"]
    core.feed(ev("PostCompact", trigger="manual"))
    core.feed(ev("SessionStart", source="compact", sl_tokens={"context_pct": 4}))
    assert notifier.notices("compacted") == ["📦 jim · Conversation compacted: 82% → 4%"]
    core.feed(sl(4))
    assert len(notifier.notices("compacted")) == 1


def test_compacted_line_from_statusline_when_session_start_is_stale_or_lost(core, notifier):
    core.feed(sl(82))
    core.feed(ev("PreCompact", trigger="auto"))
    core.feed(ev("PostCompact", trigger="auto"))
    core.feed(sl(82))  # not yet redrawn
    assert notifier.notices("compacted") == []
    core.feed(sl(6))
    assert notifier.notices("compacted") == ["📦 jim · Conversation compacted: 82% → 6%"]


def test_compacting_on_an_open_card_is_a_card_line_not_a_message(core, notifier):
    core.feed(ev("UserPromptSubmit", prompt="go", prompt_id="p1"))
    core.feed(ev("PreCompact", trigger="auto"))
    assert notifier.notices("compacting") == []
    core.flush_cards()
    assert notifier.texts("card")[-1].endswith("🔄 jim · Compacting the conversation")


def test_compacting_after_the_task_ended_is_a_message_and_leaves_the_done_card_alone(
        core, notifier):
    """/compact after a task ended: the line came as a message and was also put on the
    ended task's card (an edit of an old message up the chat), then taken off again."""
    core.feed(ev("UserPromptSubmit", prompt="go", prompt_id="p1"))
    core.feed(ev("Stop", prompt_id="p1", last_assistant_message="Done."))
    core.flush_cards()
    cards = len(notifier.texts("card"))
    core.feed(ev("PreCompact", trigger="manual"))
    core.flush_cards()
    assert notifier.notices("compacting") == ["🔄 jim · Compacting the conversation"]
    core.feed(ev("PostCompact", trigger="manual"))
    core.flush_cards()
    assert not any("Compacting" in t for t in notifier.texts("card")[cards:]), \
        notifier.texts("card")[cards:]


def test_compacted_line_without_a_drop_to_show_is_said_once_after_a_while(core, notifier, clock):
    # as Claude Code 2.1.328 sends a /compact of a small conversation (tui_compact.jsonl):
    # the figure is 0% before and after, so no reading ever shows a drop
    core.feed(ev("PreCompact", trigger="manual", sl_tokens={"context_pct": 0}))
    core.feed(ev("SessionStart", source="compact", sl_tokens={"context_pct": 0}))
    core.feed(ev("PostCompact", trigger="manual", sl_tokens={"context_pct": 0}))
    core.tick()
    assert notifier.notices("compacted") == []  # a reading may still show the drop
    clock.advance(11)
    core.tick()
    core.feed(sl(0))
    clock.advance(11)
    core.tick()
    assert notifier.notices("compacted") == ["📦 jim · Conversation compacted"]


def test_compacted_line_without_any_status_line(core, notifier, clock):
    core.feed(ev("SessionStart", source="startup"))
    core.feed(ev("PreCompact", trigger="manual"))
    core.feed(ev("PostCompact", trigger="manual"))
    clock.advance(11)
    core.tick()
    core.tick()
    assert notifier.notices("compacted") == ["📦 jim · Conversation compacted"]
