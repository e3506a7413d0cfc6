"""Session lifecycle, prompts, tools, display and own datagrams, through the core (no sockets)."""

from __future__ import annotations

from aipager.texts import render
from aipager.daemon.knobs import Knobs
from aipager.port.model import QueuedMessage, State

S = "claude-jim"


def ev(name: str, **kw) -> dict:
    return {"hook_event_name": name, "session": S, "session_id": "c1",
            "transcript_path": "/t/c1.jsonl", **kw}


def tool(name: str, tid: str, event: str = "PreToolUse", **kw) -> dict:
    inp = kw.pop("tool_input", {"command": f"echo {tid}"})
    return ev(event, tool_name=name, tool_input=inp, tool_use_id=tid, prompt_id="p1", **kw)


def test_session_start_registers_ready_and_end_marks_gone(core, notifier):
    core.feed(ev("SessionStart", source="startup", cwd="/w"))
    sess = core.registry.get(S)
    assert (sess.state, sess.label, sess.cwd) == (State.READY, "jim", "/w")
    sess.queue.append(QueuedMessage(msg_id="7", text="later", queued_at=0))
    core.feed(ev("SessionEnd", reason="logout"))
    assert sess.state == State.GONE
    assert notifier.notices("session_end") == ["🔴 jim · Logged out"]
    assert [o.data["emoji"] for o in notifier.of("reaction")] == ["🤷"]
    core.feed(ev("SessionStart", source="resume"))
    assert sess.state == State.READY and sess.gone_at is None


def test_prompt_opens_task_and_stop_delivers_answer_once(core, notifier):
    core.feed(ev("UserPromptSubmit", prompt="hi", prompt_id="p1"))
    sess = core.registry.get(S)
    assert sess.state == State.WORKING and sess.task.seq == 1
    core.feed(ev("UserPromptSubmit", prompt="hi", prompt_id="p1"))  # repeated datagram
    assert sess.task.seq == 1
    stop = ev("Stop", prompt_id="p1", last_assistant_message="Hello.")
    core.feed(stop)
    core.feed(stop)
    core.feed(ev("Notification", notification_type="idle_prompt", prompt_id="p1"))
    assert notifier.texts("answer") == ["Hello."]
    assert sess.state == State.READY


def test_stop_without_message_reads_the_transcript(core, notifier, answers):
    answers.by_path["/t/c1.jsonl"] = "From the transcript."
    core.feed(ev("UserPromptSubmit", prompt="x", prompt_id="p1"))
    core.feed(ev("Stop", prompt_id="p1", last_assistant_message=""))
    assert notifier.texts("answer") == ["From the transcript."]


def test_idle_prompt_recovers_a_lost_stop(core, notifier, answers):
    answers.by_path["/t/c1.jsonl"] = "Done (from transcript)."
    core.feed(ev("UserPromptSubmit", prompt="x", prompt_id="p1"))
    core.feed(ev("Notification", notification_type="idle_prompt", prompt_id="p1"))
    assert notifier.texts("answer") == ["Done (from transcript)."]
    assert core.registry.get(S).state == State.READY


def test_late_stop_of_an_earlier_turn_does_not_close_the_running_task(core, notifier):
    core.feed(ev("UserPromptSubmit", prompt="one", prompt_id="p1"))
    core.feed(ev("UserPromptSubmit", prompt="two", prompt_id="p2"))
    core.feed(ev("Stop", prompt_id="p1", last_assistant_message="Answer one."))
    sess = core.registry.get(S)
    assert sess.state == State.WORKING and sess.task.prompt_id == "p2"
    assert notifier.texts("answer") == ["Answer one."]


def test_stop_failure_reports_known_api_error_in_plain_words(core, notifier):
    core.feed(ev("UserPromptSubmit", prompt="x", prompt_id="p1"))
    core.feed(ev("StopFailure", prompt_id="p1", error="rate_limit"))
    assert core.registry.get(S).state == State.READY
    assert notifier.notices("api_error") == ["⚠️ jim · Rate limit reached; wait a little before the next message"]


