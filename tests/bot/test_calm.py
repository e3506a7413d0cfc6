"""One buzz per prompt: progress arrives silently, what needs the person notifies."""

from __future__ import annotations

import asyncio

from .conftest import eventually


def _buzzes(p) -> bool:
    return str(p.get("disable_notification", "")).lower() not in ("true", "1")


async def test_a_prompt_makes_one_notification_the_answer(chat):
    fake = chat.fake
    session = chat.start("jim")
    msg = await fake.user_says("fix the failing test")
    await eventually(lambda: chat.sessions.typed, what="typed")
    chat.feed(session, "queue_pickup", consumed=[{"msg_id": msg["message_id"],
                                                  "chat_id": chat.chat_id,
                                                  "author_user_id": 1}])
    chat.feed(session, "UserPromptSubmit", prompt="fix the failing test", prompt_id="p1")
    chat.feed(session, "PreToolUse", tool_name="Bash", tool_use_id="t1",
              tool_input={"command": "pytest -q"})
    await fake.wait_for("sendMessage", lambda p: "jim · working" in str(p.get("text")))
    chat.feed(session, "PermissionRequest", tool_name="Bash", tool_input={"command": "rm x"},
              permission_suggestions=[])
    await fake.wait_for("sendMessage", lambda p: "🔐" in str(p.get("text")))
    chat.feed(session, "Stop", prompt_id="p1", last_assistant_message="Fixed.")
    await fake.wait_for("sendMessage", lambda p: str(p.get("text")).startswith("Fixed")
                        or "Fixed." in str(p.get("text")))
    sends = fake.calls_of("sendMessage", ok=True)
    loud = [str(p["text"]) for p in sends if _buzzes(p)]
    quiet = [str(p["text"]) for p in sends if not _buzzes(p)]
    assert len(loud) == 2, loud  # the permission request and the answer
    assert any("🔐" in t for t in loud) and any("Fixed." in t for t in loud)
    assert any("jim · working" in t for t in quiet), quiet  # the card: silent
    assert any("📟" in t for t in quiet), quiet  # the status line: silent


async def test_a_burst_of_stops_presses_escape_once(chat):
    session = chat.start("jim")
    chat.feed(session, "UserPromptSubmit", prompt="long job", prompt_id="p1")
    for _ in range(20):
        await chat.fake.user_says("/stop jim")
    await chat.fake.wait_for("sendMessage", lambda p: "Stop sent" in str(p["text"]))
    await eventually(lambda: chat.sessions.keys, what="Escape pressed")
    # every /stop handled: the 20th one's turn has come and gone
    await chat.fake.user_says("/status")
    await chat.fake.wait_for("sendMessage", lambda p: "jim" in str(p["text"]) and
                             "Stop sent" not in str(p["text"]) and "📟" not in str(p["text"]))
    assert chat.sessions.keys == [(session, [b"\x1b"])]
    assert sum("Stop sent" in t for t in chat.sent_texts()) == 1


async def test_a_prompt_typed_at_the_computer_shows_silently_and_the_answer_replies_to_it(chat):
    session = chat.start("jim")
    chat.feed(session, "UserPromptSubmit", prompt="refactor the parser", prompt_id="p1")
    shown = await chat.fake.wait_for("sendMessage",
                                     lambda p: "typed at the computer" in str(p["text"]))
    assert "refactor the parser" in shown["text"] and not _buzzes(shown)
    await eventually(lambda: chat.bot.state.live_id(f"typed:{session}:1"), what="its id kept")
    chat.feed(session, "Stop", prompt_id="p1", last_assistant_message="Parser refactored.")
    answer = await chat.fake.wait_for("sendMessage", lambda p: "Parser refactored." in str(p["text"]))
    typed = next(m for m in chat.fake.bot_messages(chat.chat_id)
                 if "typed at the computer" in m.get("text", ""))
    assert answer["reply_parameters"]["message_id"] == typed["message_id"]


