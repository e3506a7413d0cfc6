"""Taps that answer Claude's questions (AskUserQuestion) and an MCP server's forms
(elicitation), a field at a time: the same right as a permission request."""

from __future__ import annotations

from typing import Any

import logging

from aiogram import F, Router
from aiogram.fsm.context import FSMContext
from aiogram.types import CallbackQuery
from aiogram.utils.callback_answer import CallbackAnswer

from aipager.bot.kept import FormAsk, QuestionAsk
from aipager.bot.actions import Actions, Sender, refusal
from aipager.bot.i18n import _
from aipager.bot.callbacks import FormAct, FormTap, QuestionAct, QuestionTap
from aipager.bot.rights import APPROVE, need
from aipager.bot.flows import (EXPIRED, NextMessage, answer_form, form_value, record_answer,
                               restart_form, show_ask)
from aipager.clients.words import words
from aipager.port.forms import FormAction
from aipager.port.results import Refused

log = logging.getLogger("aipager.bot")


# -- questions (AskUserQuestion) -----------------------------------------------------


def _open_question(callback_data: QuestionTap, actions: Actions, sender: Sender,
                   callback_answer: CallbackAnswer) -> tuple[str, QuestionAsk] | None:
    """The open question a button belongs to, as (request key, ask), if ``sender`` may
    answer it; else None (``callback_answer`` says why)."""
    ref = actions.state.resolve_request("ask", callback_data.h)
    if ref is None:
        callback_answer.text = _(EXPIRED)
        return None
    session, key = ref.session, ref.key
    rkey = f"req:{session}:{key}"
    ask = actions.state.asks.get(rkey)
    if not isinstance(ask, QuestionAsk):
        callback_answer.text = _("This question is no longer open.")
        return None
    # the task's author or an admin: checked here too, before a first pick is recorded
    # (the service checks again when the answers go in)
    why = refusal(sender, "approve", actions.registry.get(session))
    if why:
        callback_answer.text = why
        return None
    return rkey, ask


def _option(callback_data: QuestionTap, ask: QuestionAsk, callback_answer: CallbackAnswer) -> bool:
    """Whether the button's option exists in the question shown now."""
    if 0 <= callback_data.i < len(ask.questions[ask.step]["options"]):
        return True
    callback_answer.text = EXPIRED
    return False


async def on_pick(query: CallbackQuery, callback_data: QuestionTap, actions: Actions,
                  sender: Sender, callback_answer: CallbackAnswer) -> None:
    """A single-choice question's option: the answer."""
    found = _open_question(callback_data, actions, sender, callback_answer)
    if found is None or not _option(callback_data, found[1], callback_answer):
        return
    await record_answer(actions, *found, sender, {"picks": [callback_data.i], "text": ""})
    callback_answer.text = _("Answered.")


async def on_toggle(query: CallbackQuery, callback_data: QuestionTap, actions: Actions,
                    sender: Sender, callback_answer: CallbackAnswer) -> None:
    """A multiple-choice question's option: ticked or unticked."""
    found = _open_question(callback_data, actions, sender, callback_answer)
    if found is None or not _option(callback_data, found[1], callback_answer):
        return
    rkey, ask = found
    ask.toggled = sorted(set(ask.toggled) ^ {callback_data.i})
    show_ask(actions, rkey, ask)


async def on_submit(query: CallbackQuery, callback_data: QuestionTap, actions: Actions,
                    sender: Sender, callback_answer: CallbackAnswer) -> None:
    """A multiple-choice question's ticked options: the answer."""
    found = _open_question(callback_data, actions, sender, callback_answer)
    if found is None:
        return
    rkey, ask = found
    await record_answer(actions, rkey, ask, sender,
                        {"picks": list(ask.toggled), "text": ""})
    callback_answer.text = _("Answered.")


async def on_other(query: CallbackQuery, callback_data: QuestionTap, actions: Actions,
                   sender: Sender, callback_answer: CallbackAnswer, state: FSMContext) -> None:
    """Answer in words: the tapper's next message in this chat is the answer
    (``routers.messages.on_answer_in_words``)."""
    found = _open_question(callback_data, actions, sender, callback_answer)
    if found is None:
        return
    rkey, ask = found
    await state.set_state(NextMessage.answer)
    await state.set_data({"rkey": rkey})
    q = ask.questions[ask.step]
    actions.say(ask.chat, _("✍️ Send your answer to “{question}” as your next message.").format(
        question=q['question'][:80]), session=ask.session)


async def on_decline(query: CallbackQuery, callback_data: QuestionTap, actions: Actions,
                     sender: Sender, callback_answer: CallbackAnswer) -> None:
    found = _open_question(callback_data, actions, sender, callback_answer)
    if found is None:
        return
    result = await actions.answer_questions(found[1], sender, decline=True)
    callback_answer.text = words(result, _, _("Declined."), about="question")


# -- forms (an MCP server's elicitation) ----------------------------------------------------


def _open_form(callback_data: FormTap, actions: Actions, sender: Sender,
               callback_answer: CallbackAnswer) -> tuple[str, FormAsk] | None:
    """The open form a button belongs to, as (its chat key, its state), if ``sender`` may
    answer it; else None (``callback_answer`` says why)."""
    ref = actions.state.resolve_request("ask", callback_data.h)
    rkey = f"req:{ref.session}:{ref.key}" if ref is not None else ""
    ask = actions.state.asks.get(rkey)
    if ref is None or not isinstance(ask, FormAsk):
        callback_answer.text = _("This form is no longer open.")
        return None
    # the task's author or an admin, as for a permission request (checked again on send)
    why = refusal(sender, "approve", actions.registry.get(ref.session))
    if why:
        callback_answer.text = why
        return None
    return rkey, ask