def test_a_known_api_error_reads_in_the_chats_language(core, notifier):
    """The notice carries the error's key, so a Portuguese chat says it in Portuguese (as
    ``ChatNotifier._notice_words`` renders it again); an unknown error keeps its own text."""
    from aipager import locales

    core.feed(ev("UserPromptSubmit", prompt="x", prompt_id="p1"))
    core.feed(ev("StopFailure", prompt_id="p1", error="rate_limit"))
    [out] = [o for o in notifier.of("notice") if o.notice == "api_error"]
    assert out.extra == {"error": "rate_limit"}
    sess = core.registry.get(S)
    with locales.rendering(locales.translations("pt_BR")):
        assert render.notice(out.notice, "jim", out.extra) == \
            "⚠️ jim · Limite de uso atingido; espere um pouco antes da próxima mensagem"
        assert render.card(sess, 0.0).startswith("⚠️ jim · Limite de uso atingido;")
        assert render.notice(out.notice, "jim", {}) is None
        assert render.api_error("jim", "The API returned an error: teapot") == \
            "⚠️ jim · The API returned an error: teapot"


def test_stop_releases_held_messages(core, notifier):
    core.feed(ev("UserPromptSubmit", prompt="x", prompt_id="p1"))
    sess = core.registry.get(S)
    sess.queue.append(QueuedMessage(msg_id="9", text="next one", queued_at=0))
    core.feed(ev("Stop", prompt_id="p1", last_assistant_message="ok"))
    assert [(o.text, o.data["msg_id"]) for o in notifier.of("release")] == [("next one", "9")]
    kinds = [o.kind for o in notifier.outputs if o.kind in ("answer", "release")]
    assert kinds == ["answer", "release"]


def test_rows_fixed_failed_and_capped(make_core, notifier):
    core = make_core(Knobs(rows_cap=5))
    core.feed(ev("UserPromptSubmit", prompt="x", prompt_id="p1"))
    core.feed(tool("Bash", "t1"))
    core.feed(tool("Bash", "t1", "PostToolUse"))
    core.feed(tool("Bash", "t2"))
    core.feed(tool("Bash", "t2", "PostToolUseFailure", error="Exit code 1"))
    sess = core.registry.get(S)
    assert [(r.id, r.status) for r in sess.rows] == [("t1", "ok"), ("t2", "failed")]
    for i in range(10):
        core.feed(tool("Read", f"r{i}", tool_input={"file_path": f"/f{i}"}))
    assert len(sess.rows) == 5 and set(sess.row_index) == {r.id for r in sess.rows}


def test_subagent_tool_folds_into_its_agent_row(core):
    core.feed(ev("UserPromptSubmit", prompt="x", prompt_id="p1"))
    core.feed(ev("SubagentStart", agent_id="a1", agent_type="Explore"))
    core.feed(tool("Grep", "g1", agent_id="a1", agent_type="Explore",
                   tool_input={"pattern": "foo", "path": "src"}))
    sess = core.registry.get(S)
    agent = sess.agents["a1"]
    assert (agent.tool_count, agent.activity) == (1, "Grep: foo in src")
    core.flush_cards()
    assert "Grep" not in core.notifier.texts("card")[-1].split("🤖")[0]


def test_background_command_tracked_until_its_notification(core, notifier):
    core.feed(ev("UserPromptSubmit", prompt="x", prompt_id="p1"))
    core.feed(tool("Bash", "t1", tool_input={"command": "sleep 60", "run_in_background": True}))
    core.feed(tool("Bash", "t1", "PostToolUse", tool_input={"command": "sleep 60"},
                   tool_response={"backgroundTaskId": "bg1"}))
    # a subagent's background Bash belongs to that agent: not tracked
    core.feed(tool("Bash", "t2", "PostToolUse", agent_id="a9", agent_type="x",
                   tool_response={"backgroundTaskId": "bg2"}))
    core.feed(ev("Stop", prompt_id="p1", last_assistant_message="Started."))
    sess = core.registry.get(S)
    assert list(sess.bg) == ["bg1"] and sess.work_open()
    assert notifier.texts("answer")[0].endswith("🔄 jim · 1 background command")
    core.feed(ev("UserPromptSubmit", prompt_id="p2",
                 prompt="<task-notification>\n<task-id>bg1</task-id>\n<status>failed</status>\n</task-notification>"))
    assert sess.bg["bg1"].status == "failed" and not sess.work_open()
    assert sess.task.seq == 1  # the same work continues


def test_taskstop_and_session_end_and_max_track_end_commands(make_core, clock):
    core = make_core(Knobs.from_env({"AIPAGER_BG_SHELL_MAX_TRACK": "100"}))
    core.feed(ev("UserPromptSubmit", prompt="x", prompt_id="p1"))
    for bid in ("b1", "b2"):
        core.feed(tool("Bash", bid, "PostToolUse", tool_response={"backgroundTaskId": bid}))
    core.feed(tool("TaskStop", "k1", "PostToolUse", tool_input={"task_id": "b1"}))
    sess = core.registry.get(S)
    assert sess.bg["b1"].status == "stopped" and sess.bg["b2"].status == "running"
    clock.advance(101)
    core.tick()
    assert sess.bg["b2"].status == "no_end"