async def test_after_the_chat_moves_no_message_id_of_the_old_chat_is_edited(chat):
    """Private chat → a group: the card and the status line start anew in the group; an id
    from the private chat is never edited there (it would be some other message, or none)."""
    from aipager import config

    session = chat.start("jim")
    chat.feed(session, "UserPromptSubmit", prompt="long job", prompt_id="p1")
    await chat.fake.wait_for("sendMessage", lambda p: "jim · working" in str(p["text"]))
    group = chat.fake.add_group_chat(-100999, "team")
    cfg = config.load(chat.daemon.env)
    config.save(chat.daemon.env, config.Config(cfg.bot_token, group, cfg.members))
    chat.feed(session, "PreToolUse", tool_name="Bash", tool_use_id="t1",
              tool_input={"command": "make"})
    card = await chat.fake.wait_for("sendMessage", lambda p: int(p["chat_id"]) == group
                                    and "jim · working" in str(p["text"]), timeout=10)
    assert "make" in card["text"]
    await chat.fake.wait_for("sendMessage", lambda p: int(p["chat_id"]) == group
                             and "📟" in str(p["text"]), timeout=10)
    assert not [p for p in chat.fake.calls_of("editMessageText") if int(p["chat_id"]) == group]


async def test_a_short_tasks_card_never_arrives_after_its_answer(chat):
    """Prompt and Stop within one card tick: the answer alone, no card pushed up under it."""
    import orjson

    session = chat.start("jim")
    chat.daemon.deliver([orjson.dumps({"hook_event_name": "UserPromptSubmit", "session": session,
                                       "prompt": "what time is it", "prompt_id": "p1"})])
    chat.feed(session, "Stop", prompt_id="p1", last_assistant_message="Half past four.")
    await chat.fake.wait_for("sendMessage", lambda p: "Half past four." in str(p["text"]))
    # the next card of this session (a new task) is shown as usual
    chat.feed(session, "UserPromptSubmit", prompt="and now?", prompt_id="p2")
    await chat.fake.wait_for("sendMessage", lambda p: "jim · working" in str(p["text"]))
    texts = chat.sent_texts()
    second = next(i for i, t in enumerate(texts) if "and now?" in t)
    cards = [t for t in texts[:second] if t.startswith(("⏳ jim", "✅ jim", "⏹ jim"))]
    assert cards == [], texts
    edits = [p for p in chat.fake.calls_of("editMessageText") if "jim" in str(p["text"])
             and "📟" not in str(p["text"])]
    assert edits == [], edits


