"""What the chat does to sessions: deliver a message, start, stop, kill, compact, switch model.

Handlers stay thin and call these.  Everything reaches the daemon through its
door ``main`` hands it (``aipager.port.door.Port``): every use case is a command
for ``ask``; what the chat reads of sessions is the door's read-only view.  Feedback
to the person goes through the outbox, like every other output.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable

from aipager.bot.kept import QuestionAsk
from aipager.bot import inbox, view
from aipager.bot.chatstate import STYLES, ChatState
from aipager.bot.outbox import Outbox, Post, React
from aipager.bot.private import OFF, Mode
from aipager.bot.i18n import _
from aipager.clients.words import words
from aipager.port.commands import AnswerQuestion, QuestionAnswer, SendPrompt
from aipager.port.results import Declined, Failed, Held, Typed
from aipager.port.results import Result as PortResult
from aipager.port.rights import Reason, Right
from aipager.port.who import NOBODY
from aipager.clients import people
from aipager.clients.people import Sender, author_label, task_authors  # noqa: F401
from aipager.port.model import Session, State
from aipager.port.backend import SessionsView
from aipager.port.door import Port
from aipager.port.who import Who

log = logging.getLogger("aipager.bot")

#: how long /new waits for a new session's SessionStart before typing a first message
READY_TIMEOUT = 30.0
#: after SessionStart, Claude Code still draws its prompt before it reads keys
READY_SETTLE = 1.0


class Actions:
    """The chat's operations.

    Args:
        port: the one door ``main`` composed (``port.door.Port``).
        state: the chat state; outbox: where feedback goes.
    """

    def __init__(self, port: Port, state: ChatState, outbox: Outbox,
                 privacy: Callable[[], Mode] = lambda: OFF) -> None:
        self.port = port
        self.env = port.env
        self.state = state
        self.outbox = outbox
        #: private mode now (``bot.private``): what the chat's own replies may say
        self.privacy = privacy
        #: work a handler left running (a first message waiting for its session to start)
        self.background: set[asyncio.Task[None]] = set()

    # -- looking things up ---------------------------------------------------------

    @property
    def default_folder(self) -> str:
        """Where /new starts sessions (the config's ``new_session_folder``, else HOME)."""
        return self.port.default_folder()

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
        """Hand a chat message to ``sess`` through the service: typed now, or held (another
        person's task, or a dialog typed text would answer).  Returns ``typed``, ``held``,
        ``refused`` (told in one line) or ``failed``."""
        # A reply to an older message: Claude is shown what it replies to.
        reply = {"text": quoted[0][:1000], "sent_at": quoted[1]} if quoted else None
        return await self._send(SendPrompt(sender, sess.name, text, msg_id, chat_id,
                                           style=self._style(chat_id), reply_to=reply,
                                           submitting=self._acting(chat_id, msg_id)))

    def _style(self, chat_id: int) -> str | None:
        return STYLES.get(self.state.prefs_of(chat_id).style) or None

    def _acting(self, chat_id: int, msg_id: int) -> Callable[[], None]:
        """Right before its Enter (``DtachIO._push``): 👀, since Claude may take the message
        before the typing call returns, and its update is handled from there on, durably
        (``inbox``): a kill before that types it again at the next start (a paste without
        its Enter is cleared first), one after it is never typed twice."""
        def acting() -> None:
            self.react(chat_id, msg_id, "👀")
            inbox.acting()
        return acting

    async def _send(self, command: SendPrompt) -> str:
        chat_id, msg_id = int(command.chat_id), command.msg_id
        result = await self.port.ask(command)
        match result:
            case Typed():
                return "typed"
            case Held():
                # Held (the daemon saved it at once, with its author), then its update is
                # handled, durably (``inbox``): a kill in between holds it again at the next
                # start, in its place.
                inbox.acting()
                self.say(chat_id, words(result, _), reply_to=msg_id, session=command.session)
                return "held"
            case Failed():
                self.react(chat_id, msg_id, "🤷")
                self.say(chat_id, words(result, _), reply_to=msg_id, buzz=True)
                log.warning("typing a chat message into %s failed: %s", command.session,
                            result.error)
                return "failed"
            case Declined(reason=Reason.EMPTY):
                return "refused"  # nothing to say of a message with nothing in it
        self.say(chat_id, words(result, _), reply_to=msg_id, session=command.session)
        return "refused"

    def audit(self, action: str, who: dict[str, Any] | Sender, **fields: Any) -> None:
        """An audit record naming who did it (id, label, role)."""
        if isinstance(who, Sender):
            who = {"user_id": who.user_id, "label": who.label, "role": who.role}
        self.port.audit_action(action, Who(str(who.get("label", "")), who.get("user_id"),
                                           str(who.get("role", ""))), **fields)

    async def release(self, session: str, chat_id: int, msg_id: int, text: str) -> None:
        """A held message may go in now (the registry's ``release`` output): the daemon
        types it with the author it kept with it."""
        await self._send(SendPrompt(NOBODY, session, text, msg_id, chat_id,
                                    style=self._style(chat_id), queued=True,
                                    submitting=self._acting(chat_id, msg_id)))

    # -- session control -----------------------------------------------------------

    async def wait_ready(self, session: str, timeout: float = READY_TIMEOUT) -> bool | None:
        """Wait until a new session's Claude Code has started (its SessionStart arrived):
        True; False when ``timeout`` passed first; None when the session ended first (its
        first message must not go to a later session of the same name)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline:
            sess = self.registry.get(session)
            if sess is not None and sess.state == State.READY:
                await asyncio.sleep(READY_SETTLE)
                return True
            if sess is not None and sess.state == State.GONE:
                return None
            await asyncio.sleep(0.1)
        return False

    async def answer_questions(self, ask: QuestionAsk, sender: Sender, *,
                               decline: bool = False) -> PortResult:
        """Answer an AskUserQuestion dialog with ``ask.answers``, or decline it (Esc);
        the daemon presses its keys, the verdict line follows from its
        ``request_answered`` output."""
        answers = None if decline else [
            QuestionAnswer(list(a.get("picks", [])), a.get("text", "")) for a in ask.answers]
        return await self.port.ask(AnswerQuestion(sender, ask.session, ask.key,
                                                     answers))



def refusal(sender: Sender, what: Right, sess: Session | None = None) -> str | None:
    """``people.refusal`` in the chat's words (the current locale)."""
    return people.refusal(sender, what, sess, tr=_)


