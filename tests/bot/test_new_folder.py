"""/new from the phone: the folder offered, and Claude Code's folder trust dialog answered
with a tap (the real chat over HTTP, the real daemon, a stand-in ``claude`` in real dtach)."""

from __future__ import annotations


import asyncio
import json
import os
import stat

import pytest
from support.screens import DOWN, ENTER, at_trust_dialog
from bot.conftest import eventually

from aipager import config, dtach


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


def _trust(env: dict, *folders: str) -> None:
    """Claude Code's own record of the folders it trusts (``~/.claude.json``)."""
    path = os.path.join(env["HOME"], ".claude.json")
    with open(path, "w", encoding="utf-8") as fh:
        json.dump({"projects": {f: {"hasTrustDialogAccepted": True} for f in folders}}, fh)


def _buttons(message: dict) -> dict[str, str]:
    return {b["text"]: b["callback_data"] for row in
            (message.get("reply_markup") or {}).get("inline_keyboard", []) for b in row}


async def _message_with(chat, start: str) -> dict:
    await chat.fake.wait_for("sendMessage", lambda p: str(p["text"]).startswith(start))
    return next(m for m in reversed(chat.fake.bot_messages(chat.chat_id))
                if str(m.get("text", "")).startswith(start))


async def _edited(chat, message: dict, text: str) -> dict:
    """``message`` once it was edited to read ``text``."""
    await eventually(lambda: chat.fake.message(chat.chat_id, message["message_id"])["text"]
                     == text, what=f"the message edited to {text!r}")
    return chat.fake.message(chat.chat_id, message["message_id"])


async def _started_in(mark, timeout: float = 10.0) -> str:
    await eventually(lambda: mark.exists() and mark.read_text().strip(), timeout,
                     "the stand-in claude started")
    return mark.read_text().split("|", 1)[0]


async def test_new_offers_the_trusted_folders_first_and_starts_in_the_one_tapped(
        chat, fake_claude, tmp_path):
    mark, default = fake_claude
    trusted = tmp_path / "work" / "api"
    trusted.mkdir(parents=True)
    _trust(chat.daemon.env, str(trusted))
    await chat.fake.user_says("/new jim")
    offer = await _message_with(chat, "📁 Where should jim start?")
    shown = _buttons(offer)
    # the trusted one first; the default last, saying Claude Code will ask about it
    assert list(shown)[0] == f"📁 {trusted}"
    assert list(shown)[-1] == f"📁 {default} · Claude Code will ask to trust it"
    assert not mark.exists()  # nothing started before the tap

    await chat.fake.user_taps(offer["message_id"], shown[f"📁 {trusted}"])
    await chat.fake.wait_for("sendMessage", lambda p: "🆕 jim started in" in str(p["text"]))
    assert await _started_in(mark) == str(trusted)
    # a trusted folder: no trust question; the offer now names the folder, without buttons
    assert not any("do you trust" in t for t in chat.bot_texts())
    assert chat.fake.message(chat.chat_id, offer["message_id"])["text"] == f"📁 jim: {trusted}"
    # a second tap on the old offer starts nothing more
    query = await chat.fake.user_taps(offer["message_id"], shown[f"📁 {trusted}"])
    toast = await chat.fake.wait_for("answerCallbackQuery",
                                     lambda p: p["callback_query_id"] == query)
    assert toast["text"] == "This button has expired."