async def test_quiet_while_at_the_computer_and_the_setting(chat):
    """A prompt typed at the computer: its answer arrives silently; with the setting off it
    buzzes.  What was asked from the phone buzzes, a terminal attached or not (it was once
    silent whenever any terminal was attached)."""
    from aipager import dtach

    session = chat.start("jim")
    # a real connected socket pair at a dtach socket's path, as an attached terminal shows
    table = chat.daemon.env["AIPAGER_INSTANCE_DIR"] + "/net-unix"
    with open(table, "w") as fh:
        fh.write("Num RefCount Protocol Flags Type St Inode Path\n"
                 f"0000: 00000003 00000000 00000000 0001 03 1 /nonexistent/{session}.sock\n")
    assert dtach.attached_clients([f"/nonexistent/{session}.sock"], table) == \
        {f"/nonexistent/{session}.sock": 1}
    chat.daemon.core.registry.get(session).attached = True

    async def answer(prompt_id: str, words: str) -> dict:
        msg = await chat.fake.user_says(f"please {words}")
        await eventually(lambda: any(words in t[1] for t in chat.sessions.typed))
        chat.feed(session, "queue_pickup", consumed=[{"msg_id": msg["message_id"],
                                                      "chat_id": chat.chat_id,
                                                      "author_user_id": 1}])
        chat.feed(session, "UserPromptSubmit", prompt=f"please {words}", prompt_id=prompt_id)
        chat.feed(session, "Stop", prompt_id=prompt_id, last_assistant_message=f"Done: {words}.")
        return await chat.fake.wait_for("sendMessage", lambda p: f"Done: {words}." in str(p["text"]))

    assert _buzzes(await answer("p1", "one"))  # attached, asked from the phone: it buzzes
    chat.daemon.core.registry.get(session).attached = False
    assert _buzzes(await answer("p2", "two"))  # away: it buzzes
    # typed at the computer: quiet even with nothing attached
    chat.feed(session, "UserPromptSubmit", prompt="from the keyboard", prompt_id="p3")
    chat.feed(session, "Stop", prompt_id="p3", last_assistant_message="Keyboard done.")
    assert not _buzzes(await chat.fake.wait_for("sendMessage",
                                                lambda p: "Keyboard done." in str(p["text"])))
    # attached, typed there: quiet
    chat.daemon.core.registry.get(session).attached = True
    chat.feed(session, "UserPromptSubmit", prompt="again from the keyboard", prompt_id="p4")
    chat.feed(session, "Stop", prompt_id="p4", last_assistant_message="Keyboard again.")
    assert not _buzzes(await chat.fake.wait_for("sendMessage",
                                                lambda p: "Keyboard again." in str(p["text"])))
    # the setting off: the answer to what was typed at the computer buzzes too
    chat.bot.state.set_pref(chat.chat_id, "quiet", False)
    chat.feed(session, "UserPromptSubmit", prompt="third from the keyboard", prompt_id="p5")
    chat.feed(session, "Stop", prompt_id="p5", last_assistant_message="Keyboard third.")
    assert _buzzes(await chat.fake.wait_for("sendMessage",
                                            lambda p: "Keyboard third." in str(p["text"])))


async def test_an_answer_replies_only_in_the_chat_its_prompt_was_sent_in(chat):
    """A prompt from the local page (chat 0) has a message id Telegram never gave: the answer
    in the Telegram chat replies to nothing rather than to some other message."""
    session = chat.start("jim")
    chat.feed(session, "queue_pickup", consumed=[{"msg_id": 1, "chat_id": 0,
                                                  "author_user_id": 1}])
    chat.feed(session, "UserPromptSubmit", prompt="from the page", prompt_id="p1")
    chat.feed(session, "Stop", prompt_id="p1", last_assistant_message="Page answered.")
    answer = await chat.fake.wait_for("sendMessage", lambda p: "Page answered." in str(p["text"]))
    assert "reply_parameters" not in answer and "reply_to_message_id" not in answer


async def test_stop_shows_the_last_card_at_once_while_progress_edits_wait_for_the_pace(chat):
    """A stream of progress edits, then Stop: the card's last edit and the answer go out
    while the outbox's clock stands still, so neither waited for the pace the progress
    edits wait for; the progress still waiting is superseded, never sent after."""
    fake = chat.fake
    session = chat.start("jim")
    chat.feed(session, "UserPromptSubmit", prompt="run the flood", prompt_id="p1")
    await fake.wait_for("sendMessage", lambda p: "jim · working" in str(p["text"]))
    outbox = chat.bot.outbox
    clock, frozen = outbox._clock, outbox._clock()
    outbox._clock = lambda: frozen  # from here on, no pacing gap ever passes
    try:
        await _flood_then_stop(chat, session)
    finally:
        outbox._clock = clock  # closing waits by the clock


