"""Slash commands: /start, /help, /status, /new, /resume, /stop, /kill, /compact, /diff,
/model, /settings, and ``/<session> [text]`` for each session.

What a role may do is each handler's ``rights`` flag, checked before it runs
(``access.Access.rights``), from ``rights.COMMANDS``, which the buttons these commands show
read too; /stop, which depends on whose task runs, checks in the handler.
``/new`` without a name asks for one: the sender's next message (``NextMessage.session_name``,
aiogram's FSM) is the name.
"""

from __future__ import annotations

import logging
import re

from aiogram import F, Router
from aiogram.filters import Command, CommandObject, CommandStart
from aiogram.fsm.context import FSMContext
from aiogram.types import Message
from aiogram.utils.keyboard import InlineKeyboardBuilder

from aipager.bot import changes, view
from aipager.bot.actions import Actions, Sender
from aipager.bot.callbacks import (ModelChoice, ModelTap, SessionAct, SessionTap)
from aipager.bot.i18n import _
from aipager.bot.flows import NextMessage, ask_kill, compact, model_key, offer_picker, said
from aipager.bot.outbox import Post
from aipager.bot.settingsview import settings_view
from aipager.bot.starting import name_and_first, start_session
from aipager.bot.rights import like
from aipager.clients.words import words
from aipager.port.model import Session, State
from aipager.port.commands import StopTask, SwitchModel
from aipager.port.results import Declined, Stopping
from aipager.port.rights import RIGHTS

log = logging.getLogger("aipager.bot")

#: a Telegram command name (what ``/<session>`` needs to be)
COMMAND_NAME = re.compile(r"^[a-z0-9_]{1,32}$")


def session_buttons(actions: Actions, sessions: list[Session], act: SessionAct) -> dict | None:
    """One button per session, one a row."""
    kb = InlineKeyboardBuilder()
    for sess in sessions:
        kb.button(text=sess.label,
                  callback_data=SessionTap(h=actions.state.handle("session", sess.name), act=act))
    return view.markup(kb.adjust(1))


def pick_or_run(actions: Actions, message: Message, name: str | None, act: SessionAct,
                candidates: list[Session]) -> Session | None:
    """The session a command names, or the one candidate; otherwise a picker is shown
    (or a word that there is none) and None returned."""
    chat_id = message.chat.id
    if name:
        sess = actions.find(name)
        if sess is None or not view.is_live(sess):
            actions.say(chat_id, _("No running session called {name}. /status lists them.").format(
                name=name),
                        reply_to=message.message_id)
            return None
        return sess
    current = actions.target(chat_id, None)
    if current is not None and current in candidates:
        return current
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        actions.say(chat_id, _("No session to do that to."), reply_to=message.message_id)
        return None
    actions.say(chat_id, view.picker_text(act), markup=session_buttons(actions, candidates, act),
                reply_to=message.message_id)
    return None


async def on_help(message: Message, actions: Actions) -> None:
    current = actions.state.current.get(str(message.chat.id))
    actions.say(message.chat.id, view.help_text(actions.sessions(), current))


async def on_status(message: Message, actions: Actions) -> None:
    import time

    chat_id = message.chat.id
    current = actions.state.current.get(str(chat_id))
    live = actions.live_sessions()
    markup = session_buttons(actions, [s for s in live if s.name != current], SessionAct.USE)
    text = view.status_screen(actions.sessions(), current, time.time(), actions.port.hosts())
    if markup:
        text += "\n\n" + _("Tap a session to send your messages there.")
    actions.say(chat_id, text, markup=markup)


async def on_new(message: Message, command: CommandObject, actions: Actions, sender: Sender,
                 state: FSMContext) -> None:
    args = (command.args or "").strip()
    if not args:
        await state.set_state(NextMessage.session_name)
        # a–z in every language, not "letters": a session is also the command /NAME, which
        # Telegram takes in ASCII only
        actions.say(message.chat.id, _("Name for the new session? (letters a–z without accents, "
                                       "digits, - and _; not starting with -)"),
                    reply_to=message.message_id)
        return
    await start_session(actions, message, sender, name_and_first(args))


async def on_resume(message: Message, actions: Actions) -> None:
    ended = [s for s in actions.sessions() if s.state == State.GONE and s.claude_session_id]
    if not ended:
        actions.say(message.chat.id, _("No ended session to resume."))
        return
    actions.say(message.chat.id, view.picker_text("resume"),
                markup=session_buttons(actions, ended[-10:], SessionAct.RESUME))


