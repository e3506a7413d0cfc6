"""Commands from the chat: /start /help /status /new /stop /kill /compact /model /settings
/resume, /<session>, unknown commands and non-text messages, the command menu.

/new and /kill run real dtach sessions (the program is a small script standing in for
Claude Code: it records where and how it was started); typing still goes to the fake."""

from __future__ import annotations


import os
import stat

import orjson
import pytest
from bot.conftest import eventually

from aipager import config, dtach
from aipager.proto import paths
from aipager.daemon.terminal import ESCAPE


@pytest.fixture
def fake_claude(tmp_path, chat):
    mark = tmp_path / "started"
    script = tmp_path / "claude"
    script.write_text(f'#!/bin/sh\necho "$PWD|$*" >> {mark}\nexec sleep 60\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    folder = tmp_path / "projects"
    folder.mkdir()
    chat.daemon.env["AIPAGER_CLAUDE_BIN"] = str(script)
    chat.bot.members.cfg.extra["new_session_folder"] = str(folder)
    config.save(chat.daemon.env, chat.bot.members.cfg)  # as /settings saves it
    yield mark, folder
    for info in dtach.list_sessions(chat.daemon.env):
        dtach.kill(chat.daemon.env, info.name)


async def _said(chat, needle, timeout=5.0):
    return await chat.fake.wait_for("sendMessage", lambda p: needle in str(p["text"]), timeout)


def _message(chat, needle):
    return next(m for m in reversed(chat.fake.bot_messages(chat.chat_id)) if needle in m["text"])


def _data(message, label):
    return next(b["callback_data"] for row in message["reply_markup"]["inline_keyboard"]
                for b in row if b["text"] == label)


async def test_help_says_where_messages_go(chat):
    chat.start("jim")
    await chat.fake.user_says("/start")
    text = (await _said(chat, "aipager"))["text"]
    assert "Plain messages go to jim." in text
    assert "/new" in text and "/status" in text


async def test_status_lists_sessions_and_a_tap_makes_one_current(chat):
    chat.start("alpha")
    beta = chat.start("beta")
    chat.feed(beta, "statusline", model={"display_name": "Opus"}, cost={"total_cost_usd": 0.25})
    chat.feed(beta, "UserPromptSubmit", prompt="work", prompt_id="b1")
    await chat.fake.user_says("/status")
    status = await _said(chat, "Sessions:")
    assert "✅ alpha · ready" in status["text"]
    assert "⏳ beta · working" in status["text"]
    message = _message(chat, "Sessions:")
    await chat.fake.user_taps(message["message_id"], _data(message, "beta"))
    await _said(chat, "Your messages go to beta now.")
    await chat.fake.user_says("hello beta")
    typed = await eventually(lambda: chat.sessions.typed)
    assert typed[0][:2] == (beta, "hello beta")


async def test_new_starts_a_dtach_session_in_the_default_folder_and_types_the_first_message(
        chat, fake_claude):
    mark, folder = fake_claude
    chat.sessions.live.add("claude-demo")  # typing goes to the fake terminal
    await chat.fake.user_says("/new demo write the readme")
    await _said(chat, "demo started")
    await eventually(lambda: mark.exists() and mark.read_text(), what="the program started")
    assert mark.read_text().strip() == f"{folder}|--teammate-mode in-process"
    assert dtach.is_live(paths.dtach_socket(chat.daemon.env, "demo"))
    # The first message waits for Claude Code's SessionStart.
    assert chat.sessions.typed == []
    chat.feed("claude-demo", "SessionStart", source="startup", session_id="sid-demo", cwd=str(folder))
    typed = await eventually(lambda: chat.sessions.typed, what="first message typed")
    assert typed[0][:2] == ("claude-demo", "write the readme")


async def test_new_without_a_name_asks_for_one_and_refuses_bad_names(chat, fake_claude):
    mark, _ = fake_claude
    await chat.fake.user_says("/new")
    await _said(chat, "Name for the new session?")
    await chat.fake.user_says("../etc")
    await _said(chat, "Cannot start a session named ../etc: a name is 1–64 letters a–z")
    await chat.fake.user_says("/new status")
    await _said(chat, "is the name of a command")
    assert not mark.exists()
    await chat.fake.user_says("/new")
    await _said(chat, "Name for the new session?")
    await chat.fake.user_says("x1")
    await _said(chat, "x1 started")


async def test_a_name_of_two_words_is_refused_with_the_rule_or_quoted(chat, fake_claude):
    """``/new My Project`` is not a session "My" told "Project": refused with the rule; a
    quoted name becomes one word (``My-Project``) and the rest is its first message."""
    mark, folder = fake_claude
    await chat.fake.user_says("/new My Project")
    said = (await _said(chat, "A session name is one word"))["text"]
    assert "/new My-Project" in said
    assert not mark.exists() and dtach.list_sessions(chat.daemon.env) == []
    chat.sessions.live.add("claude-My-Project")
    await chat.fake.user_says('/new “My Project” write the readme')
    await _said(chat, "My-Project started")
    chat.feed("claude-My-Project", "SessionStart", source="startup", session_id="sid-mp",
              cwd=str(folder))
    typed = await eventually(lambda: chat.sessions.typed, what="first message typed")
    assert typed[0][:2] == ("claude-My-Project", "write the readme")


async def test_a_newline_ends_the_name_of_a_new_session(chat, fake_claude):
    mark, folder = fake_claude
    chat.sessions.live.add("claude-abc")  # typing goes to the fake terminal
    # `$` once let "abc\n" through: a session nothing could list or end
    await chat.fake.user_says("/new abc\n fix the tests\nand the docs")
    await _said(chat, "abc started")
    assert [(s.name, s.live) for s in dtach.list_sessions(chat.daemon.env)] == [("abc", True)]
    assert os.listdir(paths.session_dir(chat.daemon.env)).count("claude-dtach-abc.sock") == 1
    chat.feed("claude-abc", "SessionStart", source="startup", session_id="sid-abc", cwd=str(folder))
    typed = await eventually(lambda: chat.sessions.typed, what="first message typed")
    assert typed[0][:2] == ("claude-abc", "fix the tests\nand the docs")
    await chat.fake.user_says("/new xyz\n")
    await _said(chat, "xyz started")
    assert [s.name for s in dtach.list_sessions(chat.daemon.env)] == ["abc", "xyz"]


@pytest.mark.parametrize("name", ["-rf", "\u0430bc", "a" * 65, "ab\x00c"])
async def test_new_refuses_bad_names_in_one_line(chat, fake_claude, name):
    mark, _ = fake_claude
    await chat.fake.user_says(f"/new {name} hello")
    refusal = (await _said(chat, "Cannot start a session named"))["text"]
    assert "a–z without accents" in refusal and "\n" not in refusal
    assert "not starting with -" in refusal
    assert not mark.exists() and dtach.list_sessions(chat.daemon.env) == []


async def test_kill_asks_first_and_ends_the_session(chat, fake_claude):
    await chat.fake.user_says("/new victim")
    await _said(chat, "victim started")
    sock = paths.dtach_socket(chat.daemon.env, "victim")
    await chat.fake.user_says("/kill victim")
    await _said(chat, "End session victim?")
    assert dtach.is_live(sock)
    ask = _message(chat, "End session victim?")
    yes = _data(ask, "🗑 Yes, end it")
    await chat.fake.user_taps(ask["message_id"], _data(ask, "Cancel"))
    await chat.fake.wait_for("answerCallbackQuery", lambda p: p.get("text") == "Kept running.")
    # the outcome replaces the question and its buttons
    kept = await chat.fake.wait_for("editMessageText", lambda p: "kept running" in p["text"])
    assert int(kept["message_id"]) == ask["message_id"] and not kept.get("reply_markup")
    assert not chat.fake.message(chat.chat_id, ask["message_id"]).get("reply_markup")
    # a late tap on the answered question does nothing
    await chat.fake.user_taps(ask["message_id"], yes)
    await chat.fake.wait_for("answerCallbackQuery", lambda p: p.get("text") == "Already answered.")
    assert dtach.is_live(sock)

    sent = len(chat.fake.calls_of("sendMessage"))
    await chat.fake.user_says("/kill victim")
    await eventually(lambda: any("End session victim?" in m["text"]
                                 for m in chat.fake.bot_messages(chat.chat_id)), what="asked again")
    ask = _message(chat, "End session victim?")
    yes = _data(ask, "🗑 Yes, end it")
    await chat.fake.user_taps(ask["message_id"], yes)
    await chat.fake.user_taps(ask["message_id"], yes)  # a double tap
    ended = await chat.fake.wait_for("editMessageText", lambda p: "victim ended by @owner" in p["text"])
    assert int(ended["message_id"]) == ask["message_id"] and not ended.get("reply_markup")
    assert not dtach.is_live(sock)
    await eventually(lambda: chat.bot.outbox.idle(), what="outbox idle")
    assert len(chat.fake.calls_of("sendMessage")) == sent + 1  # one message for one /kill
    toasts = [p.get("text") for p in chat.fake.calls_of("answerCallbackQuery")]
    assert toasts.count("Already answered.") == 2 and toasts.count("Ending victim…") == 1
    with open(paths.audit_log(chat.bot.env), "rb") as fh:
        assert [orjson.loads(line)["action"] for line in fh].count("session_kill") == 1


@pytest.mark.parametrize("end_comes", ["during the kill", "after the outcome"])
async def test_a_kill_from_the_chat_is_said_once(chat, end_comes):
    """The walk's /kill: the question became "🗑 jim ended by @owner." and then Claude Code's
    SessionEnd added "🔴 jim · Session ended" under it.  The question says it, once, whether
    the end arrives while the kill runs or after; a later end of a session of that name is
    said as usual."""
    session = chat.start("jim")

    async def kill(label: str) -> bool:
        if end_comes == "during the kill":
            chat.feed(session, "SessionEnd", reason="other")
        return True

    chat.daemon.kill_session = kill
    await chat.fake.user_says("/kill jim")
    await _said(chat, "End session jim?")
    ask = _message(chat, "End session jim?")
    await chat.fake.user_taps(ask["message_id"], _data(ask, "🗑 Yes, end it"))
    await chat.fake.wait_for("editMessageText", lambda p: "jim ended by @owner" in p["text"])
    if end_comes == "after the outcome":
        chat.feed(session, "SessionEnd", reason="other")
    await chat.fake.user_says("/help")
    await _said(chat, "aipager — Claude Code from your phone.")
    await eventually(lambda: chat.bot.outbox.idle(), what="outbox idle")
    assert not [t for t in chat.sent_texts() if "Session ended" in t], chat.sent_texts()
    # the same name again, ended at the computer: said as usual
    chat.feed(session, "SessionStart", source="resume", session_id="sid-jim-2", cwd="/tmp")
    chat.feed(session, "SessionEnd", reason="other", session_id="sid-jim-2")
    await _said(chat, "🔴 jim · Session ended")


async def test_stop_presses_escape_in_the_working_session(chat):
    idle = chat.start("idle")
    busy = chat.start("busy")
    chat.feed(busy, "UserPromptSubmit", prompt="long job", prompt_id="p1")
    await chat.fake.user_says("/stop")
    await _said(chat, "Stop sent to busy")
    assert chat.sessions.keys == [(busy, [ESCAPE])]
    # one rule on every surface (the card's button and the page say the same): a session
    # that works on nothing gets no Escape
    await chat.fake.user_says("/stop idle")
    await _said(chat, "idle is not working on anything.")
    assert chat.sessions.keys == [(busy, [ESCAPE])] and idle


async def test_the_cards_stop_button_interrupts_and_a_stale_one_refuses(chat):
    session = chat.start("jim")
    chat.feed(session, "UserPromptSubmit", prompt="long job", prompt_id="p1")
    await chat.fake.wait_for("sendMessage", lambda p: "jim · working" in str(p["text"]))
    card = _message(chat, "jim · working")
    sent = len(chat.fake.calls_of("sendMessage"))
    first = await chat.fake.user_taps(card["message_id"], _data(card, "⏹ Stop"))
    await eventually(lambda: chat.sessions.keys)
    assert chat.sessions.keys == [(session, [ESCAPE])]
    toast = await chat.fake.wait_for("answerCallbackQuery", lambda p: p["callback_query_id"] == first)
    assert toast["text"] == "Stopping…"
    await eventually(lambda: chat.bot.outbox.idle(), what="outbox idle")
    # the toast and the card say it: no "Stop sent" message under the card as well
    assert len(chat.fake.calls_of("sendMessage")) == sent, chat.sent_texts()[sent:]
    chat.feed(session, "Stop", prompt_id="p1", last_assistant_message="Stopped.")
    query = await chat.fake.user_taps(card["message_id"], _data(card, "⏹ Stop"))
    toast = await chat.fake.wait_for("answerCallbackQuery", lambda p: p["callback_query_id"] == query)
    assert "not working" in toast["text"]
    assert len(chat.sessions.keys) == 1


async def test_compact_and_model_are_typed(chat):
    session = chat.start("jim")
    chat.feed(session, "statusline", session_id="sid-jim")
    await chat.fake.user_says("/compact")
    await _said(chat, "/compact sent to jim")
    await chat.fake.user_says("/model sonnet")
    await _said(chat, "switching to sonnet")
    assert [t[1] for t in chat.sessions.typed] == ["/compact", "/model sonnet"]
    marker = paths.modelswitch_marker(chat.daemon.env, session)
    assert os.path.exists(marker), "the switch is announced so Claude Code does not ask"
    await chat.fake.user_says("/model rm -rf")
    await _said(chat, "Which model?")
    assert len(chat.sessions.typed) == 2
    # /model alone: the current model and a button per model, for this session
    chat.daemon.core.registry.get(session).model = "Sonnet 4.5"
    await chat.fake.user_says("/model")
    picker = await _said(chat, "jim uses Sonnet 4.5")
    assert "this session only" in picker["text"]
    message = _message(chat, "jim uses Sonnet 4.5")
    await chat.fake.user_taps(message["message_id"], _data(message, "haiku"))
    await eventually(lambda: len(chat.sessions.typed) == 3, what="the switch typed")
    assert chat.sessions.typed[2][1] == "/model haiku"
    # the picker becomes the switch: it no longer says the old model nor offers its buttons
    await chat.fake.wait_for("editMessageText", lambda p: int(p["message_id"]) == message["message_id"])
    now = chat.fake.message(chat.chat_id, message["message_id"])
    assert now["text"] == "🧠 jim: switching to haiku." and not now.get("reply_markup"), now
    forged = message["reply_markup"]["inline_keyboard"][0][0]["callback_data"].rsplit(":", 1)[0]
    query = await chat.fake.user_taps(message["message_id"], forged + ":gpt")
    toast = await chat.fake.wait_for("answerCallbackQuery", lambda p: p["callback_query_id"] == query)
    assert toast.get("text") == "This button has expired."
    assert len(chat.sessions.typed) == 3


async def test_settings_toggle_and_change_what_is_shown(chat):
    session = chat.start("jim")
    await chat.fake.user_says("/settings")
    settings = await _said(chat, "Settings for this chat")
    assert "Diff previews: off" in settings["text"]
    message = _message(chat, "Settings for this chat")
    await chat.fake.user_taps(message["message_id"], _data(message, "📝 Diff previews: turn on"))
    await chat.fake.wait_for("editMessageText", lambda p: "Diff previews: on" in p["text"])
    chat.feed(session, "UserPromptSubmit", prompt="edit", prompt_id="p1")
    chat.feed(session, "PreToolUse", tool_name="Edit", tool_use_id="e1",
              tool_input={"file_path": "/tmp/a.py", "old_string": "x = 1", "new_string": "x = 2"})
    chat.feed(session, "PostToolUse", tool_name="Edit", tool_use_id="e1",
              tool_input={"file_path": "/tmp/a.py", "old_string": "x = 1", "new_string": "x = 2"},
              tool_response={})
    diff = await _said(chat, "x = 2")
    assert any(e["type"] == "pre" for e in diff.get("entities") or [])
    message = _message(chat, "Settings for this chat")
    await chat.fake.user_taps(message["message_id"], _data(message, "💬 Reply style ›"))
    # a › shows the setting's choices (the one in force marked); a tap on one chooses it
    await chat.fake.wait_for("editMessageText", lambda p: p["text"] == "💬 Reply style")
    choices = chat.fake.message(chat.chat_id, message["message_id"])
    assert "✓ Claude’s own" in str(choices["reply_markup"])
    await chat.fake.user_taps(message["message_id"],
                              _data(choices, "Reply briefly, in a few sentences."))
    await chat.fake.wait_for("editMessageText", lambda p: "Reply style: Reply briefly" in p["text"])
    await chat.fake.user_says("summarise")
    typed = await eventually(lambda: chat.sessions.typed)
    assert typed[0][2]["style"].startswith("Reply briefly")
    assert "Quiet while you are at the computer: on" in settings["text"]
    message = _message(chat, "Settings for this chat")
    await chat.fake.user_taps(message["message_id"],
                              _data(message, "🔕 Quiet at the computer: turn off"))
    await chat.fake.wait_for("editMessageText",
                             lambda p: "Quiet while you are at the computer: off" in p["text"])
    assert chat.bot.state.prefs_of(chat.chat_id).quiet is False


async def test_session_shortcuts_and_unknown_commands(chat):
    alpha = chat.start("alpha")
    chat.start("beta")
    await chat.fake.user_says("/alpha")
    await _said(chat, "Your messages go to alpha now.")
    await chat.fake.user_says("/beta run lint")
    typed = await eventually(lambda: chat.sessions.typed)
    assert typed[0][:2] == ("claude-beta", "run lint")
    await chat.fake.user_says("/frobnicate")
    await _said(chat, "Unknown command /frobnicate")
    await chat.fake.user_says("next one")
    await eventually(lambda: len(chat.sessions.typed) == 2)
    assert chat.sessions.typed[1][:2] == (alpha, "next one")


async def test_stickers_and_other_messages_get_a_hint(chat):
    chat.start("jim")
    await chat.fake.push_raw_update({"message": {
        "message_id": 900, "date": 1764680000, "chat": {"id": chat.chat_id, "type": "private"},
        "from": {"id": chat.chat_id, "is_bot": False, "first_name": "Owner"},
        "sticker": {"file_id": "s1", "file_unique_id": "u1", "type": "regular", "width": 1,
                    "height": 1, "is_animated": False, "is_video": False}}})
    await _said(chat, "I pass on text, photos and documents")
    assert chat.sessions.typed == []


async def test_the_menu_lists_live_sessions(chat):
    from aipager.bot import service

    chat.start("alpha")
    chat.start("bad-name")  # not a valid command name: no shortcut
    await service.ChatBot._menu(chat.bot)
    scoped = await chat.fake.wait_for("setMyCommands", lambda p: "scope" in p)
    names = [c["command"] for c in scoped["commands"]]
    assert names[0] == "alpha" and "bad-name" not in names and "status" in names


async def test_resume_restarts_an_ended_session_with_its_conversation(chat, fake_claude):
    mark, folder = fake_claude
    session = chat.start("old")
    sess = chat.daemon.core.registry.get(session)
    sess.cwd = str(folder)
    chat.feed(session, "SessionEnd", reason="prompt_input_exit")
    await chat.fake.user_says("/resume")
    picker = await _said(chat, "Resume which session?")
    message = _message(chat, "Resume which session?")
    await chat.fake.user_taps(message["message_id"], _data(message, "old"))
    await _said(chat, "old resumed")
    await eventually(lambda: mark.exists() and mark.read_text())
    assert mark.read_text().strip() == f"{folder}|--resume sid-old --teammate-mode in-process"
    assert picker


async def test_text_for_an_ended_session_says_it_ended_and_offers_to_resume_it(
        chat, fake_claude):
    """``/pg text`` once answered "Unknown command /pg" for a session that had just ended."""
    mark, folder = fake_claude
    session = chat.start("pg")
    chat.daemon.core.registry.get(session).cwd = str(folder)
    chat.feed(session, "SessionEnd", reason="prompt_input_exit")
    await chat.fake.user_says("/pg run the migrations")
    said = (await _said(chat, "pg has ended"))["text"]
    assert "nothing was sent" in said and "Unknown command" not in said
    assert chat.sessions.typed == []
    message = _message(chat, "pg has ended")
    await chat.fake.user_taps(message["message_id"], _data(message, "pg"))
    await _said(chat, "pg resumed")
    await eventually(lambda: mark.exists() and mark.read_text())
    assert mark.read_text().strip() == f"{folder}|--resume sid-pg --teammate-mode in-process"


def test_every_command_a_router_answers_is_a_name_no_session_may_take():
    """One list of command names: a session named like a command could be started but
    never addressed (``/join`` went to the team command)."""
    from aiogram.filters import Command

    from aipager.bot import view
    from aipager.bot.routers import commands, team

    names = set()
    for router in (commands.make_router(), team.make_router()):
        for handler in router.message.handlers:
            for flt in handler.filters or []:
                if isinstance(flt.callback, Command):
                    names.update(c for c in flt.callback.commands if isinstance(c, str))
    assert names and names <= view.RESERVED, names - view.RESERVED
    assert "join" in names


async def test_a_compact_from_the_chat_says_once_when_it_is_done(chat, monkeypatch):
    from aipager.daemon.events import compaction

    monkeypatch.setattr(compaction, "FIGURES_WAIT", 0.0)  # no reading will show a drop
    session = chat.start("jim")
    await chat.fake.user_says("/compact")
    await _said(chat, "/compact sent to jim")
    chat.feed(session, "PreCompact", trigger="manual")
    chat.feed(session, "SessionStart", source="compact", session_id="sid-jim")
    chat.feed(session, "PostCompact", trigger="manual")
    chat.daemon.core.tick()
    chat.daemon.core.tick()
    await _said(chat, "📦 jim · Conversation compacted")
    await eventually(lambda: chat.bot.outbox.idle(), what="outbox idle")
    assert len([t for t in chat.sent_texts() if "Conversation compacted" in t]) == 1


async def test_a_quoted_name_then_one_word_is_the_name_and_its_first_message(chat, fake_claude):
    """``/new "My Project" hello`` (the README's form): the quote says where the name ends,
    so "hello" is the first message, never taken for the rest of a name and refused."""
    mark, folder = fake_claude
    chat.sessions.live.add("claude-My-Project")
    await chat.fake.user_says('/new "My Project" hello')
    await _said(chat, "My-Project started")
    chat.feed("claude-My-Project", "SessionStart", source="startup", session_id="sid-mp",
              cwd=str(folder))
    typed = await eventually(lambda: chat.sessions.typed, what="first message typed")
    assert typed[0][:2] == ("claude-My-Project", "hello")
    assert not any("A session name is one word" in t for t in chat.sent_texts())


async def test_a_name_with_accents_is_refused_in_the_persons_language_by_the_rule_it_was_told(
        chat, fake_claude):
    """The rule said "letters" while only a–z are taken (a session is also the command /NAME,
    ASCII in Telegram): the ask and the refusal both say a–z, the refusal translated (it
    once carried the English error inside the Vietnamese sentence)."""
    mark, _ = fake_claude
    await chat.fake.user_says("/new")
    asked = (await _said(chat, "Name for the new session?"))["text"]
    assert "a–z without accents" in asked
    await chat.fake.user_says("thử-nghiệm")
    refused = (await _said(chat, "Cannot start a session named thử-nghiệm"))["text"]
    assert "a–z without accents" in refused and "invalid session name" not in refused
    from fakes.telegram_api import OWNER

    await chat.fake.user_says("/new thử", user={**OWNER, "language_code": "vi"})
    refused = (await chat.fake.wait_for("sendMessage", lambda p: "thử" in str(p["text"])
                                        and "Cannot" not in str(p["text"])))["text"]
    assert "invalid session name" not in refused and "không dấu" in refused
    assert not mark.exists()
