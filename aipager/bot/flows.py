"""What the chat does for a person, shared by its routers (``bot/routers/``, leaves over
this module that import neither each other nor voice): a message handed to its session
(or kept for a picker), a question answered step by step, a command's result said, the
kill question asked, and what the person's next message will be (``NextMessage``)."""

from __future__ import annotations

import logging
from typing import Any, Sequence

from aiogram.fsm.state import State as FSMState
from aiogram.fsm.state import StatesGroup
from aiogram.types import Message
from aiogram.utils.keyboard import InlineKeyboardBuilder

from aipager.bot.kept import Ask, FormAsk, QuestionAsk
from aipager.bot import view
from aipager.bot.actions import Actions, Sender
from aipager.bot.callbacks import PickTap, SessionAct, SessionTap
from aipager.bot.chatstate import KillStage, RequestRef
from aipager.bot.i18n import N_, _
from aipager.bot.notify import kill_key
from aipager.bot.outbox import Live, Post
from aipager.clients.words import ok as words_ok
from aipager.clients.words import words
from aipager.port.model import Session
from aipager.port import forms
from aipager.port.commands import AnswerForm, CompactSession
from aipager.port.forms import FormAction
from aipager.port.results import Declined, Result
from aipager.port.rights import RIGHTS

log = logging.getLogger("aipager.bot")

EXPIRED = N_("This button has expired.")


class NextMessage(StatesGroup):
    """What a person's next message in the chat is, once the chat asked for it."""

    #: the name of the session ``/new`` starts (``routers.messages.on_session_name``)
    session_name = FSMState()
    #: the answer, in words, to a question (its "Other…" button: ``routers.questions.on_other``)
    answer = FSMState()
    #: the corrected command or path of a request (its ✏️ button: ``routers.requests.on_edit``)
    edit = FSMState()


def _quoted(message: Message) -> tuple[str, float] | None:
    reply = message.reply_to_message
    if reply is not None and (reply.text or reply.caption):
        return (reply.text or reply.caption or ""), float(reply.date.timestamp())
    return None


async def send_text(actions: Actions, message: Message, sender: Sender, text: str,
                    picks: dict) -> None:
    """Route ``text`` (for the message ``message``) and hand it to its session."""
    chat_id = message.chat.id
    head, _sep, rest = text.partition(" ")
    if head.startswith("/") and rest.strip():
        # (``/jim@box``: a host's jim; ``/jim@ourbot``: jim, the bot addressed in a group)
        named = actions.find(head[1:]) or actions.find(head[1:].split("@", 1)[0])
        if named is not None and view.is_live(named):  # a caption "/jim look at this"
            await actions.deliver(named, chat_id, message.message_id, rest.strip(), sender,
                                  _quoted(message))
            return
    reply = message.reply_to_message
    sess = actions.target(chat_id, reply.message_id if reply is not None else None)
    if sess is not None:
        await actions.deliver(sess, chat_id, message.message_id, text, sender, _quoted(message))
        return
    live = actions.live_sessions()
    if not live:
        actions.say(chat_id, _("No session is running. Start one with /new NAME."),
                    reply_to=message.message_id)
        return
    offer_picker(actions, message, text, sender, picks, live, _quoted(message))


#: picker choices waiting for a tap: number → (chat, message id, text, sender, quoted)
PICKS_KEPT = 50


def offer_picker(actions: Actions, message: Message, text: str, sender: Sender, picks: dict,
                 candidates: Sequence[Session], quoted: Any = None) -> None:
    """Keep ``text`` until a tap on one of ``candidates`` says where it goes."""
    chat_id = message.chat.id
    number = max(picks, default=0) + 1
    picks[number] = (chat_id, message.message_id, text, sender, quoted)
    while len(picks) > PICKS_KEPT:
        picks.pop(next(iter(picks)))
    kb = InlineKeyboardBuilder()
    for s in candidates:
        kb.button(text=s.label, callback_data=PickTap(h=actions.state.handle("session", s.name),
                                                      n=number))
    actions.say(chat_id, view.picker_text("send"), markup=view.markup(kb.adjust(1)),
                reply_to=message.message_id)


async def compact(actions: Actions, chat_id: int, sess: Session, sender: Sender) -> None:
    result = await actions.port.ask(CompactSession(sender, sess.name))
    said(actions, chat_id, result, session=sess.name)


