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
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from aiogram import F, Router
from aiogram.filters import Command, CommandObject, CommandStart
from aiogram.fsm.context import FSMContext
from aiogram.fsm.state import State as FSMState
from aiogram.fsm.state import StatesGroup
from aiogram.types import Message
from aiogram.utils.keyboard import InlineKeyboardBuilder

from aipager import dtach, locales
from aipager.bot import changes, starting, view
from aipager.bot.actions import Actions, Sender
from aipager.bot.callbacks import (ModelChoice, ModelTap, PickTap, SessionAct, SessionTap, Setting,
                                   SettingTap)
from aipager.bot.chatstate import STYLES
from aipager.bot.i18n import N_, _
from aipager.bot.notify import KILL_ASK, kill_key
from aipager.bot.outbox import Post
from aipager.bot.rights import like
from aipager.clients.words import MODE_NAMES, words
from aipager.clients.words import ok as words_ok
from aipager.daemon.model import Session, State
from aipager.port.commands import CompactSession, StopTask, SwitchModel
from aipager.port.results import Declined, Result, Stopping
from aipager.port.rights import RIGHTS
from aipager.proto.errors import AipagerError

log = logging.getLogger("aipager.bot")

#: a Telegram command name (what ``/<session>`` needs to be)
COMMAND_NAME = re.compile(r"^[a-z0-9_]{1,32}$")


class NextMessage(StatesGroup):
    """What a person's next message in the chat is, once the chat asked for it."""

    #: the name of the session ``/new`` starts (``routers.messages.on_session_name``)
    session_name = FSMState()
    #: the answer, in words, to a question (its "Other…" button: ``routers.taps.on_other``)
    answer = FSMState()
    #: the corrected command or path of a request (its ✏️ button: ``routers.taps.on_edit``)
    edit = FSMState()


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


#: quotes a name may be written in (``/new "My Project"``), opening → closing
_QUOTES = {'"': '"', "'": "'", "“": "”", "„": "“", "«": "»", "‘": "’"}


@dataclass(frozen=True, slots=True)
class NewSession:
    """What ``/new`` was given: the session's name and its first message, if any."""

    name: str
    first: str = ""
    #: the name was written in quotes: where it ends is certain (``/new "My Project" hi``)
    quoted: bool = False


def name_and_first(text: str) -> NewSession:
    """``NAME [first message]``: the name ends at the first space, newline or tab.

    Any whitespace ends it: a newline kept in a name once started a session
    that could be neither listed nor ended.  A quoted name may hold spaces: they
    become ``-`` (``"My Project"`` → ``My-Project``), as a name is one word.
    """
    text = text.strip()
    close = _QUOTES.get(text[:1])
    if close and close in text[1:]:
        quoted, _close, rest = text[1:].partition(close)
        return NewSession("-".join(quoted.split()), rest.strip(), quoted=True)
    parts = text.split(maxsplit=1) + ["", ""]
    return NewSession(parts[0], parts[1].strip())


def looks_like_a_longer_name(name: str, first: str) -> bool:
    """``/new My Project``: after a valid name, a first "message" of one short word is far
    more likely the rest of the name than a prompt."""
    if not first or len(first) > 24 or not first.replace("-", "").isalnum():
        return False
    try:
        dtach.check_name(f"{name}-{first}")
    except AipagerError:
        return False  # not a name either way: the name's own refusal says why
    return True


async def start_session(actions: Actions, message: Message, sender: Sender,
                        new: NewSession) -> None:
    chat_id = message.chat.id
    name, first = new.name, new.first
    # a quoted name ended where its quote closed: what follows is the first message
    if not new.quoted and looks_like_a_longer_name(name, first):
        actions.say(chat_id, _("A session name is one word: letters a–z without accents, "
                               "digits, - and _. For a session named {name}-{first}: /new {name}-{first} (or /new "
                               "\"{name} {first}\"). To start {name} with the message “{first}”, "
                               "start it first, then send the message.").format(
                                   name=name, first=first), reply_to=message.message_id)
        return
    existing = actions.find(name)
    if existing is not None and view.is_live(existing) and existing.socket_seen:
        actions.say(chat_id, _("{session} is already running; your messages go there now.").format(
            session=existing.label),
                    reply_to=message.message_id)
        actions.state.current[str(chat_id)] = existing.name
        return
    choices = starting.folders_to_offer(actions)
    if choices is not None:
        starting.offer(actions, chat_id, message.message_id, name, first, choices)
        return
    await starting.start(actions, chat_id, message.message_id, sender, name, first)


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
    result = await actions.service.ask(StopTask(sender, sess.name))
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
    actions.state.show(key, KILL_ASK + text)
    actions.outbox.put(Post(chat_id, text, markup=markup, key=key))


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