def test_message_display_commentary_and_agent_text(core):
    core.feed(ev("UserPromptSubmit", prompt="x", prompt_id="p1"))
    core.feed(ev("SubagentStart", agent_id="a1", agent_type="Explore"))
    core.feed({"hook_event_name": "MessageDisplay", "session": S, "message_id": "m1", "delta": "Look"})
    core.feed({"hook_event_name": "MessageDisplay", "session": S, "message_id": "m1", "delta": "ing."})
    core.feed({"hook_event_name": "MessageDisplay", "session": S, "message_id": "m9",
               "agent_id": "a1", "delta": "sub text"})
    sess = core.registry.get(S)
    assert sess.task.commentary == "Looking."
    assert sess.agents["a1"].activity == "sub text"


def test_diff_preview_only_when_enabled(make_core, notifier):
    edit = {"file_path": "/f", "old_string": "a", "new_string": "b"}
    core = make_core(Knobs(diff_previews=True))
    core.feed(tool("Edit", "e1", tool_input=edit))
    assert notifier.texts("diff") == ["📝 Edit: /f\n- a\n+ b"]
    notifier.clear()
    make_core().feed(tool("Edit", "e2", tool_input=edit))
    assert notifier.texts("diff") == []


def test_own_datagrams(core, notifier):
    core.feed(ev("UserPromptSubmit", prompt="x", prompt_id="p1"))
    sess = core.registry.get(S)
    sess.queue.append(QueuedMessage(msg_id="5", text="hi", queued_at=0, status="typed"))
    core.feed({"hook_event_name": "queue_pickup", "session": S,
               "consumed": [{"msg_id": 5, "chat_id": 1}], "expired": []})
    assert [o.data["emoji"] for o in notifier.of("reaction")] == ["👍"] and sess.queue == []
    core.feed({"hook_event_name": "safety_blocked", "session": S, "tool": "Bash", "reason": "rm -rf"})
    # only the call was refused: Claude goes on, and the card says so (never "stopped")
    assert notifier.notices("safety_blocked") == [
        "🛑 jim · a safety rule refused Bash: rm -rf. Claude was told and may go on without it."]
    core.flush_cards()
    assert notifier.texts("card")[-1].startswith("⏳ jim · working")
    core.feed(ev("Stop"))
    core.flush_cards()
    assert notifier.texts("card")[-1].startswith("🛑 jim · done; a safety rule refused a tool: rm -rf")
    core.feed({"type": "hook_memory_cap_hit", "session": S, "hook": "aipager-hook", "tool": "Bash"})
    assert notifier.of("notice")[-1].data["report"] is True
    core.feed({"hook_event_name": "send_files_refused", "session": S, "tool_use_id": "u",
               "files": [{"path": "/etc/shadow", "code": "floor", "reason": "protected path"}]})
    assert notifier.notices("files_refused") == ["📎 jim · 1 file not sent: /etc/shadow: protected path"]
    core.feed({"type": "report_error", "where": "hook", "event": "PreToolUse"})
    assert core.ctx.counters["report_error:hook"] == 1


def test_knob_old_name_is_accepted():
    assert Knobs.from_env({"AIPAGER_SUBAGENT_TTL": "60"}).subagent_silence == 60
    assert Knobs.from_env({"AIPAGER_SUBAGENT_SILENCE": "30", "AIPAGER_SUBAGENT_TTL": "60"}).subagent_silence == 30
    assert Knobs.from_env({"AIPAGER_BG_SHELL_MAX_TRACK": "junk"}).bg_shell_max_track == 7200


def test_background_end_seen_only_in_the_transcript(make_core, notifier, clock, answers):
    from aipager.daemon.core import DaemonCore

    notes = {"/t/c1.jsonl": ["<task-notification>\n<task-id>bg1</task-id>\n<status>completed</status>"]}
    core = DaemonCore(notifier, clock=clock, read_answer=answers, monotonic=clock,
                      read_notifications=lambda p: notes.get(p, []))
    core.feed(ev("UserPromptSubmit", prompt="x", prompt_id="p1"))
    core.feed(tool("Bash", "t1", "PostToolUse", tool_response={"backgroundTaskId": "bg1"}))
    core.feed(tool("Bash", "t2", "PostToolUse", tool_response={"backgroundTaskId": "bg2"}))
    core.feed(ev("Stop", prompt_id="p1", last_assistant_message="ok"))
    sess = core.registry.get(S)
    assert (sess.bg["bg1"].status, sess.bg["bg2"].status) == ("completed", "running")


