"""The daemon's port: the one seam between the daemon and its clients.

The chat is its first client; the local web page and a hub of several machines
stand on the same seam.  A client asks through ``DaemonPort`` (a
``typing.Protocol``: ``Daemon`` implements it, the chat's unit tests use a fake)
and reads the daemon's ``Output`` records through a ``Notifier``.  Nothing else
of the daemon is a client's business: a client never changes the registry,
presses keys of its own or writes daemon settings.

What comes back is typed: an answer to a request is one of the frozen
``Outcome`` classes below (a tagged union a client dispatches with ``match``),
including the keystroke fallback the daemon took when no hook waited.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping, Protocol, Sequence

from aipager.port.model import Author, PromptNote, Session
from aipager.port.screen import Dialog, Kind, Seen
from aipager.port.results import Diff
# The records a client reads back live in ``aipager.port`` (below the daemon and every
# client); they are named here too for the clients still calling the daemon directly.
from aipager.port.commands import AnswerKind, Command, QuestionAnswer
from aipager.port.forms import FormAction
from aipager.port.results import (Already, ByHook, ByKeys, Gone, InTerminal, KeysFailed,
                                  Outcome, Refused, Result)
from aipager.port.who import Who


@dataclass(frozen=True)
class HostView:
    """One machine whose sessions the port shows (a hub of several machines)."""

    name: str
    #: this port's own machine
    local: bool = False
    online: bool = True
    #: when it was last heard from (0: never)
    last_seen: float = 0.0


class Remote(Protocol):
    """Other machines' sessions (a hub's hosts): a use case for one of them is decided and
    done by that machine's own service, with its own sessions and policy."""

    def route(self, command: Command) -> tuple[str, Command] | None:
        """The machine ``command`` is for and the command as that machine names its
        session; None: a session of this machine."""
        ...

    async def ask(self, machine: str, command: Command) -> Result:
        """``command`` decided and done on ``machine``, its result naming sessions as this
        port does (``claude-jim@box``).

        Raises:
            InvalidSessionName: a new session's name is none (as the local service)."""
        ...


class SessionsView(Protocol):
    """The sessions, read only (the registry)."""

    def __iter__(self) -> Iterator[Session]: ...

    def get(self, name: str) -> Session | None: ...

    def clock(self) -> float: ...


class DaemonPort(Protocol):
    """Everything a client may ask of the daemon.

    Session names are internal (``claude-<label>``) unless a method says label.
    """

    @property
    def env(self) -> Mapping[str, str]:
        """Where everything lives (``aipager.proto.paths``) and the knobs."""
        ...

    @property
    def started_at(self) -> float:
        """When this daemon started (a client skips outputs older than its own start)."""
        ...

    @property
    def sessions(self) -> SessionsView: ...

    @property
    def remote(self) -> Remote | None:
        """Where the use cases for other machines' sessions go (None: every session is
        this daemon's own)."""
        ...

    @property
    def stopping(self) -> bool:
        """The daemon shuts down (SIGINT/SIGTERM), so its clients stop: what one says now is
        its last (a client stopped for another reason says nothing of a stop)."""
        ...

    # -- chat messages -----------------------------------------------------------------

    def queue_chat_message(self, session: str, msg_id: int | str, text: str, *,
                           chat_id: int | str = "", sender: str = "", held: bool = False,
                           held_for: str = "task", author: Author | None = None) -> None: ...

    def drop_chat_message(self, session: str, msg_id: int | str) -> None: ...

    # -- requests ----------------------------------------------------------------------

    async def answer_request(self, session: str, key: str, kind: AnswerKind, who: Who, *,
                             reason: str = "", suggestion: int | None = None,
                             edit: str | None = None) -> Outcome: ...

    async def answer_question(self, session: str, key: str, who: Who,
                              answers: Sequence[QuestionAnswer] | None) -> Outcome: ...

    async def answer_form(self, session: str, key: str, who: Who, action: FormAction,
                          content: Mapping[str, Any]) -> Outcome: ...

    # -- sessions ----------------------------------------------------------------------

    async def start_session(self, label: str, *, resume_id: str = "", cwd: str = "",
                            mode: str = "", agent: str = "") -> str: ...

    async def stop_session(self, session: str) -> bool: ...

    async def kill_session(self, label: str) -> bool: ...

    async def switch_model(self, session: str, model: str) -> None: ...

    async def session_changes(self, session: str, *, role: str,
                              user_id: int | None) -> Diff:
        """What ``session`` changed in its folder's git work tree, as far as a task of
        ``role`` (``user_id``'s) may read it, decided by the session's own machine."""
        ...

    # -- typing ------------------------------------------------------------------------

    async def type_prompt(self, session: str, text: str, *, note: PromptNote,
                          submitting: Callable[[], None] | None = None) -> None: ...

    async def type_text(self, session: str, text: str) -> None: ...

    async def screen(self, session: str, wait: float = 0.0) -> Seen:
        """What the session's terminal shows now (``daemon.screen``): a dialog, the input
        line, or None when it cannot be read; with ``wait``, up to that long for it to show
        either."""
        ...

    async def answer_dialog(self, session: str, kind: Kind,
                            pick: Callable[[Dialog], int]) -> bool:
        """Choose ``pick(dialog)`` on the dialog of ``kind`` on screen; False when the
        screen shows no such dialog."""
        ...

    # -- the rest ----------------------------------------------------------------------

    def audit_action(self, action: str, who: Who, **fields: Any) -> None: ...

    def set_previews(self, on: bool) -> None: ...

    def add_facts(self, facts: Callable[[], dict[str, Any]]) -> None: ...

    def hosts(self) -> Sequence[HostView]:
        """The machines whose sessions ``sessions`` holds; none for a single machine (a
        session of another machine is named ``claude-<label>@<host>``)."""
        ...


__all__ = ["Already", "AnswerKind", "ByHook", "ByKeys", "DaemonPort", "Gone", "HostView",
           "InTerminal", "KeysFailed", "Outcome", "QuestionAnswer", "Refused", "SessionsView",
           "Who"]
