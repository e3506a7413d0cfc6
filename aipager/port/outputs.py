"""The output seam: everything the daemon wants a person to see goes through a Notifier.

Handlers never talk to Telegram.  They hand ``Output`` records to a
``Notifier``; the chat's ``ChatNotifier`` (``aipager.bot.notify``) queues them
for the outbox, tests use ``RecordingNotifier``.

``emit`` is synchronous on purpose: handlers stay plain functions over the
registry (fast, testable without an event loop) and a real notifier only has
to enqueue.

Each kind is a frozen dataclass below (a tagged union: ``kind`` names it, a
consumer matches on the class); the text a person reads is built by
``render`` before it gets here.  ``data`` shows the kind's own fields as a
dict (notices: ``notice`` plus their ``extra``), for logs and tests.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar, Iterable, Protocol


class NoticeName(StrEnum):
    """The one-line notices (``Notice.notice``)."""

    COMPACTING = "compacting"
    COMPACTED = "compacted"
    CONTEXT_WARNING = "context_warning"
    STILL_WAITING = "still_waiting"
    SESSION_END = "session_end"
    SAFETY_BLOCKED = "safety_blocked"
    FILES_REFUSED = "files_refused"
    MEMORY_CAP = "memory_cap"
    API_ERROR = "api_error"
    LATE_TAP = "late_tap"
    TYPING_CUT = "typing_cut"
    #: a message Claude Code did not take as it was typed: given up, its author told
    NOT_TAKEN = "not_taken"
    #: a dialog only the computer can answer (a teammate in its own tmux pane asks)
    AT_COMPUTER = "at_computer"
    #: a session's program shows a dialog before it starts that no hook announced (Codex's
    #: first-start offers): what it asks, to be answered at the computer
    START_DIALOG = "start_dialog"
    #: a hub's own: a host sent a record the hub cannot read (``extra``: host, reason)
    HUB_BAD_RECORD = "hub_bad_record"
    #: a hub's own: its link to the hosts failed or is back (``extra``: state, reason)
    HUB_LINK = "hub_link"
    #: a hub's own: a host went offline or is back (``extra``: host, state, since)
    HOST_STATE = "host_state"
    #: a hub's own: Claude sent files on a host, which stay there (``extra``: host, kept
    #: names, refused ``{path, reason}``)
    FILES_ON_HOST = "files_on_host"


@dataclass(frozen=True)
class Output:
    """What every output has: the session it is about and the text a person reads."""

    kind: ClassVar[str] = ""
    session: str
    text: str = ""
    #: the journal number of the datagram whose handling made it (``journal``); 0 when a
    #: timer or a tap made it
    origin: int = 0
    #: made again while the journal was replayed after a hard kill: a chat that already
    #: showed outputs up to this ``origin`` skips it (nothing is shown twice)
    replayed: bool = False

    @property
    def data(self) -> dict[str, Any]:
        """The kind's own fields (not ``session``, ``text``, ``origin``, ``replayed``)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if f.name not in _COMMON}


_COMMON = frozenset(f.name for f in dataclasses.fields(Output))


@dataclass(frozen=True)
class Card(Output):
    """The activity card of ``task`` changed; ``text`` is its whole rendering (``render.card``)."""

    kind: ClassVar[str] = "card"
    task: int = 0
    #: the task is over and no work (agents, background commands) runs
    final: bool = False


@dataclass(frozen=True)
class Notice(Output):
    """A one-line notice; ``extra`` holds what its name implies (``pct``, ``reason`` …)."""

    kind: ClassVar[str] = "notice"
    notice: NoticeName = NoticeName.API_ERROR
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def data(self) -> dict[str, Any]:
        return {"notice": str(self.notice), **self.extra}


@dataclass(frozen=True)
class Prompted(Output):
    """A prompt the chat has no message of opened ``task``: typed at the computer (keyboard
    or ``aipager send``), or sent from the page (``by`` names its sender there).  The chat
    shows it, so an answer never arrives without its question."""

    kind: ClassVar[str] = "prompted"
    task: int = 0
    #: who sent it from the page ("": typed at the computer)
    by: str = ""


