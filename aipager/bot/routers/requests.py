"""Taps on a permission request's buttons: allow (once, always, for a scope), deny
(with a reason, or and stop), edit.  One handler per action (``RequestAct``); the right
is ``approve`` and the service checks the task's author or an admin."""

from __future__ import annotations

import logging

from aiogram import F, Router
from aiogram.fsm.context import FSMContext
from aiogram.types import CallbackQuery
from aiogram.utils.callback_answer import CallbackAnswer

from aipager.bot.actions import Actions, Sender, refusal
from aipager.bot.i18n import N_, _
from aipager.bot.callbacks import SCOPES, RequestAct, RequestTap
from aipager.bot.rights import APPROVE, need
from aipager.bot.flows import EXPIRED, NextMessage
from aipager.clients import asking
from aipager.clients.words import words
from aipager.port.commands import AnswerKind, AnswerRequest
from aipager.port.results import ByHook

log = logging.getLogger("aipager.bot")


# -- permission requests -----------------------------------------------------------


async def _request_tap(query: CallbackQuery, callback_data: RequestTap, actions: Actions,
                       sender: Sender, callback_answer: CallbackAnswer, kind: AnswerKind,
                       done: str) -> None:
    """Answer the request ``callback_data`` names with ``kind`` through the daemon's port
    (the waiting hook, else the dialog's keys; ⏹ also stops the task); ``done``: the toast."""
    ref = actions.state.resolve_request("request", callback_data.h)
    if ref is None:
        callback_answer.text = _(EXPIRED)
        return
    session, key = ref.session, ref.key
    act = callback_data.act
    result = await actions.port.ask(AnswerRequest(
        sender, session, key, kind, suggestion=int(act[1:]) if act in SCOPES else None))
    if isinstance(result, ByHook) and result.scope:
        # what Claude Code was handed to remember, and for how long: not "Always allowed"
        done = asking.granted(result.scope) or done
    callback_answer.text = words(result, _, done)


async def on_allow(query: CallbackQuery, callback_data: RequestTap, actions: Actions,
                   sender: Sender, callback_answer: CallbackAnswer) -> None:
    await _request_tap(query, callback_data, actions, sender, callback_answer, "allow",
                       _("Allowed"))


async def on_always(query: CallbackQuery, callback_data: RequestTap, actions: Actions,
                    sender: Sender, callback_answer: CallbackAnswer) -> None:
    """Allow, remembering every suggestion (the one Always allow)."""
    await _request_tap(query, callback_data, actions, sender, callback_answer, "allow_always",
                       _("Always allowed"))


async def on_scope(query: CallbackQuery, callback_data: RequestTap, actions: Actions,
                   sender: Sender, callback_answer: CallbackAnswer) -> None:
    """Allow, remembering the one suggestion the button names (a rule, a folder, a mode)."""
    await _request_tap(query, callback_data, actions, sender, callback_answer, "allow_always",
                       _("Always allowed"))


async def on_deny(query: CallbackQuery, callback_data: RequestTap, actions: Actions,
                  sender: Sender, callback_answer: CallbackAnswer) -> None:
    await _request_tap(query, callback_data, actions, sender, callback_answer, "deny", _("Denied"))


async def on_deny_and_stop(query: CallbackQuery, callback_data: RequestTap, actions: Actions,
                           sender: Sender, callback_answer: CallbackAnswer) -> None:
    await _request_tap(query, callback_data, actions, sender, callback_answer, "stop",
                       _("Denied and stopped"))

#: what a person corrects, by tool (``daemon.edits.EDIT_FIELDS``)
_EDIT_ASK = {  # (tool, in a group): in a group the bot reads only replies to it
    ("Bash", False): N_("✏️ Send the corrected command; it runs only if the safety policy "
                        "allows it."),
    ("Bash", True): N_("✏️ Reply to this message with the corrected command; it runs only if "
                       "the safety policy allows it."),
    ("WebFetch", False): N_("✏️ Send the corrected URL; it runs only if the safety policy "
                            "allows it."),
    ("WebFetch", True): N_("✏️ Reply to this message with the corrected URL; it runs only if "
                           "the safety policy allows it."),
    ("", False): N_("✏️ Send the corrected path; it runs only if the safety policy allows it."),
    ("", True): N_("✏️ Reply to this message with the corrected path; it runs only if the "
                   "safety policy allows it."),
}


async def on_edit(query: CallbackQuery, callback_data: RequestTap, actions: Actions,
                  sender: Sender, callback_answer: CallbackAnswer, state: FSMContext) -> None:
    """Edit then allow: the tapper's next message in this chat is the corrected command or
    path (``routers.messages.on_edit_text``), allowed once the policy allows it."""
    ref = actions.state.resolve_request("request", callback_data.h)
    if ref is None or query.message is None:
        callback_answer.text = _(EXPIRED)
        return
    session, key = ref.session, ref.key
    sess = actions.registry.get(session)
    why = refusal(sender, "approve", sess)
    if why:
        callback_answer.text = why
        return
    req = next((r for r in sess.requests if r.key == key), None) if sess is not None else None
    if req is None or req.answered:
        callback_answer.text = _("This request is no longer open.")
        return
    group = query.message.chat.id < 0
    ask = _EDIT_ASK.get((req.tool, group)) or _EDIT_ASK[("", group)]
    await state.set_state(NextMessage.edit)
    await state.set_data({"session": session, "key": key})
    actions.say(query.message.chat.id, _(ask), reply_to=query.message.message_id, session=session)


def make_router() -> Router:
    """The requests handlers on a fresh router (a router joins one dispatcher only)."""
    router = Router(name="requests")
    tap = router.callback_query.register
    tap(on_allow, RequestTap.filter(F.act == RequestAct.ALLOW), flags=need(APPROVE))
    tap(on_always, RequestTap.filter(F.act == RequestAct.ALWAYS), flags=need(APPROVE))
    tap(on_scope, RequestTap.filter(F.act.in_(SCOPES)), flags=need(APPROVE))
    tap(on_deny, RequestTap.filter(F.act == RequestAct.DENY), flags=need(APPROVE))
    tap(on_deny_and_stop, RequestTap.filter(F.act == RequestAct.STOP), flags=need(APPROVE))
    tap(on_edit, RequestTap.filter(F.act == RequestAct.EDIT), flags=need(APPROVE))
    return router
