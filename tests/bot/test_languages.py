"""The chat speaks the person's language, through the real aiogram against the fake Bot API:
a person's replies in their Telegram language or their /settings choice, what the chat says on
its own in the chat's language (the config's ``language``, else its last member's), Claude's
own words never translated."""

from __future__ import annotations

import dataclasses

import pytest
from bot.conftest import eventually
from fakes.telegram_api import OWNER

from aipager import config

BRAZILIAN = {**OWNER, "language_code": "pt-br"}


def _buttons(message: dict) -> dict[str, str]:
    return {b["text"]: b["callback_data"] for row in message["reply_markup"]["inline_keyboard"]
            for b in row}


def _message(chat, needle: str) -> dict:
    return next(m for m in reversed(chat.fake.bot_messages(chat.chat_id))
                if needle in m.get("text", ""))


async def test_a_brazilian_gets_portuguese_replies_and_buttons(chat):
    chat.start("jim")
    await chat.fake.user_says("/settings", user=BRAZILIAN)
    await chat.fake.wait_for("sendMessage", lambda p: "Configurações deste chat" in p["text"])
    settings = _message(chat, "Configurações deste chat")
    assert "Prévia de diffs: desligada" in settings["text"]
    assert "Seu idioma: Automático (o do seu Telegram)" in settings["text"]
    assert "📝 Prévia de diffs: ligar" in _buttons(settings)
    await chat.fake.user_says("/status", user=BRAZILIAN)
    status = await chat.fake.wait_for("sendMessage", lambda p: "Sessões:" in p["text"])
    assert "jim" in status["text"] and "pronta" in status["text"]
    # a toast in Portuguese too
    query = await chat.fake.user_taps(settings["message_id"], _buttons(settings)[
        "📝 Prévia de diffs: ligar"], user=BRAZILIAN)
    toast = await chat.fake.wait_for("answerCallbackQuery",
                                     lambda p: p["callback_query_id"] == query)
    assert toast["text"] == "Salvo."
    # the English of someone without a language_code is untouched
    await chat.fake.user_says("/status")
    await chat.fake.wait_for("sendMessage", lambda p: p["text"].startswith("Sessions:"))


async def test_the_command_menu_is_set_per_language(chat):
    await chat.fake.wait_for("setMyCommands", lambda p: p.get("language_code") == "vi")
    english = {c["command"]: c["description"] for c in chat.fake.commands_for()}
    portuguese = {c["command"]: c["description"] for c in chat.fake.commands_for(
        language_code="pt")}
    spanish = {c["command"]: c["description"] for c in chat.fake.commands_for(
        language_code="es")}
    assert english["new"] == "Start a session: /new NAME [first message]"
    assert portuguese["new"] == "Iniciar uma sessão: /new NOME [primeira mensagem]"
    assert spanish["status"] == "Todas las sesiones y lo que esperan"
    assert set(english) == set(portuguese) == set(spanish)


async def test_a_settings_choice_of_vietnamese_overrides_telegrams_language(chat):
    await chat.fake.user_says("/settings", user=BRAZILIAN)
    await chat.fake.wait_for("sendMessage", lambda p: "Configurações deste chat" in p["text"])
    settings = _message(chat, "Configurações deste chat")
    query = await chat.fake.user_taps(settings["message_id"], _buttons(settings)["Tiếng Việt"],
                                      user=BRAZILIAN)
    toast = await chat.fake.wait_for("answerCallbackQuery",
                                     lambda p: p["callback_query_id"] == query)
    assert toast["text"] == "Đã lưu."
    edited = await chat.fake.wait_for("editMessageText",
                                      lambda p: "Cài đặt cho cuộc trò chuyện này" in p["text"])
    assert "Ngôn ngữ của bạn: Tiếng Việt" in edited["text"]
    assert chat.bot.state.langs[str(OWNER["id"])] == "vi"
    await chat.fake.user_says("/help", user=BRAZILIAN)
    await chat.fake.wait_for("sendMessage", lambda p: "Claude Code ngay trên điện thoại" in p["text"])
    # and what the chat says on its own follows the person who spoke: the pinned line
    session = chat.start("jim")
    chat.feed(session, "UserPromptSubmit", prompt="run the tests", prompt_id="p1")
    await chat.fake.wait_for("sendMessage", lambda p: p["text"] == "📟 ⏳ đang xử lý: jim")
    # Auto: back to the Telegram app's language
    settings = _message(chat, "Cài đặt cho cuộc trò chuyện này")
    assert "✓ Tiếng Việt" in _buttons(settings)
    await chat.fake.user_taps(settings["message_id"], _buttons(settings)["🌐 Tự động"],
                              user=BRAZILIAN)
    await chat.fake.wait_for("editMessageText", lambda p: "Configurações deste chat" in p["text"])
    assert str(OWNER["id"]) not in chat.bot.state.langs