async def test_a_folder_claude_code_does_not_trust_asks_here_and_the_first_message_waits(
        chat, fake_claude):
    mark, default = fake_claude
    await chat.fake.user_says("/new jim hello there")
    await chat.fake.wait_for("sendMessage", lambda p: "🆕 jim started in" in str(p["text"]))
    assert await _started_in(mark) == str(default)
    question = await _message_with(chat, "📁 Claude Code asks before jim starts")
    assert str(default) in question["text"]
    shown = _buttons(question)
    assert set(shown) == {"✅ Yes, I trust this folder", "🗑 No, end the session"}
    chat.sessions.live.add("claude-jim")
    at_trust_dialog(chat.sessions, "claude-jim")  # as the real screen opens: on "No, exit"
    # the first message is not typed into the dialog (its keys would answer it)
    assert chat.sessions.typed == []

    await chat.fake.user_taps(question["message_id"], shown["✅ Yes, I trust this folder"])
    # the selection moved onto "Yes, I trust this folder" first, then Enter: read off the
    # screen, never pressed blind on the choice it opens on
    await eventually(lambda: [k for _, ks in chat.sessions.keys for k in ks]
                     == [DOWN, ENTER], what="the trust dialog answered")
    assert chat.sessions.typed == [] and chat.sessions.live == {"claude-jim"}
    await eventually(lambda: chat.fake.message(chat.chat_id, question["message_id"])["text"]
                     == f"📁 jim may use {default}.", what="the question answered in place")
    # Claude Code starts (its SessionStart): the first message goes in, once
    chat.feed("claude-jim", "SessionStart", source="startup", session_id="sid-jim",
              cwd=str(default), transcript_path="/nonexistent/jim.jsonl")
    await eventually(lambda: any(t[1] == "hello there" for t in chat.sessions.typed), 10,
                     "the first message typed")
    assert [t[1] for t in chat.sessions.typed].count("hello there") == 1


async def test_no_exit_ends_the_session(chat, fake_claude):
    mark, _default = fake_claude
    await chat.fake.user_says("/new jim")
    question = await _message_with(chat, "📁 Claude Code asks before jim starts")
    await _started_in(mark)
    chat.sessions.live.add("claude-jim")
    at_trust_dialog(chat.sessions, "claude-jim")
    await chat.daemon.discover()
    await chat.fake.user_taps(question["message_id"], _buttons(question)["🗑 No, end the session"])
    await eventually(lambda: not any(i.name == "jim" for i in dtach.list_sessions(
        chat.daemon.env)), 10, "the session ended")
    assert [k for _, ks in chat.sessions.keys for k in ks] == [ENTER]  # on "No, exit"
    await eventually(lambda: chat.fake.message(chat.chat_id, question["message_id"])["text"]
                     == "🗑 jim ended.", what="the question answered in place")
    # its end is said once, there: no "🔴 Session gone" after it
    chat.sessions.live.discard("claude-jim")
    await chat.daemon.discover()
    await asyncio.sleep(1.0)
    assert not [t for t in chat.bot_texts() if "Session gone" in t or "🔴" in t], chat.bot_texts()


async def test_in_private_mode_new_names_no_folder_in_telegram(chat, fake_claude, tmp_path):
    """Folder names are content: in private mode /new starts in the default folder (the page
    offers the others) and its replies, the trust question and its answer name none."""
    mark, _default = fake_claude
    canary = tmp_path / "CANARYFOLDER"
    canary.mkdir()
    chat.bot.members.cfg.extra["new_session_folder"] = str(canary)
    chat.bot.members.cfg.extra["private"] = True
    config.save(chat.daemon.env, chat.bot.members.cfg)
    trusted = tmp_path / "CANARYTRUSTED"
    trusted.mkdir()
    _trust(chat.daemon.env, str(trusted))
    await chat.fake.user_says("/new jim")
    await chat.fake.wait_for("sendMessage", lambda p: "🆕 jim started." in str(p["text"]))
    assert await _started_in(mark) == str(canary)
    question = await _message_with(chat, "📁 Claude Code asks before jim starts")
    assert "its folder" in question["text"]
    chat.sessions.live.add("claude-jim")
    at_trust_dialog(chat.sessions, "claude-jim")
    await chat.fake.user_taps(question["message_id"],
                              _buttons(question)["✅ Yes, I trust this folder"])
    await eventually(lambda: chat.fake.message(chat.chat_id, question["message_id"])["text"]
                     == "📁 jim may use its folder.", what="the question answered in place")
    assert "CANARY" not in chat.fake.everything_received()