@dataclass(frozen=True)
class Answer(Output):
    """Claude's answer at the end of ``task``, delivered once (``digest``)."""

    kind: ClassVar[str] = "answer"
    digest: str = ""
    task: int = 0
    prompt_id: str = ""


@dataclass(frozen=True)
class Permission(Output):
    """A permission request; ``key`` names it for taps (``Daemon.answer_request``)."""

    kind: ClassVar[str] = "permission"
    key: str = ""
    tool: str = ""
    detail: str = ""
    #: of allow, deny, stop, always, s0, s1, s2 (one of Claude Code's suggestions each)
    buttons: list[str] = field(default_factory=list)
    #: the labels of the s0… buttons (``render.suggestion_label``)
    scopes: list[str] = field(default_factory=list)
    separate: bool = False
    request_id: str = ""
    #: the waiting hook's reply socket ("" when no hook waits: keys answer the dialog)
    reply_addr: str = ""
    agent_id: str = ""
    #: a Write/Edit's own old and new lines, for chats that show previews
    preview: str = ""
    #: the unified diff a Write/Edit would make to the file on disk ("" when none could be made)
    diff: str = ""
    #: shown again because this tap reached its hook too late (``replies.late``)
    late_answer: str = ""


@dataclass(frozen=True)
class Question(Output):
    """An AskUserQuestion: the first question's ``options``, and every one in ``questions``
    (``{question, header, options, multi}``)."""

    kind: ClassVar[str] = "question"
    key: str = ""
    options: list[Any] = field(default_factory=list)
    multi_select: bool = False
    separate: bool = False
    agent_id: str = ""
    questions: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Form(Output):
    """An MCP server's form (an elicitation): its ``message`` and ``fields``
    (``port.forms.Field.as_json``), answered through the hook while ``reply_addr`` is set;
    without it (or with no fields the phone can ask) only the terminal answers it."""

    kind: ClassVar[str] = "form"
    key: str = ""
    server: str = ""
    message: str = ""
    fields: list[dict[str, Any]] = field(default_factory=list)
    request_id: str = ""
    reply_addr: str = ""
    agent_id: str = ""
    separate: bool = False


@dataclass(frozen=True)
class _Verdict(Output):
    """What a request's verdict line is made of: ``via`` (``hook``, ``keys``; "" the
    terminal), ``answer`` (the tap, or ``question_answer`` / ``question_decline``), ``who``."""

    key: str = ""
    request_id: str = ""
    via: str = ""
    answer: str = ""
    who: str = ""
    #: the one suggestion a scoped "always" button remembered (Claude Code's own dict:
    #: a rule, a folder or a mode, with its destination); empty for the others
    scope: dict[str, Any] = field(default_factory=dict)
    #: an allow of a call a person corrected first (✏️ Edit): the command or path it ran
    #: with instead of the one Claude asked for; "" for the others
    edited: str = ""


@dataclass(frozen=True)
class RequestClosed(_Verdict):
    """A request or question is over (answered in the terminal, or by a tap the waiting hook
    took, or by keys: then ``via``, ``answer`` and ``who`` say how); late taps type nothing."""

    kind: ClassVar[str] = "request_closed"


@dataclass(frozen=True)
class RequestAnswered(_Verdict):
    """A tap answered a request whose hook no longer waited: the daemon answered its
    terminal dialog with keys (``via`` is ``keys``).  The request stays open until its tool
    runs; the chat shows who answered now."""

    kind: ClassVar[str] = "request_answered"


@dataclass(frozen=True)
class RequestUpdate(Output):
    """The hook waiting on a request stopped (``reply_addr`` cleared) or a new one waits."""

    kind: ClassVar[str] = "request_update"
    key: str = ""
    request_id: str = ""
    reply_addr: str = ""