async def test_a_chat_configured_in_spanish_gets_spanish_requests_and_claudes_words_untouched(chat):
    env = chat.daemon.env
    cfg = config.load(env)
    config.save(env, dataclasses.replace(cfg, extra={**cfg.extra, "language": "es"}))
    session = chat.start("jim")
    chat.feed(session, "UserPromptSubmit", prompt="run the tests", prompt_id="p1")
    chat.feed(session, "PermissionRequest", tool_name="Bash", tool_use_id="t1", cwd="/srv/app",
              tool_input={"command": "make test", "description": "Run the tests"})
    await chat.fake.wait_for("sendMessage", lambda p: "make test" in str(p["text"]))
    request = next(m for m in chat.fake.bot_messages(chat.chat_id)
                   if "make test" in m["text"] and m.get("reply_markup"))
    assert {"✅ Permitir", "❌ Rechazar", "⏹ Detener"} <= set(_buttons(request))
    assert "make test" in request["text"]  # the command itself is never translated
    assert request["text"].startswith("🔐 jim · Bash: Run the tests")  # Claude's words, as said
    assert "📁 en /srv/app" in request["text"]  # the daemon's words, in Spanish
    # the card, which the daemon renders in English, is rendered again in Spanish
    await eventually(lambda: any("jim · esperando tu permiso" in m["text"]
                                 for m in chat.fake.bot_messages(chat.chat_id)),
                     what="the card in Spanish")
    answer = ("Done: the **tests** pass. Next I would run `make lint`; shall I? "
              "(Claude's own words, in whatever language Claude wrote them.)")
    chat.feed(session, "Stop", prompt_id="p1", last_assistant_message=answer)
    sent = await chat.fake.wait_for("sendMessage", lambda p: "Claude's own words" in str(p["text"]))
    assert "Done: the tests pass. Next I would run make lint; shall I?" in sent["text"]
    # a notice the daemon renders in English, said again in Spanish, with its button
    chat.feed(session, "statusline", context_pct=91.0)
    notice = await chat.fake.wait_for("sendMessage", lambda p: "Contexto al 91%" in p["text"])
    assert notice["text"] == "⚠️ jim · Contexto al 91%: se compactará pronto"
    assert "📦 Compactar ahora" in str(notice["reply_markup"])
    # a safety block: the daemon's sentence in Spanish, the policy's reason as it is written
    chat.feed(session, "safety_blocked", tool="Bash", reason="tool Bash is denied for this task")
    blocked = await chat.fake.wait_for("sendMessage", lambda p: "🛑" in p["text"])
    assert blocked["text"] == ("🛑 jim · una regla de seguridad rechazó Bash: tool Bash is denied "
                               "for this task. Claude lo sabe y puede seguir sin eso.")
    await eventually(lambda: any(m["text"].startswith("📟 ✅ 1 sesión inactiva")
                                 for m in chat.fake.bot_messages(chat.chat_id)),
                     what="the pinned line in Spanish")


@pytest.mark.parametrize("value", ["fr", "klingon", 7, "pt_PT_x"])
def test_a_config_language_aipager_does_not_speak_is_a_clear_error(value):
    with pytest.raises(config.ConfigError) as err:
        config.from_json({"bot_token": "1:x", "chat_id": 42, "language": value})
    assert "language" in str(err.value) and "pt_BR" in str(err.value)


@pytest.mark.parametrize("value, locale", [("es", "es"), ("pt-BR", "pt_BR"), ("pt", "pt_BR"),
                                           ("VI", "vi"), ("en", "en")])
