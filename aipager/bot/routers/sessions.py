"""Taps on a session's buttons (stop, use, end, compact, changes, resume, the pickers,
/new's folders, the folder trust question): each needs what the command it repeats needs
(``rights.like``)."""

from __future__ import annotations

import logging

from aiogram import F, Router
from aiogram.types import CallbackQuery
from aiogram.utils.callback_answer import CallbackAnswer

from aipager.bot import changes, starting, view
from aipager.bot.actions import Actions, Sender
from aipager.bot.i18n import _
from aipager.bot.callbacks import NewTap, PickTap, SessionAct, SessionTap
from aipager.bot.chatstate import KillStage
from aipager.bot.outbox import Live
from aipager.bot.rights import like
from aipager.bot.notify import kill_key
from aipager.bot.flows import EXPIRED, ask_kill, compact, said
from aipager.port.model import Session
from aipager.clients.words import ok as words_ok
from aipager.clients.words import words
from aipager.port.commands import KillSession, ResumeSession, StopTask, TrustFolder
from aipager.port.results import Ended, Failed, Resumed, Stopping, Trusted

log = logging.getLogger("aipager.bot")


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
    result = await actions.port.ask(StopTask(sender, sess.name))
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
    result = await actions.port.ask(KillSession(sender, sess.name))
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
    result = await actions.port.ask(ResumeSession(sender, sess.name))
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
    result = await actions.port.ask(TrustFolder(sender, sess.name, yes))
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


def make_router() -> Router:
    """The sessions handlers on a fresh router (a router joins one dispatcher only)."""
    router = Router(name="sessions")
    tap = router.callback_query.register
    tap(on_stop, SessionTap.filter(F.act == SessionAct.STOP), flags=like("stop"))
    tap(on_use, SessionTap.filter(F.act == SessionAct.USE), flags=like("session"))
    tap(on_kill, SessionTap.filter(F.act == SessionAct.KILL), flags=like("kill"))
    tap(on_kill_yes, SessionTap.filter(F.act == SessionAct.KILL_YES), flags=like("kill"))
    tap(on_kill_no, SessionTap.filter(F.act == SessionAct.KILL_NO), flags=like("kill"))
    tap(on_compact, SessionTap.filter(F.act == SessionAct.COMPACT), flags=like("compact"))
    tap(on_diff, SessionTap.filter(F.act == SessionAct.DIFF), flags=like("diff"))
    tap(on_resume, SessionTap.filter(F.act == SessionAct.RESUME), flags=like("resume"))
    tap(on_pick_session, PickTap.filter(), flags=like("session"))
    tap(on_new_folder, NewTap.filter(), flags=like("new"))
    tap(on_trust, SessionTap.filter(F.act == SessionAct.TRUST), flags=like("new"))
    tap(on_trust_no, SessionTap.filter(F.act == SessionAct.TRUST_NO), flags=like("new"))
    return router
