"""Button taps, by feature: permission requests (``requests``), Claude's questions and MCP
forms (``questions``), a session's buttons (``sessions``), /settings (``settings``), a voice
note's (``voice``).

One handler per action (``RequestTap.filter(F.act == RequestAct.ALLOW)`` …); what a
role may tap is the handler's ``rights`` flag (``access.Access.rights``), every one declared,
and a button that does what a command does needs what the command needs
(``rights.like``: /model's picker, /kill's, /resume's, /status's); a tap whose
data no filter takes (an old button, forged data) and one whose handle is unknown act
on nothing and hear "This button has expired."  Every tap is answered once, by aiogram's
``CallbackAnswerMiddleware`` (``access.TapAnswer``): handlers set ``callback_answer.text``.
"""

from __future__ import annotations

import logging

from aiogram import F, Router
from aiogram.types import CallbackQuery
from aiogram.utils.callback_answer import CallbackAnswer

from aipager.bot import voice
from aipager.bot.callbacks import VoiceAct, VoiceTap
from aipager.bot.flows import EXPIRED
from aipager.bot.rights import OPEN, PROMPT, need
from aipager.bot.routers import questions, requests, sessions, settings

log = logging.getLogger("aipager.bot")


async def on_unknown_tap(query: CallbackQuery, callback_answer: CallbackAnswer) -> None:
    """Data no button of this version has (forged, or a button of another version)."""
    callback_answer.text = EXPIRED


def make_router() -> Router:
    """Every tap's router, by feature (each a fresh router: a router joins one dispatcher
    only), then the one that takes what none of them did."""
    router = Router(name="taps")
    voice_taps = Router(name="voice taps")
    tap = voice_taps.callback_query.register
    # a voice note is a prompt (the handlers check the tapper is its speaker)
    tap(voice.on_send, VoiceTap.filter(F.act == VoiceAct.SEND), flags=need(PROMPT))
    tap(voice.on_edit, VoiceTap.filter(F.act == VoiceAct.EDIT), flags=need(PROMPT))
    tap(voice.on_cancel, VoiceTap.filter(F.act == VoiceAct.CANCEL), flags=need(PROMPT))
    unknown = Router(name="unknown taps")
    unknown.callback_query.register(on_unknown_tap, flags=need(OPEN))
    router.include_routers(requests.make_router(), questions.make_router(),
                           sessions.make_router(), settings.make_router(), voice_taps, unknown)
    return router