def test_queue_api_for_the_chat(core, notifier, clock):
    reg = core.registry
    core.feed(ev("UserPromptSubmit", prompt="x", prompt_id="p1"))
    reg.queue_message(S, 1, "typed now", chat_id=5)
    reg.queue_message(S, 2, "after the task", chat_id=5, held=True)
    core.feed(ev("Stop", prompt_id="p1", last_assistant_message="ok"))
    assert [o.data["msg_id"] for o in notifier.of("release")] == ["2"]
    clock.advance(25 * 3600)
    core.tick()
    assert reg.get(S).queue == []


def test_a_message_queued_again_replaces_itself(core, notifier):
    """Its update handled again after a kill (held, saved, killed before its done line): the
    same message is held once, released once; typed instead, it is no longer held."""
    reg = core.registry
    core.feed(ev("UserPromptSubmit", prompt="x", prompt_id="p1"))
    reg.queue_message(S, 2, "after the task", chat_id=5, held=True)
    reg.queue_message(S, 2, "after the task", chat_id=5, held=True)
    reg.queue_message(S, 2, "another chat's message 2", chat_id=6, held=True)
    assert [(m.msg_id, m.chat_id) for m in reg.get(S).queue] == [("2", "5"), ("2", "6")]
    core.feed(ev("Stop", prompt_id="p1", last_assistant_message="ok"))
    assert [o.data["msg_id"] for o in notifier.of("release")] == ["2", "2"]
    core.feed(ev("UserPromptSubmit", prompt="y", prompt_id="p2"))
    reg.queue_message(S, 3, "held", chat_id=5, held=True)
    reg.queue_message(S, 3, "held", chat_id=5)  # the replay found the task ended: typed
    assert [(m.msg_id, m.status) for m in reg.get(S).queue if m.msg_id == "3"] == [("3", "typed")]


def test_ax_interrupt_ends_the_task_without_an_answer(core, notifier):
    core.feed(ev("UserPromptSubmit", prompt="x", prompt_id="p1"))
    core.feed(tool("Bash", "t1", tool_input={"command": "sleep 100"}))
    core.feed(ev("PermissionRequest", tool_name="Bash", tool_input={"command": "rm -rf build"}))
    sess = core.registry.get(S)
    sess.queue.append(QueuedMessage(msg_id="9", text="next please", queued_at=0))
    core.feed(ev("Interrupt", reason="user"))
    assert sess.state == State.READY and sess.task.ended_at is not None
    assert sess.requests == []
    assert notifier.texts("answer") == []
    assert render.card(sess, core.registry.clock()).startswith("⏹ jim · interrupted")
    assert [o.data.get("msg_id") for o in notifier.of("release")] == ["9"]
    core.feed(ev("Interrupt", reason="user"))  # a second one changes nothing
    assert sess.state == State.READY


def test_a_task_esc_cut_short_ends_interrupted_once_and_never_a_newer_one(core, notifier):
    from aipager.daemon.tasks import catch_interrupts

    core.feed(ev("UserPromptSubmit", prompt="long", prompt_id="p1"))
    core.feed(tool("Bash", "t1"))
    sess = core.registry.get(S)
    started = sess.task.started_at
    cut = {"/t/c1.jsonl": started + 1.0}
    asked: list[str] = []

    def changed(s) -> bool:
        asked.append(s.name)
        return True

    assert catch_interrupts(core.ctx, {}.get, changed) == []  # not interrupted
    assert sess.state == State.WORKING
    assert catch_interrupts(core.ctx, cut.get, changed) == [S]
    assert sess.state == State.READY and sess.task.error == render.INTERRUPTED
    assert notifier.texts("answer") == []
    asked.clear()
    assert catch_interrupts(core.ctx, cut.get, changed) == []  # ended: not even looked at
    assert asked == []
    # An interruption older than the running task (it was the previous turn's) changes nothing.
    core.feed(ev("UserPromptSubmit", prompt="next", prompt_id="p2"))
    old = {"/t/c1.jsonl": sess.task.started_at - 5.0}
    assert catch_interrupts(core.ctx, old.get, changed) == []
    assert sess.state == State.WORKING
    # An unchanged transcript is not read again.
    assert catch_interrupts(core.ctx, cut.get, lambda s: False) == []


