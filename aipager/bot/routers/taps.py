"""Button taps: permission answers, questions, session buttons (stop, use, kill, compact,
resume, picker), settings.

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
from aiogram.fsm.context import FSMContext
from aiogram.types import CallbackQuery
from aiogram.utils.callback_answer import CallbackAnswer

from aipager import agents, locales
from aipager.bot import changes, i18n, starting, view, voice
from aipager.bot.actions import Actions, Sender, refusal
from aipager.bot.i18n import N_, _
from aipager.bot.callbacks import (BACK, MENU, SCOPES, FormAct, FormTap, ModelTap, NewTap, PickTap,
                                   QuestionAct, QuestionTap, RequestAct, RequestTap,
                                   SessionAct, SessionTap, Setting, SettingTap, VoiceAct,
                                   VoiceTap)
from aipager.bot.chatstate import STYLES, KillStage
from aipager.bot.outbox import Live
from aipager.bot.rights import APPROVE, MANAGE, OPEN, PROMPT, like, need
from aipager.bot.notify import kill_key
from aipager.bot.flows import (EXPIRED, NextMessage, answer_form, ask_kill, compact,
                               form_value, model_key, record_answer, restart_form, said,
                               show_question)
from aipager.bot.settingsview import settings_view
from aipager.daemon.model import Session
from aipager.clients import asking
from aipager.clients.words import ok as words_ok
from aipager.clients.words import MODE_NAMES, words
from aipager.port.commands import (AnswerKind, AnswerRequest, KillSession, ResumeSession,
                                   StopTask, SwitchModel, TrustFolder)
from aipager.port.forms import FormAction
from aipager.port.results import (ByHook, Ended, Failed, Refused, Resumed, Stopping,
                                  Switching, Trusted)

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
    result = await actions.service.ask(AnswerRequest(
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

# -- questions (AskUserQuestion) -----------------------------------------------------


def _open_question(callback_data: QuestionTap, actions: Actions, sender: Sender,
                   callback_answer: CallbackAnswer) -> tuple[str, dict] | None:
    """The open question a button belongs to, as (request key, ask), if ``sender`` may
    answer it; else None (``callback_answer`` says why)."""
    ref = actions.state.resolve_request("ask", callback_data.h)
    if ref is None:
        callback_answer.text = _(EXPIRED)
        return None
    session, key = ref.session, ref.key
    rkey = f"req:{session}:{key}"
    ask = actions.state.asks.get(rkey)
    if ask is None:
        callback_answer.text = _("This question is no longer open.")
        return None
    # the task's author or an admin: checked here too, before a first pick is recorded
    # (the service checks again when the answers go in)
    why = refusal(sender, "approve", actions.registry.get(session))
    if why:
        callback_answer.text = why
        return None
    return rkey, ask


def _option(callback_data: QuestionTap, ask: dict, callback_answer: CallbackAnswer) -> bool:
    """Whether the button's option exists in the question shown now."""
    if 0 <= callback_data.i < len(ask["questions"][ask["step"]]["options"]):
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
    ask["toggled"] = sorted(set(ask.get("toggled") or []) ^ {callback_data.i})
    show_question(actions, rkey, ask)


async def on_submit(query: CallbackQuery, callback_data: QuestionTap, actions: Actions,
                    sender: Sender, callback_answer: CallbackAnswer) -> None:
    """A multiple-choice question's ticked options: the answer."""
    found = _open_question(callback_data, actions, sender, callback_answer)
    if found is None:
        return
    rkey, ask = found
    await record_answer(actions, rkey, ask, sender,
                        {"picks": list(ask.get("toggled") or []), "text": ""})
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
    q = ask["questions"][ask["step"]]
    actions.say(ask["chat"], _("✍️ Send your answer to “{question}” as your next message.").format(
        question=q['question'][:80]), session=ask["session"])


async def on_decline(query: CallbackQuery, callback_data: QuestionTap, actions: Actions,
                     sender: Sender, callback_answer: CallbackAnswer) -> None:
    found = _open_question(callback_data, actions, sender, callback_answer)
    if found is None:
        return
    result = await actions.answer_questions(found[1], sender, decline=True)
    callback_answer.text = words(result, _, _("Declined."), question=True)


# -- forms (an MCP server's elicitation) ----------------------------------------------------


