"""What junk datagrams can make the daemon keep is bounded, and the log says when a cap bites."""

from __future__ import annotations

import logging
import tracemalloc

import orjson

from aipager.daemon import limits, persist
from aipager.daemon.knobs import Knobs
from aipager.port.model import State
from aipager.daemon.terminal import mark_discovered

CAP = Knobs().orphan_cap


def junk(i: int) -> list[dict]:
    name = f"claude-junk{i}"
    return [{"hook_event_name": "UserPromptSubmit", "session": name, "prompt": "x" * 50,
             "prompt_id": f"p{i}", "transcript_path": f"/t/{i}.jsonl"},
            {"hook_event_name": "PreToolUse", "session": name, "tool_name": "Bash",
             "tool_use_id": f"t{i}", "tool_input": {"command": "ls"}, "prompt_id": f"p{i}"}]


def test_twenty_thousand_junk_sessions_stay_bounded(core, clock, caplog):
    caplog.set_level(logging.WARNING, "aipager.daemon")
    reg = core.registry
    # real sessions: seen with their dtach socket, busy or not
    mark_discovered(reg, {"claude-real": "/s/real.sock", "claude-idle": "/s/idle.sock"},
                    lambda s, why: None)
    core.feed({"hook_event_name": "UserPromptSubmit", "session": "claude-real", "prompt": "go",
               "prompt_id": "r"})
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        for i in range(20_000):
            clock.advance(0.001)
            for ev in junk(i):
                core.feed(ev)
            assert len(reg.sessions) <= CAP + limits.SHED_SLACK + 2
            if i % 1000 == 999:
                core.tick()
        core.tick()
        grown = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert core.counters["errors"] == 0
    orphans = [s for s in reg if not s.socket_seen]
    assert len(orphans) == CAP
    # the newest are kept, the real ones always
    assert {"claude-real", "claude-idle", "claude-junk19999"} <= set(reg.sessions)
    assert "claude-junk0" not in reg.sessions
    assert reg.get("claude-real").task.prompt == "go"
    assert core.ctx.counters["sessions_forgotten"] == 20_000 - CAP
    capped = [r for r in caplog.records if "never seen with a dtach socket" in r.getMessage()]
    assert len(capped) == 1
    assert grown < 8 * 1024 * 1024, grown
    state = orjson.dumps(persist.build_state(reg, {}))
    assert len(state) < 1024 * 1024, len(state)


def test_ended_and_unknown_orphans_go_first_busy_ones_last(make_core, clock):
    core = make_core(Knobs(orphan_cap=3))
    for name in ("claude-busy", "claude-ended", "claude-new"):
        clock.advance(1)
        core.feed({"hook_event_name": "UserPromptSubmit", "session": name, "prompt": "x",
                   "prompt_id": "p"})
    core.feed({"hook_event_name": "SessionEnd", "session": "claude-ended", "reason": "other"})
    core.feed({"hook_event_name": "Stop", "session": "claude-new", "prompt_id": "p"})
    clock.advance(1)
    core.feed({"type": "statusline", "session": "claude-unknown", "context_pct": 1})
    core.tick()
    # busy (a task running) is the oldest but stays; the ended one went first
    assert set(core.registry.sessions) == {"claude-busy", "claude-new", "claude-unknown"}


def test_idle_orphans_expire_ended_ones_follow_the_two_week_rule(make_core, clock):
    core = make_core(Knobs(orphan_idle=3600))
    mark_discovered(core.registry, {"claude-real": "/s.sock"}, lambda s, why: None)
    for name in ("claude-a", "claude-gone"):
        core.feed({"hook_event_name": "SessionStart", "session": name, "source": "startup"})
    core.feed({"hook_event_name": "SessionEnd", "session": "claude-gone", "reason": "other"})
    clock.advance(3000)
    core.tick()
    assert len(core.registry.sessions) == 3
    clock.advance(700)
    core.tick()
    assert set(core.registry.sessions) == {"claude-real", "claude-gone"}
    assert core.ctx.counters["sessions_forgotten"] == 1
    # an event brings a forgotten session back as new
    core.feed({"hook_event_name": "SessionStart", "session": "claude-a", "source": "resume"})
    assert core.registry.get("claude-a").state == State.READY


def test_report_error_places_are_capped(core, caplog):
    caplog.set_level(logging.WARNING, "aipager.daemon")
    for i in range(50_000):
        core.feed({"type": "report_error", "where": f"place-{i}", "event": "PreToolUse"})
    for _ in range(3):
        core.feed({"type": "report_error", "where": "place-7"})
    core.feed({"type": "report_error", "where": "x" * 100_000})
    keys = [k for k in core.ctx.counters if k.startswith("report_error:")]
    assert len(keys) == limits.FAMILY_KEYS_CAP + 1
    assert core.ctx.counters["report_error:other"] == 50_000 - limits.FAMILY_KEYS_CAP + 1
    assert core.ctx.counters["report_error:place-7"] == 4
    assert max(len(k) for k in keys) <= len("report_error:") + limits.KEY_TEXT_MAX
    capped = [r for r in caplog.records if "distinct report_error keys" in r.getMessage()]
    assert len(capped) == 1
    # one log line per place at most, not one per report
    assert len(caplog.records) <= limits.FAMILY_KEYS_CAP + 2


def test_a_long_place_name_is_cut(core):
    core.feed({"type": "report_error", "where": "y" * 1000})
    assert core.ctx.counters["report_error:" + "y" * limits.KEY_TEXT_MAX] == 1


def test_an_old_state_full_of_junk_is_trimmed_at_the_first_sweep(make_core):
    # a daemon of before the caps saved them all
    before = make_core(Knobs(orphan_cap=10_000))
    for i in range(CAP + 500):
        before.feed({"type": "statusline", "session": f"claude-j{i}", "context_pct": 1})
    saved = orjson.loads(orjson.dumps(persist.build_state(before.registry, {})))
    assert len(saved["sessions"]) == CAP + 500
    fresh = make_core()
    persist.restore(fresh.registry, saved)
    fresh.tick()
    assert len(fresh.registry.sessions) == CAP


def test_open_requests_per_session_are_capped(core, notifier):
    from aipager.daemon.requests import REQUESTS_CAP

    core.feed({"hook_event_name": "UserPromptSubmit", "session": "claude-r", "prompt": "x",
               "prompt_id": "p"})
    for i in range(1000):
        core.feed({"hook_event_name": "PermissionRequest", "session": "claude-r", "tool_name": "Bash",
                   "tool_use_id": f"t{i}", "tool_input": {"command": f"echo {i}"}})
    reqs = core.registry.get("claude-r").requests
    assert len(reqs) == REQUESTS_CAP and reqs[-1].tool_use_id == "t999"
    assert len(notifier.of("request_closed")) == 1000 - REQUESTS_CAP
