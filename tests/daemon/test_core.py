"""The ingest boundary: malformed, unknown, session-less and failing events are counted, never fatal."""

from __future__ import annotations

import orjson

from aipager.daemon.dispatch import EventRouter


def test_malformed_unknown_and_sessionless(core):
    core.feed_bytes(b"{not json")
    core.feed_bytes(b"[1, 2]")
    core.feed_bytes(orjson.dumps({"hook_event_name": "FutureEvent", "session": "claude-a"}))
    core.feed_bytes(orjson.dumps({"hook_event_name": "Stop"}))  # a session aipager did not start
    c = core.counters
    assert (c["received"], c["malformed"], c["unhandled"], c["ignored"], c["handled"]) == (4, 2, 1, 1, 0)
    assert core.registry.get("claude-a") is None or core.registry.get("claude-a").task is None


def test_dispatch_key_prefers_notification_type(core):
    core.feed({"hook_event_name": "Notification", "notification_type": "auth_success", "session": "claude-a"})
    assert core.counters["unhandled"] == 1


def test_a_failing_handler_is_counted_and_the_next_event_still_works(core):
    broken = EventRouter("broken")

    @broken.on("Boom")
    def boom(ev, sess, ctx):
        raise RuntimeError("bug")

    core.dispatcher.include(broken)
    core.feed({"hook_event_name": "Boom", "session": "claude-a"})
    core.feed({"hook_event_name": "UserPromptSubmit", "session": "claude-a", "prompt": "x"})
    assert core.counters["errors"] == 1 and core.counters["handled"] == 1


def test_byte_identical_repeat_within_window_is_dropped(core, clock):
    data = orjson.dumps({"type": "statusline", "session": "claude-a", "context_pct": 5})
    core.feed_bytes(data)
    core.feed_bytes(data)
    clock.advance(7)  # past two windows: certainly forgotten
    core.feed_bytes(data)
    assert core.counters["repeats"] == 1 and core.counters["handled"] == 2


def test_router_refuses_two_handlers_for_one_key():
    router = EventRouter("x")
    router.on("A")(lambda ev, sess, ctx: None)
    try:
        router.on("A")(lambda ev, sess, ctx: None)
    except ValueError as exc:
        assert "already handles" in str(exc)
    else:
        raise AssertionError("duplicate handler accepted")


def test_cards_are_emitted_only_when_their_text_changes(core, notifier):
    core.feed({"hook_event_name": "UserPromptSubmit", "session": "claude-a", "prompt": "x", "prompt_id": "p"})
    assert core.flush_cards() == 1
    core.registry.touch(core.registry.get("claude-a"))
    assert core.flush_cards() == 0
    (card,) = notifier.of("card")
    assert card.data == {"task": 1, "final": False}


def test_a_sessions_cost_is_kept_without_the_floats_noise(core):
    """Claude Code sums its cost in floats: 0.14839999999999992 was saved and shown by
    ``aipager status --json`` as such."""
    core.feed({"type": "statusline", "session": "claude-a", "context_pct": 5,
               "cost_usd": 0.14839999999999992})
    assert core.registry.get("claude-a").cost_usd == 0.1484
    core.feed({"type": "statusline", "session": "claude-b",
               "cost": {"total_cost_usd": 0.30000000000000004}})
    assert core.registry.get("claude-b").cost_usd == 0.3