def _open_form(callback_data: FormTap, actions: Actions, sender: Sender,
               callback_answer: CallbackAnswer) -> tuple[str, dict] | None:
    """The open form a button belongs to, as (its chat key, its state), if ``sender`` may
    answer it; else None (``callback_answer`` says why)."""
    ref = actions.state.resolve_request("ask", callback_data.h)
    rkey = f"req:{ref.session}:{ref.key}" if ref is not None else ""
    ask = actions.state.asks.get(rkey)
    if ref is None or ask is None or not ask.get("form"):
        callback_answer.text = _("This form is no longer open.")
        return None
    # the task's author or an admin, as for a permission request (checked again on send)
    why = refusal(sender, "approve", actions.registry.get(ref.session))
    if why:
        callback_answer.text = why
        return None
    return rkey, ask


def _form_field(callback_data: FormTap, actions: Actions, sender: Sender,
                callback_answer: CallbackAnswer) -> tuple[str, dict, dict] | None:
    """``_open_form``, with the field it asks now; None when it asks none any more (the
    whole form is shown: an older button)."""
    found = _open_form(callback_data, actions, sender, callback_answer)
    if found is None:
        return None
    rkey, ask = found
    if ask["step"] >= len(ask["fields"]):
        callback_answer.text = _(EXPIRED)
        return None
    return rkey, ask, ask["fields"][ask["step"]]


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
    actions.say(ask["chat"], _("✍️ Send “{field}” as your next message.").format(
        field=title[:80]), session=ask["session"])


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
    if action == "accept" and ask["step"] < len(ask["fields"]):
        callback_answer.text = _(EXPIRED)
        return
    result = await answer_form(actions, ask, sender, action)
    if isinstance(result, Refused):
        # a value the form does not take after all: said, and asked again from the start
        actions.say(ask["chat"], "🤷 " + result.reason, session=ask["session"])
        restart_form(actions, rkey, ask)
    callback_answer.text = words(result, _, done)


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


# -- session buttons -------------------------------------------------------------------


def _tapped(query: CallbackQuery, handle: int, actions: Actions,
            callback_answer: CallbackAnswer) -> tuple[Session, int] | None:
    """The session a button names and the chat it was tapped in; None when the button
    expired (``callback_answer`` says so)."""
    name = actions.state.resolve("session", handle)
    sess = actions.registry.get(name) if name else None
    chat_id = query.message.chat.id if query.message is not None else 0
    if sess is None or not chat_id:
        callback_answer.text = _(EXPIRED)
        return None
    return sess, chat_id


def _running(query: CallbackQuery, handle: int, actions: Actions,
             callback_answer: CallbackAnswer) -> tuple[Session, int] | None:
    """As ``_tapped``, for buttons that need the session running."""
    found = _tapped(query, handle, actions, callback_answer)
    if found is not None and not view.is_live(found[0]):
        callback_answer.text = _("{session} is not running.").format(session=found[0].label)
        return None
    return found


async def on_stop(query: CallbackQuery, callback_data: SessionTap, actions: Actions,
                  sender: Sender, callback_answer: CallbackAnswer) -> None:
    """The card's ⏹ Stop (its task's author or an admin)."""
    found = _tapped(query, callback_data.h, actions, callback_answer)
    if found is None:
        return
    sess, chat_id = found
    result = await actions.service.ask(StopTask(sender, sess.name))
    match result:
        case Stopping():  # the toast and the card say it: no message under them
            callback_answer.text = _("Stopping…")
        case Failed():
            callback_answer.text = words(result, _)
            actions.say(chat_id, words(result, _))
        case _:
            callback_answer.text = words(result, _)


async def on_use(query: CallbackQuery, callback_data: SessionTap, actions: Actions,
                 callback_answer: CallbackAnswer) -> None:
    """/status: plain messages go to this session now."""
    found = _running(query, callback_data.h, actions, callback_answer)
    if found is None:
        return
    sess, chat_id = found
    actions.state.current[str(chat_id)] = sess.name
    callback_answer.text = _("Messages go to {session} now.").format(session=sess.label)
    actions.say(chat_id, _("Your messages go to {session} now.").format(session=sess.label),
                session=sess.name)


async def on_kill(query: CallbackQuery, callback_data: SessionTap, actions: Actions,
                  callback_answer: CallbackAnswer) -> None:
    """/kill's picker: ask whether to end it."""
    found = _running(query, callback_data.h, actions, callback_answer)
    if found is None:
        return
    ask_kill(actions, found[1], found[0])


