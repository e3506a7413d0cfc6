"""/new from the phone: the folder a session starts in, and Claude Code's folder trust dialog.

A session started in a folder Claude Code has never trusted stops at its trust dialog
("Do you trust the files in this folder?") before any hook runs; nothing reached the
phone, and the session looked dead.  So ``/new NAME`` offers the folders Claude Code
already trusts first (then the default one) when the default is not among them, and a
session started in an untrusted folder gets the dialog's question in the chat, answered
with a tap (``Service.ask(TrustFolder)``, as the page does).  A first message waits for
the session to start, in the background: the chat goes on meanwhile, and a message is
never typed into the dialog (the service declines that too).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from dataclasses import asdict, dataclass

from aiogram.types import Message
from aiogram.utils.keyboard import InlineKeyboardBuilder

from aipager import agents, dtach

from aipager.bot import view
from aipager.bot.actions import READY_TIMEOUT, Actions, Sender
from aipager.bot.callbacks import NewTap, SessionAct, SessionTap
from aipager.bot.i18n import _
from aipager.bot.outbox import Live
from aipager.clients.words import MODE_NAMES, words
from aipager import folders
from aipager.port.model import Session, State
from aipager.port.commands import Mode, StartSession
from aipager.port.results import Started
from aipager.proto.errors import AipagerError, InvalidSessionName

log = logging.getLogger("aipager.bot")

#: trusted folders offered at most (then the default one)
FOLDERS_OFFERED = 5
#: how long a first message waits for its session to start (its trust dialog answered)
FIRST_WAIT = 600.0
#: how long /new waits for the first screen of an agent no hook of which says it started
FIRST_LOOK = 15.0


@dataclass(frozen=True)
class Offer:
    """A /new waiting for its folder: the session's name, its first message, the folders
    offered (the default last) and the /new message it answers."""

    name: str
    first: str
    folders: tuple[str, ...]
    msg_id: int

    def dump(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False)

    @classmethod
    def load(cls, raw: str | None) -> Offer | None:
        try:
            data = json.loads(raw or "")
            return cls(str(data["name"]), str(data["first"]),
                       tuple(str(f) for f in data["folders"]), int(data["msg_id"]))
        except (ValueError, KeyError, TypeError):
            return None


def folders_to_offer(actions: Actions, agent: agents.Agent = agents.CLAUDE
                     ) -> tuple[str, ...] | None:
    """The folders to offer, trusted ones first and the default last; None: start in the
    default folder at once (Claude Code trusts it, or trusts nothing to choose from, or the
    agent is not Claude Code, whose trust they are)."""
    if actions.privacy().on or agent is not agents.CLAUDE:
        return None  # folder names are content: private mode chooses on the page
    trusted = actions.port.trusted()
    default = actions.default_folder
    if not trusted or folders.is_trusted(default, trusted):
        return None
    return (*[f for f in trusted if f != default][:FOLDERS_OFFERED], default)


def _short(folder: str, home: str) -> str:
    return "~" + folder[len(home):] if home and folder.startswith(home + os.sep) else folder


def offer(actions: Actions, chat_id: int, reply_to: int, name: str, first: str,
          choices: tuple[str, ...]) -> None:
    """Ask where ``name`` starts: one button per folder."""
    handle = actions.state.handle("new", Offer(name, first, choices, reply_to).dump())
    home = actions.env.get("HOME", "")
    kb = InlineKeyboardBuilder()
    for i, folder in enumerate(choices):
        shown = _short(folder, home)
        kb.button(text=f"📁 {shown}" if i < len(choices) - 1 else
                  _("📁 {folder} · Claude Code will ask to trust it").format(folder=shown),
                  callback_data=NewTap(h=handle, i=i))
    kb.adjust(1)
    # a live message: the tap replaces it with the folder chosen
    actions.outbox.put(Live(chat_id, _("📁 Where should {name} start? First the folders "
                                       "Claude Code already trusts.").format(name=name),
                            key=offer_key(handle), markup=view.markup(kb), reply_to=reply_to))


def offer_key(handle: int) -> str:
    return f"new:{handle}"


async def start(actions: Actions, chat_id: int, reply_to: int, sender: Sender, name: str,
                first: str, folder: str = "") -> bool:
    """Start ``name`` in ``folder`` ("": the default one) and say so; in a folder Claude
    Code does not trust, ask its trust question here.  Returns whether it started."""
    mode = new_mode(actions, chat_id)
    agent = new_agent(actions, chat_id)
    try:
        result = await actions.port.ask(StartSession(
            sender, name, folder, mode=mode,
            agent="" if agent is agents.CLAUDE else agent.name))
    except InvalidSessionName:
        actions.say(chat_id, _("Cannot start a session named {name}: a name is 1–64 letters "
                               "a–z without accents, digits, - and _, not starting with - "
                               "(for example: api-fix).").format(name=repr(name)[1:-1]),
                    reply_to=reply_to)
        return False
    except AipagerError as exc:
        # the error names the session; a refused name shows escaped there, on one line
        actions.say(chat_id, _("Cannot start the session: {error}").format(error=exc),
                    reply_to=reply_to)
        return False
    if not isinstance(result, Started):
        actions.say(chat_id, words(result, _), reply_to=reply_to)
        return False
    session = result.name
    actions.state.current[str(chat_id)] = session
    label = session.removeprefix("claude-")
    said = _("🆕 {session} started. Your messages go there now.").format(
        session=label) if actions.privacy().on else \
        _("🆕 {session} started in {folder}. Your messages go there now.").format(
            session=label, folder=result.folder)
    if agent is not agents.CLAUDE:  # /settings chose another agent: say which
        said += "\n" + _("🧩 It runs {agent}.").format(agent=agent.title)
    if mode:  # not the agent's own: say which (/settings chose it)
        said += "\n" + _(MODE_NAMES[mode])
    actions.say(chat_id, said, reply_to=reply_to, session=session)
    sess = actions.registry.get(session)
    if sess is not None and not agent.announces_start:
        # no hook says it started: its screen does, or shows its trust dialog first
        await _first_look(actions, session)
    if sess is not None and actions.port.at_trust_dialog(sess):
        ask_trust(actions, chat_id, sess)
        if first:  # typed once the dialog is answered and Claude Code started
            task = asyncio.create_task(_first_when_ready(actions, chat_id, reply_to, sender,
                                                         session, first))
            actions.background.add(task)
            task.add_done_callback(actions.background.discard)
        return True
    if first:
        await _first(actions, chat_id, reply_to, sender, session, first)
    return True


async def _first_look(actions: Actions, session: str, timeout: float = FIRST_LOOK) -> None:
    """Wait until the daemon read a just-started session's screen: its input line (ready)
    or a dialog (``Session.start_dialog``), or ``timeout``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        sess = actions.registry.get(session)
        if sess is None or sess.state != State.UNKNOWN or sess.start_dialog:
            return
        await asyncio.sleep(0.1)