def test_a_config_language_is_read_in_its_usual_spellings(value, locale):
    from aipager import locales

    cfg = config.from_json({"bot_token": "1:x", "chat_id": 42, "language": value})
    assert locales.exact(cfg.extra["language"]) == locale


def _configure(chat, language: str) -> None:
    env = chat.daemon.env
    cfg = config.load(env)
    config.save(env, dataclasses.replace(cfg, extra={**cfg.extra, "language": language}))


async def test_a_portuguese_chat_gets_each_suggestion_button_in_portuguese_same_taps(chat):
    _configure(chat, "pt_BR")
    session = chat.start("jim")
    chat.feed(session, "UserPromptSubmit", prompt="write a.py", prompt_id="p1")
    folder = {"type": "addDirectories", "directories": ["/srv/app"], "destination": "session"}
    mode = {"type": "setMode", "mode": "acceptEdits", "destination": "session"}
    rule = {"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "npm test:*"}],
            "behavior": "allow", "destination": "localSettings"}
    chat.feed(session, "PermissionRequest", tool_name="Write", tool_use_id="t1",
              tool_input={"file_path": "/srv/app/a.py", "content": "x"},
              permission_suggestions=[folder, mode, rule])
    await chat.fake.wait_for("sendMessage", lambda p: "a.py" in str(p["text"])
                             and p.get("reply_markup") is not None)
    request = next(m for m in chat.fake.bot_messages(chat.chat_id)
                   if "a.py" in m["text"] and m.get("reply_markup"))
    buttons = _buttons(request)
    # the paths and the rule, as Claude Code wrote them; the words around them in Portuguese;
    # each label still carries the tap of the same suggestion
    assert buttons["📁 Permitir, e leituras em /srv/app · esta sessão"].endswith(":s0")
    assert buttons["✏️ Aceitar edições nas pastas dela · esta sessão"].endswith(":s1")
    assert buttons["🟢 Sempre Bash(npm test:*) · este projeto, só para você"].endswith(":s2")


async def test_a_spanish_chat_gets_the_notices_the_daemon_and_the_outbox_say_in_spanish(chat):
    from aipager.port.outputs import Notice, NoticeName

    _configure(chat, "es")
    session = chat.start("jim")
    # a prompt typed at the computer: the header in Spanish, the prompt as it was typed
    chat.feed(session, "UserPromptSubmit", prompt="run the tests", prompt_id="p1")
    typed = await chat.fake.wait_for("sendMessage", lambda p: "run the tests" in str(p["text"]))
    assert typed["text"] == "⌨️ jim · escrito en la computadora:\nrun the tests"
    # a hook at its memory cap: the hook and the tool named as they are
    chat.feed(session, "hook_memory_cap_hit", hook="aipager-hook", tool="Bash")
    capped = await chat.fake.wait_for("sendMessage", lambda p: "🧠" in str(p["text"]))
    assert capped["text"] == "🧠 jim · aipager-hook (Bash) llegó a su límite de 1 GB de memoria"
    # a tap that reached its hook too late: the button named as the chat labels it
    chat.bot.notifier.emit(Notice(session, "⌛ jim · the allow tap came as the wait ended",
                                  notice=NoticeName.LATE_TAP, extra={"lost": "allow"}))
    late = await chat.fake.wait_for("sendMessage", lambda p: "⌛" in str(p["text"]))
    assert late["text"] == ("⌛ jim · el toque en ✅ Permitir llegó justo cuando terminó la "
                            "espera: Claude Code pregunta en la terminal, toca de nuevo")
    # a message Telegram refuses (even plain): the person is told, in Spanish, with
    # Telegram's own words
    chat.fake.fail("sendMessage", 400, "Bad Request: something odd")
    chat.feed(session, "safety_blocked", tool="Bash", reason="tool Bash is denied for this task")
    told = await chat.fake.wait_for("sendMessage", lambda p: "something odd" in str(p["text"]))
    assert told["text"].startswith("⚠️ Telegram se negó a mostrar un mensaje (")
    assert told["text"].endswith("Bad Request: something odd); está en la computadora: "
                                 "`aipager status`, o en la terminal de la sesión.")