@dataclass(frozen=True)
class Reaction(Output):
    """Set ``emoji`` on chat message ``msg_id`` (of ``chat_id``)."""

    kind: ClassVar[str] = "reaction"
    msg_id: str = ""
    chat_id: str = ""
    emoji: str = ""


@dataclass(frozen=True)
class Release(Output):
    """A held chat message may now be typed; ``text`` is the message."""

    kind: ClassVar[str] = "release"
    msg_id: str = ""
    chat_id: str = ""


@dataclass(frozen=True)
class Diff(Output):
    """A Write/Edit preview (``text``: the unified diff), for chats that want them."""

    kind: ClassVar[str] = "diff"
    tool: str = ""
    row: str = ""


@dataclass(frozen=True)
class FileCopy:
    """A file Claude sends, checked and copied by the daemon (owner-only, its own name in
    ``path``): what a surface uploads or offers for download."""

    path: str
    filename: str
    photo: bool = False


@dataclass(frozen=True)
class FileRefusal:
    """A file Claude asked to send that is not sent: ``code`` and ``reason`` say why."""

    path: str
    code: str
    reason: str


@dataclass(frozen=True)
class Files(Output):
    """SendUserFile ran: ``files`` (absolute paths) of ``task``; ``text`` is its caption.

    The daemon checked each file as the hook did (the floor, secret-shaped names, the
    task's rules) and copied it at once, so a later change cannot swap what is sent:
    ``copies`` are what may go, ``refused`` what may not."""

    kind: ClassVar[str] = "files"
    files: list[str] = field(default_factory=list)
    cwd: str = ""
    task: int = 0
    tool_use_id: str = ""
    copies: list[FileCopy] = field(default_factory=list)
    refused: list[FileRefusal] = field(default_factory=list)


@dataclass(frozen=True)
class StateChanged(Output):
    """The session's state changed and no card says so (it started and is ready, it came
    back): a client that lists sessions reads them again.  ``text`` is the state."""

    kind: ClassVar[str] = "state"
    state: str = ""


#: every kind, by name
KINDS: dict[str, type[Output]] = {cls.kind: cls for cls in (
    Card, Notice, Answer, Permission, Question, Form, RequestClosed, RequestAnswered, RequestUpdate,
    Reaction, Release, Diff, Files, StateChanged)}


class Notifier(Protocol):
    def emit(self, out: Output) -> None:
        """Take one output; must not block or raise for delivery problems."""


class RecordingNotifier:
    """Keeps outputs in memory: the test fake, and the daemon's sink before the bot exists.

    Args:
        maxlen: keep only the most recent outputs (None keeps all; the daemon
            passes a bound so a long run cannot grow without limit).
    """

    def __init__(self, maxlen: int | None = None) -> None:
        self.outputs: deque[Output] = deque(maxlen=maxlen)

    def emit(self, out: Output) -> None:
        self.outputs.append(out)

    def of(self, kind: str, session: str | None = None) -> list[Output]:
        """Outputs of one kind, optionally for one session, oldest first."""
        return [o for o in self.outputs if o.kind == kind and (session is None or o.session == session)]

    def texts(self, kind: str, session: str | None = None) -> list[str]:
        return [o.text for o in self.of(kind, session)]

    def notices(self, name: str | None = None) -> list[str]:
        return [o.text for o in self.outputs
                if isinstance(o, Notice) and (name is None or o.notice == name)]

    def clear(self) -> None:
        self.outputs.clear()


class FanoutNotifier:
    """Sends every output to several notifiers (e.g. a log line and the recorder)."""

    def __init__(self, targets: Iterable[Notifier]) -> None:
        self._targets = tuple(targets)

    def add(self, target: Notifier) -> None:
        """One more target from now on (a client that starts after the daemon: the chat
        once ``aipager setup`` saved a config)."""
        self._targets = (*self._targets, target)

    def emit(self, out: Output) -> None:
        for target in self._targets:
            target.emit(out)