async def _first(actions: Actions, chat_id: int, msg_id: int, sender: Sender, session: str,
                 text: str, timeout: float = READY_TIMEOUT) -> None:
    ready = await actions.wait_ready(session, timeout)
    if ready is None:
        # its session ended before it could be typed: never delivered, and never typed into
        # a later session that takes the same name
        actions.react(chat_id, msg_id, "🤷")
        return
    if not ready:
        log.warning("session %s sent no SessionStart yet; handing the first message over "
                    "anyway", session)
    sess = actions.registry.get(session)
    if sess is not None:
        await actions.deliver(sess, chat_id, msg_id, text, sender)


async def _first_when_ready(actions: Actions, chat_id: int, msg_id: int, sender: Sender,
                            session: str, text: str) -> None:
    try:
        await _first(actions, chat_id, msg_id, sender, session, text, FIRST_WAIT)
    except Exception:  # noqa: BLE001 - a background task: logged, never lost silently
        log.exception("the first message for %s was not handed over", session)


def new_mode(actions: Actions, chat_id: int) -> Mode:
    """The permission mode this chat's /settings chose for new sessions."""
    try:
        return Mode(actions.state.prefs_of(chat_id).mode)
    except ValueError:  # a mode an older version offered
        return Mode.CLAUDE


def new_agent(actions: Actions, chat_id: int) -> agents.Agent:
    """The coding agent this chat's /settings chose for new sessions (Claude Code unless
    another was chosen)."""
    try:
        return agents.get(actions.state.prefs_of(chat_id).agent)
    except ValueError:  # an agent an older version offered
        return agents.CLAUDE


def trust_key(session: str, start: int) -> str:
    """The live key of the trust question of one start of ``session``."""
    return f"trust:{session}:{start}"


def trust_session(key: str) -> str:
    """The session a trust question's key names."""
    return key.split(":", 2)[1] if key.count(":") >= 2 else ""


def ask_trust(actions: Actions, chat_id: int, sess: Session) -> None:
    """Claude Code's folder trust dialog, as a question with its two answers.  Each start of
    a session gets its own question: one asked before, for an earlier session of the same
    name, is closed and answers nothing."""
    state = actions.state
    earlier = state.trusting.get(sess.name)
    if earlier:
        actions.outbox.put(Live(chat_id, _("📁 This question was for an earlier {session}.")
                                .format(session=sess.label), key=earlier))
    key = trust_key(sess.name, state.next_handle)
    state.trusting[sess.name] = key
    handle = state.handle("trust", key)
    kb = InlineKeyboardBuilder()
    kb.button(text=_("✅ Yes, I trust this folder"), callback_data=SessionTap(h=handle, act=SessionAct.TRUST))
    kb.button(text=_("🗑 No, end the session"), callback_data=SessionTap(h=handle, act=SessionAct.TRUST_NO))
    agent = agents.AGENTS.get(sess.coding_agent, agents.CLAUDE).title
    if actions.privacy().on:  # the folder's name is content: the page shows it
        text = _("📁 {agent} asks before {session} starts: do you trust the files in its "
                 "folder? It may read, edit and run them.").format(agent=agent,
                                                                   session=sess.label)
    else:
        text = _("📁 {agent} asks before {session} starts: do you trust the files in "
                 "{folder}? It may read, edit and run them.").format(
            agent=agent, session=sess.label, folder=sess.cwd)
    actions.outbox.put(Live(chat_id, text, key=key, markup=view.markup(kb),
                            session=sess.name))


__all__ = ["FIRST_WAIT", "Offer", "ask_trust", "folders_to_offer", "new_agent", "new_mode", "offer",
           "offer_key", "start", "trust_key", "trust_session"]


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
    choices = folders_to_offer(actions, new_agent(actions, chat_id))
    if choices is not None:
        offer(actions, chat_id, message.message_id, name, first, choices)
        return
    await start(actions, chat_id, message.message_id, sender, name, first)