def test_a_task_that_ends_with_a_call_still_running_shows_no_hourglass(core, notifier):
    """Denied, stopped or blocked: the call never reports its end; the final card says it
    ended instead of ⏳ forever (and an agent's own rows are left to the agent)."""
    core.feed(ev("SessionStart", source="startup", cwd="/w"))
    core.feed(ev("UserPromptSubmit", prompt="hi", prompt_id="p1"))
    core.feed(tool("Bash", "t1", tool_input={"command": "rm -rf build"}))
    core.feed(tool("Read", "t2", tool_input={"file_path": "/w/x"}, agent_id="a1"))
    sess = core.registry.get(S)
    core.feed(ev("Stop", prompt_id="p1", last_assistant_message="Denied, so I stopped."))
    rows = {r.id: r.status for r in sess.rows}
    assert rows["t1"] == "ended"
    assert rows.get("t2", "running") == "running"
    core.flush_cards()
    card = notifier.of("card")[-1].text
    assert "⏹ " in card and "rm -rf build" in card
    assert "⏳ " not in card.split("\n", 1)[1]


def test_a_session_that_ends_mid_call_closes_its_rows(core, notifier):
    core.feed(ev("SessionStart", source="startup", cwd="/w"))
    core.feed(ev("UserPromptSubmit", prompt="hi", prompt_id="p1"))
    core.feed(tool("Bash", "t1"))
    core.feed(ev("SessionEnd", reason="other"))
    assert [r.status for r in core.registry.get(S).rows] == ["ended"]


def test_the_done_card_does_not_quote_the_answer_it_sits_above(core, notifier):
    """The card quoted Claude's latest words, which at the end are the answer: the chat
    showed them twice, in the card and in the answer under it.  Words Claude said before
    its tools (not the answer) stay."""
    core.feed(ev("UserPromptSubmit", prompt="go", prompt_id="p1"))
    core.feed(ev("MessageDisplay", message_id="m1", delta="Let me look."))
    core.feed(tool("Bash", "t1"))
    core.flush_cards()
    assert "> Let me look." in notifier.texts("card")[-1]
    core.feed(ev("MessageDisplay", message_id="m2", delta="Two steps "))
    core.feed(ev("MessageDisplay", message_id="m2", delta="done."))
    core.feed(ev("Stop", prompt_id="p1", last_assistant_message="Two steps done."))
    core.flush_cards()
    final = notifier.texts("card")[-1]
    assert final.startswith("✅ jim · done") and "Two steps done." not in final, final
    assert notifier.texts("answer") == ["Two steps done."]


def test_the_answers_display_arriving_after_its_stop_is_not_quoted_either(core, notifier):
    """Seen on Claude Code 2.1.328 (about one run in three): the final message's
    MessageDisplay after the Stop put the answer back on the done card."""
    core.feed(ev("UserPromptSubmit", prompt="go", prompt_id="p1"))
    core.feed(tool("Bash", "t1"))
    core.feed(ev("Stop", prompt_id="p1", last_assistant_message="Two steps done."))
    core.feed(ev("MessageDisplay", message_id="m2", delta="Two steps done."))
    core.flush_cards()
    final = notifier.texts("card")[-1]
    assert final.startswith("✅ jim · done") and "Two steps done." not in final, final


def test_an_interrupted_card_keeps_what_claude_was_saying(core, notifier):
    core.feed(ev("UserPromptSubmit", prompt="go", prompt_id="p1"))
    core.feed(ev("MessageDisplay", message_id="m1", delta="Halfway through."))
    core.feed(ev("Interrupt"))
    core.flush_cards()
    assert "> Halfway through." in notifier.texts("card")[-1]


def test_ax_codes_stop_gets_its_answer_from_ax_codes_store(clock, notifier, answers):
    # AX Code's events as the hook forwards them: no transcript, a Stop without text
    from aipager.daemon.core import DaemonCore

    store = {"ses_1": "From AX Code's store."}
    core = DaemonCore(notifier, clock=clock, read_answer=answers, monotonic=clock,
                      read_ax_answer=store.get)
    ax = {"session": S, "session_id": "ses_1", "cwd": "/w"}
    core.feed({"hook_event_name": "SessionStart", "sessionID": "ses_1", **ax})
    core.feed({"hook_event_name": "UserPromptSubmit", "prompt": "x", **ax})
    core.feed({"hook_event_name": "Stop", **ax})
    assert notifier.texts("answer") == ["From AX Code's store."]
    assert core.registry.get(S).state == State.READY