def _form_field(callback_data: FormTap, actions: Actions, sender: Sender,
                callback_answer: CallbackAnswer) -> tuple[str, FormAsk, dict[str, Any]] | None:
    """``_open_form``, with the field it asks now; None when it asks none any more (the
    whole form is shown: an older button)."""
    found = _open_form(callback_data, actions, sender, callback_answer)
    if found is None:
        return None
    rkey, ask = found
    if ask.step >= len(ask.fields):
        callback_answer.text = _(EXPIRED)
        return None
    return rkey, ask, ask.fields[ask.step]


async def on_form_pick(query: CallbackQuery, callback_data: FormTap, actions: Actions,
                       sender: Sender, callback_answer: CallbackAnswer) -> None:
    """A choice's option, or yes (1) / no (0), for the field asked now."""
    found = _form_field(callback_data, actions, sender, callback_answer)
    if found is None:
        return
    rkey, ask, field = found
    if field["kind"] not in ("enum", "boolean"):
        callback_answer.text = _(EXPIRED)
        return
    if field["kind"] == "boolean":
        value: object = callback_data.i == 1
    elif 0 <= callback_data.i < len(field.get("options") or ()):
        value = field["options"][callback_data.i]
    else:
        callback_answer.text = _(EXPIRED)
        return
    form_value(actions, rkey, ask, value)


async def on_form_skip(query: CallbackQuery, callback_data: FormTap, actions: Actions,
                       sender: Sender, callback_answer: CallbackAnswer) -> None:
    found = _form_field(callback_data, actions, sender, callback_answer)
    if found is None:
        return
    rkey, ask, field = found
    if field.get("required"):
        callback_answer.text = _(EXPIRED)
        return
    form_value(actions, rkey, ask, None)


async def on_form_type(query: CallbackQuery, callback_data: FormTap, actions: Actions,
                       sender: Sender, callback_answer: CallbackAnswer,
                       state: FSMContext) -> None:
    """The tapper's next message in this chat is the value of the field asked now
    (``routers.messages.on_answer_in_words``)."""
    found = _form_field(callback_data, actions, sender, callback_answer)
    if found is None:
        return
    rkey, ask, field = found
    await state.set_state(NextMessage.answer)
    await state.set_data({"rkey": rkey})
    title = field.get("title", "")
    actions.say(ask.chat, _("✍️ Send “{field}” as your next message.").format(
        field=title[:80]), session=ask.session)


async def on_form_restart(query: CallbackQuery, callback_data: FormTap, actions: Actions,
                          sender: Sender, callback_answer: CallbackAnswer) -> None:
    found = _open_form(callback_data, actions, sender, callback_answer)
    if found is None:
        return
    restart_form(actions, *found)


async def _form_answer(callback_data: FormTap, actions: Actions, sender: Sender,
                       callback_answer: CallbackAnswer, action: FormAction, done: str) -> None:
    found = _open_form(callback_data, actions, sender, callback_answer)
    if found is None:
        return
    rkey, ask = found
    if action == "accept" and ask.step < len(ask.fields):
        callback_answer.text = _(EXPIRED)
        return
    result = await answer_form(actions, ask, sender, action)
    if isinstance(result, Refused):
        # a value the form does not take after all: said, and asked again from the start
        actions.say(ask.chat, "🤷 " + result.reason, session=ask.session)
        restart_form(actions, rkey, ask)
    callback_answer.text = words(result, _, done, about="form")


async def on_form_send(query: CallbackQuery, callback_data: FormTap, actions: Actions,
                       sender: Sender, callback_answer: CallbackAnswer) -> None:
    await _form_answer(callback_data, actions, sender, callback_answer, "accept", _("Sent."))


async def on_form_decline(query: CallbackQuery, callback_data: FormTap, actions: Actions,
                          sender: Sender, callback_answer: CallbackAnswer) -> None:
    await _form_answer(callback_data, actions, sender, callback_answer, "decline",
                       _("Declined."))


async def on_form_cancel(query: CallbackQuery, callback_data: FormTap, actions: Actions,
                         sender: Sender, callback_answer: CallbackAnswer) -> None:
    await _form_answer(callback_data, actions, sender, callback_answer, "cancel",
                       _("Cancelled."))


def make_router() -> Router:
    """The questions handlers on a fresh router (a router joins one dispatcher only)."""
    router = Router(name="questions")
    tap = router.callback_query.register
    tap(on_pick, QuestionTap.filter(F.act == QuestionAct.PICK), flags=need(APPROVE))
    tap(on_toggle, QuestionTap.filter(F.act == QuestionAct.TOGGLE), flags=need(APPROVE))
    tap(on_submit, QuestionTap.filter(F.act == QuestionAct.SUBMIT), flags=need(APPROVE))
    tap(on_other, QuestionTap.filter(F.act == QuestionAct.OTHER), flags=need(APPROVE))
    tap(on_decline, QuestionTap.filter(F.act == QuestionAct.DECLINE), flags=need(APPROVE))
    tap(on_form_pick, FormTap.filter(F.act == FormAct.PICK), flags=need(APPROVE))
    tap(on_form_skip, FormTap.filter(F.act == FormAct.SKIP), flags=need(APPROVE))
    tap(on_form_type, FormTap.filter(F.act == FormAct.TYPE), flags=need(APPROVE))
    tap(on_form_restart, FormTap.filter(F.act == FormAct.RESTART), flags=need(APPROVE))
    tap(on_form_send, FormTap.filter(F.act == FormAct.SEND), flags=need(APPROVE))
    tap(on_form_decline, FormTap.filter(F.act == FormAct.DECLINE), flags=need(APPROVE))
    tap(on_form_cancel, FormTap.filter(F.act == FormAct.CANCEL), flags=need(APPROVE))
    return router