def said(actions: Actions, chat_id: int, result: Result, *, session: str = "",
         reply_to: int | None = None) -> None:
    """A command's result in the chat: 🔒 before a refusal about rights."""
    lock = "🔒 " if isinstance(result, Declined) and result.reason in RIGHTS else ""
    actions.say(chat_id, lock + words(result, _), reply_to=reply_to,
                session=session if words_ok(result) else "")


def ask_kill(actions: Actions, chat_id: int, sess: Session) -> None:
    handle = actions.state.handle("session", sess.name)
    kb = InlineKeyboardBuilder()
    kb.button(text=_("🗑 Yes, end it"),
              callback_data=SessionTap(h=handle, act=SessionAct.KILL_YES))
    kb.button(text=_("Cancel"), callback_data=SessionTap(h=handle, act=SessionAct.KILL_NO))
    markup = view.markup(kb)
    text = _("End session {session}? Claude Code and what it started stop.").format(
        session=sess.label)
    key = kill_key(sess.name)
    actions.state.forget_live(key)  # an older question's buttons no longer answer
    actions.state.show(key, text)
    actions.state.kills[sess.name] = KillStage.ASKED
    actions.outbox.put(Post(chat_id, text, markup=markup, key=key))


def model_key(session: str) -> str:
    """The live message of ``/model``'s picker: a tap puts the switch in its place (its
    buttons gone; it said the old model and offered the same buttons again)."""
    return f"model:{session}"


async def record_answer(actions: Actions, rkey: str, ask: QuestionAsk, sender: Sender,
                        answer: dict) -> None:
    """One question answered: the next one is shown, or after the last the keys go in."""
    ask.answers.append(answer)
    ask.step += 1
    ask.toggled = []
    if ask.step < len(ask.questions):
        show_ask(actions, rkey, ask)
        return
    result = await actions.answer_questions(ask, sender)
    if not words_ok(result):
        actions.say(ask.chat, words(result, _, about="question") + " " + _("Nothing was typed."))


def show_ask(actions: Actions, rkey: str, ask: Ask) -> None:
    """A question's or a form's message as it is now (the question or field asked, or the
    whole form to send), in place of the one shown."""
    session = ask.session
    handle = actions.state.handle("ask", RequestRef(session, ask.key))
    text, markup = view.ask_view(session.removeprefix("claude-"), ask, handle)
    actions.state.show(rkey, text)
    actions.outbox.put(Live(ask.chat, text, key=rkey, markup=markup, session=session))


def form_value(actions: Actions, rkey: str, ask: FormAsk, value: Any) -> None:
    """The field asked now takes ``value`` (None: left empty); the next one is asked, or
    after the last the whole form is shown with ✅ Send."""
    field = ask.fields[ask.step]
    if value is None:
        ask.values.pop(field["name"], None)
    else:
        ask.values[field["name"]] = value
    ask.step += 1
    show_ask(actions, rkey, ask)


def restart_form(actions: Actions, rkey: str, ask: FormAsk) -> None:
    """The form asked again from its first field, with nothing filled in."""
    ask.step, ask.values = 0, {}
    show_ask(actions, rkey, ask)


def form_typed(actions: Actions, rkey: str, ask: FormAsk, text: str, reply_to: int) -> None:
    """A typed value for the field asked now: taken, or why not said (the field is asked
    again)."""
    if ask.step >= len(ask.fields):
        actions.say(ask.chat, _("Every field is filled in: tap ✅ Send or ↩️ Start over."),
                    reply_to=reply_to)
        return
    field = forms.Field.from_json(ask.fields[ask.step])
    try:
        value = forms.parse(field, text)
    except forms.FormError as exc:
        actions.say(ask.chat, "🤷 " + str(exc), reply_to=reply_to)
        return
    form_value(actions, rkey, ask, value)


async def answer_form(actions: Actions, ask: FormAsk, sender: Sender,
                      action: FormAction) -> Result:
    """Send the form's values (accept), or decline or cancel it, through the service (which
    checks the values against the form); the verdict line follows its close."""
    return await actions.port.ask(AnswerForm(sender, ask.session, ask.key, action,
                                                dict(ask.values) if action == "accept"
                                                else {}))


