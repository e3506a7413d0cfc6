"""What the chat does to sessions: deliver a message, start, stop, kill, compact, switch model.

Handlers stay thin and call these.  Everything reaches the daemon through its
port (``aipager.daemon.port.DaemonPort``): typing, keys, answers, sessions, the
audit; what the chat reads of sessions is the port's read-only view.  Feedback
to the person goes through the outbox, like every other output.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any, Callable

from aipager import dtach
from aipager.bot import inbox, view
from aipager.bot.chatstate import STYLES, ChatState, msg_key
from aipager.bot.outbox import Outbox, Post, React
from aipager.clients import prompts
from aipager.bot.i18n import _
from aipager.clients import people
from aipager.clients.people import Sender, author_label, task_authors  # noqa: F401
from aipager.daemon.dialogkeys import Answer as QuestionAnswer
from aipager.daemon.model import Session, State
from aipager.daemon.port import DaemonPort, Outcome, SessionsView, Who
from aipager.proto.errors import AipagerError, SessionError, SessionNotFound

log = logging.getLogger("aipager.bot")

#: how long /new waits for a new session's SessionStart before typing a first message
READY_TIMEOUT = 30.0
#: after SessionStart, Claude Code still draws its prompt before it reads keys
READY_SETTLE = 1.0


class Actions:
    """The chat's operations.

    Args:
        port: the daemon, as its clients see it.
        state: the chat state; outbox: where feedback goes.
        default_folder: where ``/new`` starts sessions (asked each time: the config can change).
    """

    def __init__(self, port: DaemonPort, state: ChatState, outbox: Outbox,
                 default_folder: Callable[[], str]) -> None:
        self.port = port
        self.env = port.env
        self.state = state
        self.outbox = outbox
        self._default_folder = default_folder

    # -- looking things up ---------------------------------------------------------

    @property
    def default_folder(self) -> str:
        """Where /new starts sessions (the config's ``new_session_folder``, else HOME)."""
        return self._default_folder()

    @property
    def registry(self) -> SessionsView:
        """The sessions, read only."""
        return self.port.sessions

    def sessions(self) -> list[Session]:
        return sorted(self.registry, key=lambda s: s.label)

    def live_sessions(self) -> list[Session]:
        return [s for s in self.sessions() if view.is_live(s)]

    def find(self, label: str) -> Session | None:
        """A session by its label (``jim``) or internal name (``claude-jim``); a host's
        session on a hub also as ``jim@box`` (``claude-jim@box``)."""
        label = label.strip().lstrip("/").lower()
        for sess in self.registry:
            name = sess.name.lower()
            if sess.label.lower() == label or name == label or name == f"claude-{label}":
                return sess
        # ``jim_box`` is ``jim@box``: in a group ``/jim@box`` reads as a command for another
        # bot (named box) and privacy mode never delivers it; ``/jim_box`` always arrives
        # (names and hosts may hold ``_`` too: each ``_`` is tried as the ``@``)
        if "@" not in label:
            for at in (i for i, c in enumerate(label) if c == "_" and 0 < i < len(label) - 1):
                found = self.find(f"{label[:at]}@{label[at + 1:]}")
                if found is not None:
                    return found
        return None

    def namesakes(self, label: str) -> list[Session]:
        """The running sessions of several machines that share the name ``label``
        (``jim@box``, ``jim@vm``): ``/jim`` names none of them alone."""
        key = label.strip().lstrip("/").lower()
        return [s for s in self.live_sessions()
                if "@" in s.label and s.label.lower().split("@", 1)[0] == key]

    def target(self, chat_id: int, reply_to: int | None) -> Session | None:
        """Where a plain message goes: the session of the replied-to message, else the
        chat's current session, else the only live one; None means ask."""
        if reply_to is not None:
            name = self.state.session_of(chat_id, reply_to)
            sess = self.registry.get(name) if name else None
            if sess is not None:
                return sess
        name = self.state.current.get(str(chat_id))
        sess = self.registry.get(name) if name else None
        if sess is not None and view.is_live(sess):
            return sess
        live = self.live_sessions()
        return live[0] if len(live) == 1 else None

    def say(self, chat_id: int, text: str, *, reply_to: int | None = None,
            markup: dict | None = None, session: str = "", low: bool = False,
            buzz: bool = False) -> None:
        """Post ``text``, silently unless ``buzz`` (a failure the person must see: ``Post.buzz``);
        ``low``: an answer to a stranger, sent after the team's (``Post.low``)."""
        self.outbox.put(Post(chat_id, text, markup=markup, reply_to=reply_to,
                             session=session, low=low, buzz=buzz))

    def react(self, chat_id: int, msg_id: int, emoji: str) -> None:
        if self.state.advance_reaction(chat_id, msg_id, emoji):
            self.outbox.put(React(chat_id, msg_id, emoji))

    # -- messages ------------------------------------------------------------------

    async def deliver(self, sess: Session, chat_id: int, msg_id: int, text: str,
                      sender: Sender, quoted: tuple[str, float] | None = None) -> str:
        """Hand a chat message to ``sess``: typed now, or held while Claude shows a dialog
        (typed text would answer it).  Returns ``typed``, ``held``, ``refused`` (told in one
        line, audited) or ``failed``."""
        if sender.raw_keys and sess.state != State.WAITING:
            return await self.type_raw(sess, chat_id, msg_id, text, sender)
        text = prompts.words(text)
        if not text:
            return "refused"
        author = {"user_id": sender.user_id, "label": sender.label, "role": sender.role}
        if quoted:
            # A reply to an older message: Claude is shown what it replies to.
            author["reply_to"] = {"text": quoted[0][:1000], "sent_at": quoted[1]}
        why, held_for = prompts.hold(sess, sender, tr=_) or ("", "task")
        if why:
            # Held (the daemon saves it at once), then its update is handled, durably
            # (``inbox``): a kill in between holds it again at the next start, in its place.
            self.port.queue_chat_message(sess.name, msg_id, text, chat_id=chat_id,
                                           sender=sender.label, held=True, held_for=held_for)
            inbox.acting()
            self.state.authors[msg_key(chat_id, msg_id)] = author
            self.say(chat_id, why, reply_to=msg_id, session=sess.name)
            return "held"
        return await self.type_message(sess.name, chat_id, msg_id, text, author)

    async def type_raw(self, sess: Session, chat_id: int, msg_id: int, text: str,
                       sender: Sender) -> str:
        """The owner's opt-in: ``text`` typed as keys, exactly as sent (no note: bash
        mode and Claude Code's commands read none, and the owner's rights need none)."""
        self.react(chat_id, msg_id, "👀")
        inbox.acting()  # as in type_message
        try:
            await self.port.type_text(sess.name, text)
        except (AipagerError, ValueError, OSError) as exc:
            self.react(chat_id, msg_id, "🤷")
            self.say(chat_id, _("🤷 Not delivered to {session}: {reason}").format(
                session=sess.label, reason=_reason(exc)), reply_to=msg_id, buzz=True)
            return "failed"
        self.audit("chat_raw_keys", sender, session=sess.name, msg_id=msg_id, chat_id=chat_id)
        return "typed"

    async def type_message(self, session: str, chat_id: int, msg_id: int, text: str,
                           author: dict[str, Any], *, queued: bool = False) -> str:
        """Type a chat message with its permission note; 👀 now, 👍/🤷 when Claude takes it."""
        # Right before its Enter (``DtachIO._push``): 👀, since Claude may take the message
        # before the typing call returns, and its update is handled from there on, durably
        # (``inbox``): a kill before that types it again at the next start (a paste
        # without its Enter is cleared first), one after it is never typed twice.
        style = STYLES.get(self.state.prefs_of(chat_id).get("style") or "") or None

        def acting() -> None:
            self.react(chat_id, msg_id, "👀")
            inbox.acting()

        try:
            await prompts.type_with_note(self.port, session, msg_id, chat_id, text, author,
                                         style=style, queued=queued, acting=acting)
        except (AipagerError, ValueError, OSError) as exc:
            self.react(chat_id, msg_id, "🤷")
            self.say(chat_id, _("🤷 Not delivered to {session}: {reason}").format(
                session=session.removeprefix('claude-'), reason=_reason(exc)), reply_to=msg_id,
                buzz=True)
            log.warning("typing a chat message into %s failed: %s", session, exc)
            return "failed"
        return "typed"

    def audit(self, action: str, who: dict[str, Any] | Sender, **fields: Any) -> None:
        """An audit record naming who did it (id, label, role)."""
        if isinstance(who, Sender):
            who = {"user_id": who.user_id, "label": who.label, "role": who.role}
        self.port.audit_action(action, Who(str(who.get("label", "")), who.get("user_id"),
                                           str(who.get("role", ""))), **fields)

    async def release(self, session: str, chat_id: int, msg_id: int, text: str) -> None:
        """A held message may go in now (the registry's ``release`` output)."""
        author = self.state.authors.pop(msg_key(chat_id, msg_id), None)
        if author is None:
            # Its author is unknown (an older daemon held it): the floor applies.
            author = {"user_id": None, "label": "", "role": "user"}
        await self.type_message(session, chat_id, msg_id, text, author, queued=True)

    # -- session control -----------------------------------------------------------

    async def stop(self, sess: Session) -> bool:
        """Interrupt the running task (``DaemonPort.stop_session``: repeated stops within a
        couple of seconds press nothing); returns whether Escape was pressed."""
        return await self.port.stop_session(sess.name)

    async def type_command(self, sess: Session, command: str) -> None:
        """Type one of Claude Code's own slash commands (``/compact``)."""
        await self.port.type_text(sess.name, command)

    async def switch_model(self, sess: Session, model: str) -> None:
        await self.port.switch_model(sess.name, model)

    async def new_session(self, name: str, *, resume_id: str = "", cwd: str = "") -> str:
        """Start session ``name`` in ``cwd`` (when it is a folder), else in the default folder.

        Returns:
            The internal session name.

        Raises:
            InvalidSessionName, SessionError: as ``dtach.create``.
        """
        name, at, host = name.partition("@")  # NAME@host: on that host of a hub
        bare = dtach.check_name(name)
        if bare.lower() in view.RESERVED:
            msg = _("{name} is the name of a command; pick another name").format(name=bare)
            raise SessionError(msg)
        folder = cwd if cwd and os.path.isdir(cwd) else self.default_folder
        return await self.port.start_session(bare + at + host, resume_id=resume_id, cwd=folder)

    async def wait_ready(self, session: str, timeout: float = READY_TIMEOUT) -> bool:
        """Wait until a new session's Claude Code has started (its SessionStart arrived)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline:
            sess = self.registry.get(session)
            if sess is not None and sess.state == State.READY:
                await asyncio.sleep(READY_SETTLE)
                return True
            await asyncio.sleep(0.1)
        return False

    async def answer_questions(self, ask: dict[str, Any], sender: Sender) -> Outcome:
        """Answer an AskUserQuestion dialog with ``ask["answers"]`` (the daemon presses its
        keys; the verdict line follows from its ``request_answered`` output)."""
        answers = [QuestionAnswer(list(a.get("picks", [])), a.get("text", ""))
                   for a in ask["answers"]]
        return await self.port.answer_question(ask["session"], ask["key"], sender.who, answers)

    async def decline_questions(self, ask: dict[str, Any], sender: Sender) -> Outcome:
        """Decline the whole AskUserQuestion dialog (Esc)."""
        return await self.port.answer_question(ask["session"], ask["key"], sender.who, None)

    async def kill(self, sess: Session) -> bool:
        return await self.port.kill_session(sess.label)


def refusal(sender: Sender, what: str, sess: Session | None = None) -> str | None:
    """``people.refusal`` in the chat's words (the current locale)."""
    return people.refusal(sender, what, sess, tr=_)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, SessionNotFound):
        return _("the session is not running")
    if isinstance(exc, SessionError):
        return str(exc)
    return _("could not type it ({error})").format(error=exc)