async def test_new_starts_in_the_permission_mode_settings_chose(chat, fake_claude):
    mark, default = fake_claude
    _trust(chat.daemon.env, str(default))
    await chat.fake.user_says("/settings")
    shown = await _message_with(chat, "⚙️ Settings for this chat")
    assert "/new starts sessions in: 🤖 Auto" in shown["text"]
    await chat.fake.user_taps(shown["message_id"], _buttons(shown)["🛡 Mode of new sessions ›"])
    choices = await _edited(chat, shown, "🛡 Mode of new sessions")
    assert "✓ 🤖 Auto: ordinary commands run, risky ones ask (Claude Code's own)" in \
        _buttons(choices)
    await chat.fake.user_taps(shown["message_id"],
                              _buttons(choices)["✋ Ask: every edit and command waits for a yes"])
    await eventually(lambda: "✋ Ask" in chat.fake.message(chat.chat_id,
                                                          shown["message_id"])["text"],
                     what="the settings saying the new mode")
    await chat.fake.user_says("/new jim")
    said = await _message_with(chat, "🆕 jim started in")
    assert said["text"].endswith("✋ Ask: every edit and command waits for a yes")
    await _started_in(mark)
    assert mark.read_text().strip().endswith("|--permission-mode default --teammate-mode in-process")
    # a forged mode in the settings' button is refused, and changes nothing
    query = await chat.fake.user_taps(shown["message_id"], "set:mode:bypassPermissions")
    toast = await chat.fake.wait_for("answerCallbackQuery",
                                     lambda p: p["callback_query_id"] == query)
    assert toast["text"] == "This button has expired."
    await chat.fake.user_says("/settings")
    await chat.fake.wait_for("sendMessage", lambda p: "⚙️ Settings" in str(p["text"])
                             and "/new starts sessions in: ✋ Ask" in str(p["text"]))


async def test_a_first_message_whose_session_ended_first_is_never_delivered(chat, fake_claude):
    """/new jim with a first message, ended at its trust question: the message gets 🤷 and
    is dropped; a later jim (another folder, another start) never receives it."""
    mark, _default = fake_claude
    first = await chat.fake.user_says("/new jim say the first message")
    question = await _message_with(chat, "📁 Claude Code asks before jim starts")
    await _started_in(mark)
    chat.sessions.live.add("claude-jim")
    at_trust_dialog(chat.sessions, "claude-jim")
    await chat.daemon.discover()
    await chat.fake.user_taps(question["message_id"], _buttons(question)["🗑 No, end the session"])
    await eventually(lambda: not any(i.name == "jim" for i in dtach.list_sessions(
        chat.daemon.env)), 10, "the session ended")
    chat.sessions.live.discard("claude-jim")  # its socket is gone: discovery ends it
    await chat.daemon.discover()
    await eventually(lambda: "🤷" in str(chat.fake.calls_of("setMessageReaction")), 15,
                     "🤷 on the first message")
    reacted = [c for c in chat.fake.calls_of("setMessageReaction")
               if str(c["message_id"]) == str(first["message_id"])]
    assert reacted and "🤷" in str(reacted[-1]["reaction"])
    # a new jim starts and comes up: the old message is not typed into it
    chat.sessions.live.add("claude-jim")
    chat.feed("claude-jim", "SessionStart", source="startup", session_id="sid-jim2",
              cwd="/tmp", transcript_path="/nonexistent/jim2.jsonl")
    await asyncio.sleep(1.5)
    assert not any("the first message" in str(t[1]) for t in chat.sessions.typed)