async def on_stop(message: Message, command: CommandObject, actions: Actions,
                  sender: Sender) -> None:
    busy = [s for s in actions.live_sessions() if s.state in (State.WORKING, State.WAITING)]
    sess = pick_or_run(actions, message, command.args, SessionAct.STOP, busy)
    if sess is None:
        return
    result = await actions.port.ask(StopTask(sender, sess.name))
    match result:
        case Stopping(pressed=False):
            pass  # a repeated stop says nothing new
        case Declined(reason=reason) if reason in RIGHTS:
            actions.say(message.chat.id, "🔒 " + words(result, _), reply_to=message.message_id)
        case Stopping():
            actions.say(message.chat.id, words(result, _), session=sess.name)
        case _:
            actions.say(message.chat.id, words(result, _), reply_to=message.message_id)


async def on_kill(message: Message, command: CommandObject, actions: Actions) -> None:
    sess = pick_or_run(actions, message, command.args, SessionAct.KILL, actions.live_sessions())
    if sess is not None:
        ask_kill(actions, message.chat.id, sess)


async def on_compact(message: Message, command: CommandObject, actions: Actions,
                     sender: Sender) -> None:
    sess = pick_or_run(actions, message, command.args, SessionAct.COMPACT,
                       actions.live_sessions())
    if sess is not None:
        await compact(actions, message.chat.id, sess, sender)


async def on_diff(message: Message, command: CommandObject, actions: Actions,
                  sender: Sender) -> None:
    sess = pick_or_run(actions, message, command.args, SessionAct.DIFF, actions.live_sessions())
    if sess is not None:
        await changes.show(actions, message.chat.id, message.message_id, sender, sess)


async def on_model(message: Message, command: CommandObject, actions: Actions,
                   sender: Sender) -> None:
    model = (command.args or "").strip()
    if not model:
        model_picker(actions, message)
        return
    if not re.fullmatch(r"[A-Za-z0-9._\[\]-]{1,64}", model):
        actions.say(message.chat.id, _("Which model? For example: /model opus, /model sonnet."),
                    reply_to=message.message_id)
        return
    sess = pick_or_run(actions, message, None, SessionAct.USE, actions.live_sessions())
    if sess is None:
        return
    said(actions, message.chat.id,
         await actions.port.ask(SwitchModel(sender, sess.name, model)), session=sess.name)


def model_picker(actions: Actions, message: Message) -> None:
    """``/model`` alone: the session's current model and a button per model (the switch is
    for that session alone: ``DaemonPort.switch_model``)."""
    chat_id = message.chat.id
    reply = message.reply_to_message
    sess = actions.target(chat_id, reply.message_id if reply is not None else None)
    if sess is None:
        actions.say(chat_id, _("Which session? Send /model in reply to one of its messages, or "
                               "/model NAME to switch the current one."), reply_to=message.message_id)
        return
    handle = actions.state.handle("session", sess.name)
    kb = InlineKeyboardBuilder()
    for choice in ModelChoice:
        kb.button(text=choice.value, callback_data=ModelTap(h=handle, model=choice))
    text = _("🧠 {session} uses {model}. Switch it (this session only) to:").format(
        session=sess.label, model=sess.model or _("the default model"))
    key = model_key(sess.name)
    actions.state.forget_live(key)  # an older picker is left as it is
    actions.outbox.put(Post(chat_id, text, markup=view.markup(kb.adjust(3)),
                            reply_to=message.message_id, key=key, session=sess.name))


async def on_settings(message: Message, actions: Actions) -> None:
    user = message.from_user
    uid = user.id if user is not None else None
    text, markup = settings_view(actions, message.chat.id, uid,
                                 actions.state.langs.get(str(uid), ""))
    actions.say(message.chat.id, text, markup=markup)


def running_session(message: Message, actions: Actions,
                    bot_identity: tuple[int, str | None]) -> dict[str, Session] | bool:
    """The filter of ``/<session> [text]``: the running session the command names, as
    ``sess`` for the handler.  ``/jim@box`` names session jim of machine box (a hub);
    ``/jim@ourbot`` is Telegram's way of addressing this bot in a group."""
    sess = named_session(message, actions, bot_identity)
    return {"sess": sess} if sess is not None and view.is_live(sess) else False