async def _kill_answer(query: CallbackQuery, handle: int, actions: Actions,
                       callback_answer: CallbackAnswer) -> tuple[Session, int, str] | None:
    """The session of an open "End session?" question, taken (a second tap, even one
    racing the first, finds it answered); None when it is not open."""
    found = _running(query, handle, actions, callback_answer)
    if found is None:
        return None
    sess, chat_id = found
    key = kill_key(sess.name)
    msg_id = query.message.message_id if query.message is not None else None
    if (actions.state.live_id(key, chat_id) != msg_id
            or actions.state.kills.get(sess.name) != KillStage.ASKED):
        callback_answer.text = _("Already answered.")
        return None
    actions.state.kills[sess.name] = KillStage.TAKEN
    return sess, chat_id, key


def _kill_outcome(actions: Actions, chat_id: int, key: str, outcome: str) -> None:
    """The answer replaces the question (and its buttons)."""
    actions.state.show(key, outcome)
    actions.outbox.put(Live(chat_id, outcome, key=key))


async def on_kill_yes(query: CallbackQuery, callback_data: SessionTap, actions: Actions,
                      sender: Sender, callback_answer: CallbackAnswer) -> None:
    found = await _kill_answer(query, callback_data.h, actions, callback_answer)
    if found is None:
        return
    sess, chat_id, key = found
    callback_answer.text = _("Ending {session}…").format(session=sess.label)
    # The session's end notice (Claude Code's SessionEnd, or its socket gone) would say
    # "Session ended" under "ended by @who": the stage tells ``notify`` the question says it.
    actions.state.kills[sess.name] = KillStage.BY_CHAT
    result = await actions.service.ask(KillSession(sender, sess.name))
    ended = isinstance(result, Ended) and result.ended
    # still marked: the notice has not come yet, and the outcome keeps the mark for it
    if not ended and actions.state.kills.get(sess.name) == KillStage.BY_CHAT:
        del actions.state.kills[sess.name]
    _kill_outcome(actions, chat_id, key, _("🗑 {session} ended by {who}.").format(
        session=sess.label, who=sender.tag) if ended else words(result, _))


async def on_kill_no(query: CallbackQuery, callback_data: SessionTap, actions: Actions,
                     sender: Sender, callback_answer: CallbackAnswer) -> None:
    found = await _kill_answer(query, callback_data.h, actions, callback_answer)
    if found is None:
        return
    sess, chat_id, key = found
    actions.state.kills.pop(sess.name, None)
    callback_answer.text = _("Kept running.")
    _kill_outcome(actions, chat_id, key, _("{session} kept running (cancelled by {who}).").format(
        session=sess.label, who=sender.tag))


async def on_compact(query: CallbackQuery, callback_data: SessionTap, actions: Actions,
                     sender: Sender, callback_answer: CallbackAnswer) -> None:
    """A context warning's "Compact now"."""
    found = _running(query, callback_data.h, actions, callback_answer)
    if found is not None:
        await compact(actions, found[1], found[0], sender)


async def on_diff(query: CallbackQuery, callback_data: SessionTap, actions: Actions,
                  sender: Sender, callback_answer: CallbackAnswer) -> None:
    """/diff's picker."""
    found = _running(query, callback_data.h, actions, callback_answer)
    if found is not None:
        await changes.show(actions, found[1], None, sender, found[0])


async def on_resume(query: CallbackQuery, callback_data: SessionTap, actions: Actions,
                    sender: Sender, callback_answer: CallbackAnswer) -> None:
    """/resume's picker: the ended session starts again with its conversation."""
    found = _tapped(query, callback_data.h, actions, callback_answer)
    if found is None:
        return
    sess, chat_id = found
    result = await actions.service.ask(ResumeSession(sender, sess.name))
    if isinstance(result, Resumed):
        actions.state.current[str(chat_id)] = result.session
    said(actions, chat_id, result, session=sess.name)