async def test_a_question_of_an_earlier_session_of_the_name_answers_nothing(chat, fake_claude):
    """The first jim's trust question, tapped after a second jim started: it says so and
    neither trusts nor ends the new one; the new jim's own question works."""
    mark, _default = fake_claude
    await chat.fake.user_says("/new jim")
    old = await _message_with(chat, "📁 Claude Code asks before jim starts")
    await _started_in(mark)
    chat.sessions.live.add("claude-jim")
    await chat.daemon.discover()
    assert dtach.kill(chat.daemon.env, "jim")  # it died at its trust dialog
    chat.sessions.live.discard("claude-jim")
    await chat.daemon.discover()
    mark.unlink()
    await chat.fake.user_says("/new jim")
    await _started_in(mark)
    await eventually(lambda: chat.fake.message(chat.chat_id, old["message_id"])["text"]
                     == "📁 This question was for an earlier jim.", what="the old one closed")
    def asked_again() -> list[dict]:
        return [m for m in chat.fake.bot_messages(chat.chat_id)
                if str(m.get("text", "")).startswith("📁 Claude Code asks before jim starts")
                and m["message_id"] != old["message_id"]]

    await eventually(asked_again, what="the new jim's own question")
    (new,) = asked_again()
    chat.sessions.live.add("claude-jim")
    at_trust_dialog(chat.sessions, "claude-jim")
    await chat.fake.user_taps(old["message_id"], _buttons(old)["🗑 No, end the session"])
    await asyncio.sleep(0.5)
    assert chat.sessions.keys == []
    assert any(i.name == "jim" for i in dtach.list_sessions(chat.daemon.env))
    await chat.fake.user_taps(new["message_id"], _buttons(new)["✅ Yes, I trust this folder"])
    await eventually(lambda: [k for _, ks in chat.sessions.keys for k in ks] == [DOWN, ENTER],
                     what="the new question answered on the new dialog")


async def test_new_starts_the_agent_settings_chose(chat, fake_claude, tmp_path):
    """/settings › 🧩 Agent › Codex: /new starts Codex (its own program, its own flags), in
    the default folder at once (the folders offered are the ones Claude Code trusts), and
    says so; ‹ Back leaves a setting as it was."""
    _mark, default = fake_claude
    codex_mark = tmp_path / "codex-started"
    codex = tmp_path / "codex"
    codex.write_text(f'#!/bin/sh\necho "$PWD|$*" >> {codex_mark}\nexec sleep 60\n')
    codex.chmod(codex.stat().st_mode | stat.S_IEXEC)
    await chat.fake.user_says("/settings")
    shown = await _message_with(chat, "⚙️ Settings for this chat")
    assert "/new starts: Claude Code" in shown["text"]
    await chat.fake.user_taps(shown["message_id"], _buttons(shown)["🧩 Agent of new sessions ›"])
    choices = await _edited(chat, shown, "🧩 Agent of new sessions")
    # this computer has no codex yet: the choice says so
    assert list(_buttons(choices)) == ["✓ Claude Code", "Codex (not installed on the computer)",
                                       "‹ Back"]
    await chat.fake.user_taps(shown["message_id"], _buttons(choices)["‹ Back"])
    back = await _edited(chat, shown, shown["text"])
    assert chat.bot.state.prefs_of(chat.chat_id).agent == ""  # nothing chosen
    chat.daemon.env["AIPAGER_CODEX_BIN"] = str(codex)
    await chat.fake.user_taps(shown["message_id"], _buttons(back)["🧩 Agent of new sessions ›"])
    choices = await _edited(chat, shown, "🧩 Agent of new sessions")
    await chat.fake.user_taps(shown["message_id"], _buttons(choices)["Codex"])
    await eventually(lambda: "/new starts: Codex" in chat.fake.message(
        chat.chat_id, shown["message_id"])["text"], what="the settings saying Codex")

    _trust(chat.daemon.env, str(tmp_path / "elsewhere"))  # Claude Code's: not offered to Codex
    await chat.fake.user_says("/new cx")
    said = await _message_with(chat, "🆕 cx started in")
    assert said["text"] == f"🆕 cx started in {default}. Your messages go there now.\n" \
        "🧩 It runs Codex."
    await _started_in(codex_mark)
    folder, args = codex_mark.read_text().strip().split("|", 1)
    assert (folder, args) == (str(default), "--no-daemon")
    assert chat.daemon.core.registry.get("claude-cx").coding_agent == "codex"
    assert not any("Where should" in t for t in chat.bot_texts())