def named_session(message: Message, actions: Actions,
                  bot_identity: tuple[int, str | None]) -> Session | None:
    """The session ``/<session>`` names, running or ended."""
    head = (message.text or "").partition(" ")[0]
    name, at, host = head[1:].partition("@")
    username = bot_identity[1]
    if at and not (username and host.lower() == username.lower()):
        name = f"{name}@{host}"
    return actions.find(name) if name else None


async def on_session_command(message: Message, actions: Actions, sender: Sender,
                             sess: Session) -> None:
    """``/<session>`` makes it current; ``/<session> text`` sends text to it."""
    rest = (message.text or "").partition(" ")[2].strip()
    if not rest:
        actions.state.current[str(message.chat.id)] = sess.name
        actions.say(message.chat.id, _("Your messages go to {session} now.").format(
            session=sess.label), session=sess.name)
        return
    await actions.deliver(sess, message.chat.id, message.message_id, rest, sender)


def namesakes(message: Message, actions: Actions,
              bot_identity: tuple[int, str | None]) -> dict[str, list[Session]] | bool:
    """The filter of ``/jim [text]`` when several machines run a ``jim``: them all."""
    head = (message.text or "").partition(" ")[0]
    name, at, host = head[1:].partition("@")
    username = bot_identity[1]
    if at and not (username and host.lower() == username.lower()):
        return False
    found = actions.namesakes(name) if name else []
    return {"namesakes": found} if len(found) > 1 else False


def command_form(label: str) -> str:
    """``jim@box`` as a command every chat delivers: ``/jim_box``."""
    return "/" + label.replace("@", "_")


async def on_namesakes(message: Message, actions: Actions, sender: Sender, picks: dict,
                       namesakes: list[Session]) -> None:
    """``/jim`` with a ``jim`` on several machines: which one; with a text, a picker."""
    rest = (message.text or "").partition(" ")[2].strip()
    if rest:
        offer_picker(actions, message, rest, sender, picks, namesakes)
        return
    bare = namesakes[0].label.split("@", 1)[0]
    actions.say(message.chat.id, _("{session} runs on several machines: {commands}").format(
        session=bare, commands=", ".join(command_form(s.label) for s in namesakes)),
        reply_to=message.message_id)


async def on_unknown_command(message: Message, actions: Actions,
                             bot_identity: tuple[int, str | None]) -> None:
    """Anything else starting with /: an ended session's name says so (its text is not
    sent anywhere), with its resume button when Claude Code can resume it."""
    head = (message.text or "").partition(" ")[0]
    ended = named_session(message, actions, bot_identity)
    if ended is not None:
        resumable = bool(ended.claude_session_id)
        actions.say(message.chat.id, (_("{session} has ended; nothing was sent. Resume it to "
                                        "go on with its conversation:") if resumable
                                      else _("{session} has ended; nothing was sent. /new "
                                             "{session} starts it again.")).format(
                                          session=ended.label),
                    markup=session_buttons(actions, [ended], SessionAct.RESUME)
                    if resumable else None, reply_to=message.message_id)
        return
    actions.say(message.chat.id, _("Unknown command {command}. /help lists what I "
                                   "understand.").format(command=head[:40]), reply_to=message.message_id)


def make_router() -> Router:
    """The commands handlers on a fresh router (a router joins one dispatcher only)."""
    router = Router(name="commands")
    router.message.register(on_help, CommandStart())
    router.message.register(on_help, Command("help"))
    router.message.register(on_status, Command("status"))
    router.message.register(on_new, Command("new"), flags=like("new"))
    router.message.register(on_resume, Command("resume"), flags=like("resume"))
    router.message.register(on_stop, Command("stop"), flags=like("stop"))
    router.message.register(on_kill, Command("kill"), flags=like("kill"))
    router.message.register(on_compact, Command("compact"), flags=like("compact"))
    router.message.register(on_diff, Command("diff"), flags=like("diff"))
    router.message.register(on_model, Command("model"), flags=like("model"))
    router.message.register(on_settings, Command("settings"))
    router.message.register(on_session_command, F.text.startswith("/"), running_session,
                            flags=like("session"))
    router.message.register(on_namesakes, F.text.startswith("/"), namesakes,
                            flags=like("session"))
    router.message.register(on_unknown_command, F.text.startswith("/"))
    return router