async def on_new_folder(query: CallbackQuery, callback_data: NewTap, actions: Actions,
                        sender: Sender, callback_answer: CallbackAnswer) -> None:
    """/new's folder offer: the session starts in the folder tapped (once: the offer goes)."""
    chat_id = query.message.chat.id if query.message is not None else 0
    offer = starting.Offer.load(actions.state.resolve("new", callback_data.h))
    if offer is None or not chat_id or not 0 <= callback_data.i < len(offer.folders):
        callback_answer.text = _(EXPIRED)
        return
    actions.state.handles.pop(str(callback_data.h), None)  # a second tap starts nothing
    folder = offer.folders[callback_data.i]
    callback_answer.text = _("Starting {name}…").format(name=offer.name)
    actions.outbox.put(Live(chat_id, _("📁 {name}: {folder}").format(
        name=offer.name, folder=folder), key=starting.offer_key(callback_data.h)))
    await starting.start(actions, chat_id, offer.msg_id, sender, offer.name, offer.first,
                         folder)


async def _trust(query: CallbackQuery, callback_data: SessionTap, actions: Actions,
                 sender: Sender, callback_answer: CallbackAnswer, yes: bool) -> None:
    """Claude Code's folder trust dialog, answered from the chat (``TrustFolder``): only by
    the question of the session's current start (an older one answers nothing)."""
    key = actions.state.resolve("trust", callback_data.h)
    name = starting.trust_session(key) if key else ""
    sess = actions.registry.get(name) if name else None
    chat_id = query.message.chat.id if query.message is not None else 0
    if key is None or sess is None or not chat_id:
        callback_answer.text = _(EXPIRED)
        return
    if actions.state.trusting.get(name) != key:
        callback_answer.text = _("This question was for an earlier {session}.").format(
            session=sess.label)
        actions.outbox.put(Live(chat_id, _("📁 This question was for an earlier {session}.")
                                .format(session=sess.label), key=key))
        return
    if not yes:  # "No" ends the session: the question says so, not a second notice too
        actions.state.kills[sess.name] = KillStage.BY_CHAT
    result = await actions.service.ask(TrustFolder(sender, sess.name, yes))
    if not yes and not (isinstance(result, Ended) and result.ended) \
            and actions.state.kills.get(sess.name) == KillStage.BY_CHAT:
        del actions.state.kills[sess.name]
    said = words(result, _)
    if isinstance(result, Trusted) and actions.privacy().on:  # the folder's name is content
        said = _("📁 {session} may use its folder.").format(session=sess.label)
    callback_answer.text = said
    if words_ok(result):  # the question goes; its answer stays in its place
        actions.state.trusting.pop(name, None)
        actions.outbox.put(Live(chat_id, said, key=key))


async def on_trust(query: CallbackQuery, callback_data: SessionTap, actions: Actions,
                   sender: Sender, callback_answer: CallbackAnswer) -> None:
    await _trust(query, callback_data, actions, sender, callback_answer, True)


async def on_trust_no(query: CallbackQuery, callback_data: SessionTap, actions: Actions,
                      sender: Sender, callback_answer: CallbackAnswer) -> None:
    await _trust(query, callback_data, actions, sender, callback_answer, False)


async def on_pick_session(query: CallbackQuery, callback_data: PickTap, actions: Actions,
                          picks: dict, callback_answer: CallbackAnswer) -> None:
    """A picker's session: the message waiting for it goes there (and the next ones)."""
    found = _running(query, callback_data.h, actions, callback_answer)
    if found is None:
        return
    sess = found[0]
    pick = picks.pop(callback_data.n, None)
    if pick is None:
        callback_answer.text = _(EXPIRED)
        return
    p_chat, msg_id, text, who, quoted = pick
    actions.state.current[str(p_chat)] = sess.name  # picked once: the next ones go there too
    callback_answer.text = _("Sent to {session}.").format(session=sess.label)
    await actions.deliver(sess, p_chat, msg_id, text, who, quoted)

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
    result = await actions.service.ask(SwitchModel(sender, sess.name, model))
    if not isinstance(result, Switching):
        callback_answer.text = words(result, _)
        return
    callback_answer.text = _("{session}: switching to {model}").format(session=sess.label,
                                                                       model=model)
    key, picker = model_key(sess.name), query.message
    if picker is not None and actions.state.live_id(key, picker.chat.id) == picker.message_id:
        actions.outbox.put(Live(picker.chat.id, _("🧠 {session}: switching to {model}.").format(
            session=sess.label, model=model), key=key))


async def on_unknown_tap(query: CallbackQuery, callback_answer: CallbackAnswer) -> None:
    """Data no button of this version has (forged, or a button of another version)."""
    callback_answer.text = EXPIRED


