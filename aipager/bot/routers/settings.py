"""Taps on /settings (a private chat's are its person's, a group's its admins') and on
/model's picker (what /model needs)."""

from __future__ import annotations

import logging

from aiogram import F, Router
from aiogram.types import CallbackQuery
from aiogram.utils.callback_answer import CallbackAnswer

from aipager import agents, locales
from aipager.bot import i18n, view
from aipager.bot.actions import Actions, Sender
from aipager.bot.i18n import _
from aipager.bot.callbacks import BACK, MENU, ModelTap, Setting, SettingTap
from aipager.bot.chatstate import STYLES
from aipager.bot.outbox import Live
from aipager.bot.rights import MANAGE, OPEN, like, need
from aipager.bot.flows import EXPIRED, model_key
from aipager.bot.settingsview import settings_view
from aipager.clients.words import MODE_NAMES, words
from aipager.port.commands import SwitchModel
from aipager.port.results import Switching

log = logging.getLogger("aipager.bot")


# -- settings -----------------------------------------------------------------------


async def _save_setting(query: CallbackQuery, actions: Actions, name: str, value: object,
                        callback_answer: CallbackAnswer, menu: Setting | None = None,
                        saved: bool = True) -> None:
    """Save ``name`` (none: saved elsewhere, or nothing to save) and show the settings
    again, or ``menu``'s choices; ``saved``: the toast says so."""
    if query.message is None:
        callback_answer.text = _(EXPIRED)
        return
    chat_id = query.message.chat.id
    if name:
        actions.state.set_pref(chat_id, name, value)
    if saved:
        callback_answer.text = _("Saved.")
    uid = str(query.from_user.id)
    text, markup = settings_view(actions, chat_id, query.from_user.id,
                                 actions.state.langs.get(uid, ""), menu)
    key = f"settings:{chat_id}:{query.message.message_id}"
    actions.state.set_live(key, chat_id, query.message.message_id)
    actions.outbox.put(Live(chat_id, text, key=key, markup=markup))


async def _browsed(query: CallbackQuery, callback_data: SettingTap, actions: Actions,
                   callback_answer: CallbackAnswer) -> bool:
    """A setting's › (its choices shown) or its ‹ Back (the settings again): nothing
    chosen yet.  Whether the tap was one of those."""
    if callback_data.value == MENU:
        await _save_setting(query, actions, "", None, callback_answer, callback_data.name,
                            saved=False)
    elif callback_data.value == BACK:
        await _save_setting(query, actions, "", None, callback_answer, saved=False)
    else:
        return False
    return True


async def on_mode(query: CallbackQuery, callback_data: SettingTap, actions: Actions,
                  callback_answer: CallbackAnswer) -> None:
    """The mode /new starts sessions in."""
    if await _browsed(query, callback_data, actions, callback_answer):
        return
    value = "" if callback_data.value == "claude" else callback_data.value
    if value not in {m.value for m in MODE_NAMES}:
        callback_answer.text = _(EXPIRED)
        return
    await _save_setting(query, actions, "mode", value, callback_answer)


async def on_agent(query: CallbackQuery, callback_data: SettingTap, actions: Actions,
                   callback_answer: CallbackAnswer) -> None:
    """The coding agent /new starts."""
    if await _browsed(query, callback_data, actions, callback_answer):
        return
    if callback_data.value not in agents.AGENTS:
        callback_answer.text = _(EXPIRED)
        return
    await _save_setting(query, actions, "agent", callback_data.value, callback_answer)


async def on_style(query: CallbackQuery, callback_data: SettingTap, actions: Actions,
                   callback_answer: CallbackAnswer) -> None:
    if await _browsed(query, callback_data, actions, callback_answer):
        return
    value = callback_data.value
    if value not in STYLES and value != "own":
        callback_answer.text = _(EXPIRED)
        return
    await _save_setting(query, actions, "style", "" if value == "own" else value,
                        callback_answer)


async def on_switch(query: CallbackQuery, callback_data: SettingTap, actions: Actions,
                    callback_answer: CallbackAnswer) -> None:
    """An on/off setting (diff previews, quiet at the computer, voice notes at once): its name
    is the pref's."""
    if callback_data.value not in ("on", "off"):
        callback_answer.text = _(EXPIRED)
        return
    await _save_setting(query, actions, str(callback_data.name), callback_data.value == "on",
                        callback_answer)


async def on_detail(query: CallbackQuery, callback_data: SettingTap, actions: Actions,
                    callback_answer: CallbackAnswer) -> None:
    if callback_data.value not in ("full", "compact"):
        callback_answer.text = _(EXPIRED)
        return
    await _save_setting(query, actions, "detail", callback_data.value, callback_answer)


async def on_language(query: CallbackQuery, callback_data: SettingTap, actions: Actions,
                      callback_answer: CallbackAnswer) -> None:
    """The tapper's own language (any member's, in a group too): the toast and the settings
    are shown in it at once, and what the chat says on its own follows it."""
    value = callback_data.value
    if value != "auto" and value not in locales.LOCALES:
        callback_answer.text = _(EXPIRED)
        return
    uid = str(query.from_user.id)
    if value == "auto":
        actions.state.langs.pop(uid, None)
    else:
        actions.state.langs[uid] = value
    locale = i18n.person_locale(actions.state, query.from_user)
    if query.message is not None:
        # the person who last spoke in the chat speaks this language now
        actions.state.chat_langs[str(query.message.chat.id)] = locale
    with i18n.use(locale):
        await _save_setting(query, actions, "", None, callback_answer)


async def on_model_tap(query: CallbackQuery, callback_data: ModelTap, actions: Actions,
                       sender: Sender, callback_answer: CallbackAnswer) -> None:
    name = actions.state.resolve("session", callback_data.h)
    sess = actions.registry.get(name) if name else None
    if sess is None or not view.is_live(sess):
        callback_answer.text = _(EXPIRED)
        return
    model = str(callback_data.model)
    result = await actions.port.ask(SwitchModel(sender, sess.name, model))
    if not isinstance(result, Switching):
        callback_answer.text = words(result, _)
        return
    callback_answer.text = _("{session}: switching to {model}").format(session=sess.label,
                                                                       model=model)
    key, picker = model_key(sess.name), query.message
    if picker is not None and actions.state.live_id(key, picker.chat.id) == picker.message_id:
        actions.outbox.put(Live(picker.chat.id, _("🧠 {session}: switching to {model}.").format(
            session=sess.label, model=model), key=key))


def make_router() -> Router:
    """The settings handlers on a fresh router (a router joins one dispatcher only)."""
    router = Router(name="settings")
    tap = router.callback_query.register
    tap(on_model_tap, ModelTap.filter(), flags=like("model"))
    tap(on_language, SettingTap.filter(F.name == Setting.LANGUAGE), flags=need(OPEN))  # one's own
    for handler, setting in ((on_style, Setting.STYLE), (on_switch, Setting.DIFFS),
                             (on_detail, Setting.DETAIL), (on_switch, Setting.QUIET),
                             (on_switch, Setting.VOICE_NOW), (on_mode, Setting.MODE),
                             (on_agent, Setting.AGENT)):
        # a group's settings are the admins' to change; a private chat's, its person's
        tap(handler, SettingTap.filter(F.name == setting), F.message.chat.id < 0,
            flags=need(MANAGE))
        tap(handler, SettingTap.filter(F.name == setting), flags=need(OPEN))
    return router