async def _flood_then_stop(chat, session):
    fake = chat.fake

    def tools(start: int, end: int) -> None:
        for i in range(start, end):
            chat.feed(session, "PreToolUse", tool_name="Bash", tool_use_id=f"t{i}",
                      tool_input={"command": f"echo step {i}"})
            chat.feed(session, "PostToolUse", tool_name="Bash", tool_use_id=f"t{i}",
                      tool_input={"command": f"echo step {i}"}, tool_response={"stdout": f"{i}"})

    def card_waits() -> bool:
        return any(getattr(op, "key", "").startswith("card:") for op in chat.bot.outbox.pending())

    tools(0, 20)
    await fake.wait_for("editMessageText", lambda p: str(p["text"]).startswith("⏳ jim"))
    tools(20, 40)
    await eventually(card_waits, what="a progress edit of the card waits")
    await asyncio.sleep(0.2)
    before = [p for p in fake.calls_of("editMessageText", ok=True) if "jim ·" in str(p["text"])]
    assert len(before) == 1, before  # the pace holds: one edit, the rest wait for the clock
    chat.feed(session, "Stop", prompt_id="p1", last_assistant_message="The flood is done.")
    final = await fake.wait_for("editMessageText", lambda p: str(p["text"]).startswith("✅ jim"))
    await fake.wait_for("sendMessage", lambda p: "The flood is done." in str(p["text"]))
    assert "Stop" not in str(final.get("reply_markup") or "")
    edits = [p for p in fake.calls_of("editMessageText", ok=True) if "jim ·" in str(p["text"])
             and "📟" not in str(p["text"])]
    assert edits[-1]["text"] == final["text"]
    assert all("⏳" in str(p["text"]) for p in edits[:-1]), edits
    assert len({int(p["message_id"]) for p in edits}) == 1  # all of them the card


async def test_a_safety_refusal_says_claude_may_go_on_and_the_prompt_buzzes_once(chat):
    """The block refuses one tool call; Claude Code hands the refusal to the model, which
    answers anyway.  It once read "… (stopped)" and buzzed, then the answer buzzed again."""
    fake = chat.fake
    session = chat.start("jim")
    msg = await fake.user_says("delete the build folder")
    await eventually(lambda: chat.sessions.typed, what="typed")
    chat.feed(session, "queue_pickup", consumed=[{"msg_id": msg["message_id"],
                                                  "chat_id": chat.chat_id,
                                                  "author_user_id": 1}])
    chat.feed(session, "UserPromptSubmit", prompt="delete the build folder", prompt_id="p1")
    chat.feed(session, "safety_blocked", tool="Bash", reason="rm -rf is denied for this task")
    notice = await fake.wait_for("sendMessage", lambda p: "a safety rule refused" in str(p["text"]))
    assert "Bash" in notice["text"] and "may go on" in notice["text"]
    assert "stopped" not in notice["text"] and not _buzzes(notice)
    chat.feed(session, "Stop", prompt_id="p1", last_assistant_message="I could not delete it.")
    await fake.wait_for("sendMessage", lambda p: "I could not delete it." in str(p["text"]))
    loud = [str(p["text"]) for p in fake.calls_of("sendMessage", ok=True) if _buzzes(p)]
    assert len(loud) == 1 and "I could not delete it." in loud[0], loud


async def test_a_session_that_dies_mid_task_says_so_out_loud(chat):
    """Claude Code killed while a task the phone asked for runs: its end buzzes (the person
    waits for an answer that will not come); an idle session's end stays silent."""
    fake = chat.fake
    busy = chat.start("jim")
    idle = chat.start("ann")
    await fake.user_says("/jim fix it")
    await eventually(lambda: chat.sessions.typed, what="typed")
    chat.feed(busy, "UserPromptSubmit", prompt="fix it", prompt_id="p1")
    await chat.daemon.discover()  # both seen with their sockets
    chat.sessions.live.discard(busy)
    chat.sessions.live.discard(idle)
    await chat.daemon.discover()
    ended = await fake.wait_for("sendMessage", lambda p: "jim" in str(p.get("text"))
                                and "🔴" in str(p.get("text")), 20)
    quiet = await fake.wait_for("sendMessage", lambda p: "ann" in str(p.get("text"))
                                and "🔴" in str(p.get("text")), 20)
    assert _buzzes(ended) and not _buzzes(quiet)