def make_router() -> Router:
    """The taps handlers on a fresh router (a router joins one dispatcher only)."""
    router = Router(name="taps")
    tap = router.callback_query.register
    # a permission request's and a question's buttons: the role answers requests (the
    # handlers check it is the task's author or an admin)
    tap(on_allow, RequestTap.filter(F.act == RequestAct.ALLOW), flags=need(APPROVE))
    tap(on_always, RequestTap.filter(F.act == RequestAct.ALWAYS), flags=need(APPROVE))
    tap(on_scope, RequestTap.filter(F.act.in_(SCOPES)), flags=need(APPROVE))
    tap(on_deny, RequestTap.filter(F.act == RequestAct.DENY), flags=need(APPROVE))
    tap(on_deny_and_stop, RequestTap.filter(F.act == RequestAct.STOP), flags=need(APPROVE))
    tap(on_edit, RequestTap.filter(F.act == RequestAct.EDIT), flags=need(APPROVE))
    tap(on_pick, QuestionTap.filter(F.act == QuestionAct.PICK), flags=need(APPROVE))
    tap(on_toggle, QuestionTap.filter(F.act == QuestionAct.TOGGLE), flags=need(APPROVE))
    tap(on_submit, QuestionTap.filter(F.act == QuestionAct.SUBMIT), flags=need(APPROVE))
    tap(on_other, QuestionTap.filter(F.act == QuestionAct.OTHER), flags=need(APPROVE))
    tap(on_decline, QuestionTap.filter(F.act == QuestionAct.DECLINE), flags=need(APPROVE))
    # an MCP server's form: the same right as a permission request
    tap(on_form_pick, FormTap.filter(F.act == FormAct.PICK), flags=need(APPROVE))
    tap(on_form_skip, FormTap.filter(F.act == FormAct.SKIP), flags=need(APPROVE))
    tap(on_form_type, FormTap.filter(F.act == FormAct.TYPE), flags=need(APPROVE))
    tap(on_form_restart, FormTap.filter(F.act == FormAct.RESTART), flags=need(APPROVE))
    tap(on_form_send, FormTap.filter(F.act == FormAct.SEND), flags=need(APPROVE))
    tap(on_form_decline, FormTap.filter(F.act == FormAct.DECLINE), flags=need(APPROVE))
    tap(on_form_cancel, FormTap.filter(F.act == FormAct.CANCEL), flags=need(APPROVE))
    # a session's buttons do what a command does: they need what it needs
    tap(on_stop, SessionTap.filter(F.act == SessionAct.STOP), flags=like("stop"))
    tap(on_use, SessionTap.filter(F.act == SessionAct.USE), flags=like("session"))
    tap(on_kill, SessionTap.filter(F.act == SessionAct.KILL), flags=like("kill"))
    tap(on_kill_yes, SessionTap.filter(F.act == SessionAct.KILL_YES), flags=like("kill"))
    tap(on_kill_no, SessionTap.filter(F.act == SessionAct.KILL_NO), flags=like("kill"))
    tap(on_compact, SessionTap.filter(F.act == SessionAct.COMPACT), flags=like("compact"))
    tap(on_diff, SessionTap.filter(F.act == SessionAct.DIFF), flags=like("diff"))
    tap(on_resume, SessionTap.filter(F.act == SessionAct.RESUME), flags=like("resume"))
    tap(on_pick_session, PickTap.filter(), flags=like("session"))
    # where /new starts a session, and the folder trust dialog of one it started
    tap(on_new_folder, NewTap.filter(), flags=like("new"))
    tap(on_trust, SessionTap.filter(F.act == SessionAct.TRUST), flags=like("new"))
    tap(on_trust_no, SessionTap.filter(F.act == SessionAct.TRUST_NO), flags=like("new"))
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
    # a voice note is a prompt (the handlers check the tapper is its speaker)
    tap(voice.on_send, VoiceTap.filter(F.act == VoiceAct.SEND), flags=need(PROMPT))
    tap(voice.on_edit, VoiceTap.filter(F.act == VoiceAct.EDIT), flags=need(PROMPT))
    tap(voice.on_cancel, VoiceTap.filter(F.act == VoiceAct.CANCEL), flags=need(PROMPT))
    tap(on_unknown_tap, flags=need(OPEN))
    return router