async def compact(actions: Actions, chat_id: int, sess: Session, sender: Sender) -> None:
    result = await actions.service.ask(CompactSession(sender, sess.name))
    said(actions, chat_id, result, session=sess.name)


def said(actions: Actions, chat_id: int, result: Result, *, session: str = "",
         reply_to: int | None = None) -> None:
    """A command's result in the chat: 🔒 before a refusal about rights."""
    lock = "🔒 " if isinstance(result, Declined) and result.reason in RIGHTS else ""
    actions.say(chat_id, lock + words(result, _), reply_to=reply_to,
                session=session if words_ok(result) else "")


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
         await actions.service.ask(SwitchModel(sender, sess.name, model)), session=sess.name)


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


def model_key(session: str) -> str:
    """The live message of ``/model``'s picker: a tap puts the switch in its place (its
    buttons gone; it said the old model and offered the same buttons again)."""
    return f"model:{session}"


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
    from aipager.bot import speech

    if importlib.util.find_spec("faster_whisper") is None:
        return _("🎙 Voice model: none (aipager's voice extra is not installed, about 450 MB)")
    try:
        cfg: config.Config | None = config.load(env)
    except Exception:  # noqa: BLE001 - a config the daemon runs without: the default
        cfg = None
    spec = speech.model_spec(env, cfg)
    if speech.is_folder(spec):
        return _("🎙 Voice model: {name} (a folder on this computer)").format(name=spec)
    return _("🎙 Voice model: {name}, fetched from the Hugging Face hub at the first voice note "
             "unless already here (`aipager voice model` on the computer sets one "
             "ahead)").format(name=spec)


def settings_view(actions: Actions, chat_id: int, user_id: int | None = None,
                  language: str = "") -> tuple[str, dict | None]:
    """The chat's settings, and the language of ``user_id`` (``language``: their choice,
    "" for their Telegram app's)."""
    prefs = actions.state.prefs_of(chat_id)
    styles = list(STYLES)
    style = prefs.get("style") or ""
    next_style = styles[(styles.index(style) + 1) % len(styles)] if style in styles else ""
    diffs = bool(prefs.get("diffs"))
    detail = prefs.get("detail", "full")
    quiet = bool(prefs.get("quiet"))
    voice_now = bool(prefs.get("voice_now"))
    mode = starting.new_mode(actions, chat_id)
    modes = list(MODE_NAMES)
    next_mode = modes[(modes.index(mode) + 1) % len(modes)]
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
        _("/new starts sessions in: {mode}").format(mode=_(MODE_NAMES[mode])),
        # the mode the chat was last told of (``privacywatch``: it follows the config)
        _("🔒 Private mode: on (`aipager config private off` on the computer)")
        if prefs.get("private") is True
        else _("Private mode: off (`aipager config private on` on the computer)"),
        voice_model_line(actions.env),
    ]
    if user_id is not None:
        chosen = locales.NAMES.get(language) if language else _("Auto (your Telegram app’s)")
        lines.append(_("Your language: {language}").format(language=chosen))
    kb = InlineKeyboardBuilder()
    kb.button(text=_("💬 Reply style ›"),
              callback_data=SettingTap(name=Setting.STYLE, value=next_style or "own"))
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
    kb.button(text=_("🛡 Mode of new sessions ›"),
              callback_data=SettingTap(name=Setting.MODE, value=next_mode.value or "claude"))
    rows = [1, 1, 1, 1, 1, 1]
    if user_id is not None:
        # a person's own language (not the chat's): Auto, then each in its own words
        for value, name in [("auto", _("🌐 Auto"))] + [(loc, locales.NAMES[loc])
                                                      for loc in locales.LOCALES]:
            mark = "✓ " if value == (language or "auto") else ""
            kb.button(text=mark + name, callback_data=SettingTap(name=Setting.LANGUAGE,
                                                                 value=value))
        rows += [1 + len(locales.LOCALES) - 2, 2]
    return "\n".join(lines), view.markup(kb.adjust(*rows))


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
