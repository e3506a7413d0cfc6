"""The use cases, one frozen record each, every one naming who asks (``Person``).

Session names are internal (``claude-jim``; ``claude-jim@box`` on a hub).  A surface
builds one, hands it to the service's ``ask`` and renders the result it gets back.  Each
record's ``right`` is what its person needs: ``Service.ask`` checks it once
(``port.rights.check``) before the use case runs, and the chat's handler flags are read
off it (``bot.rights``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Callable, ClassVar, Literal, Mapping, Sequence

from aipager.port.forms import FormAction
from aipager.port.rights import Right
from aipager.port.who import Person

class Mode(StrEnum):
    """The permission mode a session starts in (Claude Code's ``--permission-mode``).

    Claude Code's own default needs no flag; skipping every permission is not offered
    from the phone (a member's task would answer no dialog at all)."""

    #: Claude Code's own (``auto`` in 2.1: ordinary commands run without asking)
    CLAUDE = ""
    AUTO = "auto"
    #: every tool call that needs a permission asks
    ASK = "default"
    #: file edits go through without asking, commands ask
    EDITS = "acceptEdits"
    #: Claude plans and changes nothing until the plan is accepted
    PLAN = "plan"


#: the answers a permission request takes
AnswerKind = Literal["allow", "allow_always", "deny", "stop"]


@dataclass(frozen=True)
class QuestionAnswer:
    """One question's answer: the options picked (their indexes) and/or a typed text."""

    picks: list[int] = field(default_factory=list)
    text: str = ""


@dataclass(frozen=True)
class OnSession:
    """What every use case for one session names: who asks, and the session (a hub routes
    the command by it, ``HubPort.route``)."""

    who: Person
    session: str


@dataclass(frozen=True)
class AnswerForm(OnSession):
    """Answer an MCP server's form (an elicitation): ``accept`` with ``content`` (field →
    value, checked against the form before it goes), or ``decline`` / ``cancel`` it."""

    right: ClassVar[Right] = "approve"
    key: str
    action: FormAction
    content: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SendPrompt(OnSession):
    """A person's message for a session: typed now with its permission note, or held.

    ``msg_id``/``chat_id`` name it on its surface (the chat's message, the page's own
    ids); ``queued``: the daemon held it and released it now (typed, never held again),
    with the author the daemon kept with it (``who`` is not read: ``who.NOBODY``).
    ``submitting`` is called once it is pasted, right before its Enter."""

    right: ClassVar[Right] = "prompt"
    text: str
    msg_id: int
    chat_id: int | str
    style: str | None = None
    #: a reply: what it replies to, shown to Claude (``{"text", "sent_at"}``)
    reply_to: Mapping[str, Any] | None = None
    queued: bool = False
    submitting: Callable[[], None] | None = field(default=None, compare=False)


@dataclass(frozen=True)
class AnswerRequest(OnSession):
    """Allow, always allow (every suggestion, or the one numbered ``suggestion``), deny
    (``reason`` goes to Claude) or deny and stop a permission request.

    ``edit``: allow the call with this corrected command, path or URL instead, once the
    session's own safety policy allows it (the same check as the hook's)."""

    right: ClassVar[Right] = "approve"
    key: str
    kind: AnswerKind
    reason: str = ""
    suggestion: int | None = None
    edit: str | None = None


@dataclass(frozen=True)
class AnswerQuestion(OnSession):
    """Answer every question of an AskUserQuestion dialog; None declines it."""

    right: ClassVar[Right] = "approve"
    key: str
    answers: Sequence[QuestionAnswer] | None


@dataclass(frozen=True)
class StartSession:
    """Start session ``name`` in ``folder`` ("": the machine's default folder)."""

    right: ClassVar[Right] = "manage"
    who: Person
    name: str
    folder: str = ""
    resume_id: str = ""
    mode: Mode = Mode.CLAUDE
    #: the coding agent it runs (``aipager.agents``: "claude", "codex"; "" Claude Code)
    agent: str = ""


@dataclass(frozen=True)
class StopTask(OnSession):
    """⏹: interrupt what the session is doing."""

    right: ClassVar[Right] = "stop"


@dataclass(frozen=True)
class KillSession(OnSession):
    """End the session (its dtach and Claude Code)."""

    right: ClassVar[Right] = "manage"


@dataclass(frozen=True)
class TrustFolder(OnSession):
    """Answer Claude Code's folder trust dialog: trust it, or (``yes=False``) exit."""

    right: ClassVar[Right] = "manage"
    yes: bool = True


@dataclass(frozen=True)
class CompactSession(OnSession):
    """Claude Code's own ``/compact`` for the session's conversation."""

    right: ClassVar[Right] = "prompt"


@dataclass(frozen=True)
class SwitchModel(OnSession):
    """The session (alone) goes on with ``model`` (an alias such as ``opus`` or a model id)."""

    right: ClassVar[Right] = "manage"
    model: str


@dataclass(frozen=True)
class ResumeSession(OnSession):
    """Start an ended session again with its conversation, in its folder."""

    right: ClassVar[Right] = "manage"


@dataclass(frozen=True)
class ShowChanges(OnSession):
    """``/diff``: what the session changed in its folder (its git work tree), as far as
    the asker's task could read it."""

    right: ClassVar[Right] = "prompt"


@dataclass(frozen=True)
class AssignRole:
    """Make member ``user_id`` a ``role`` (``"none"``: not a member any more).  A new
    member is labelled ``wanted`` (their name) unless it would pass for someone or
    something else; a member keeps the label they have."""

    right: ClassVar[Right] = "manage"
    who: Person
    user_id: int
    role: str
    wanted: str = ""


@dataclass(frozen=True)
class InviteAs:
    """Invite one person as ``role``: the service makes a code, valid for a day and once,
    that the person hands back with ``JoinTeam``."""

    right: ClassVar[Right] = "manage"
    who: Person
    role: str


@dataclass(frozen=True)
class JoinTeam:
    """``who`` (a stranger: their Telegram id and name) joins with an invitation's ``code``;
    they are labelled ``wanted`` unless it would pass for someone or something else."""

    right: ClassVar[Right] = "join"
    who: Person
    code: str
    wanted: str = ""


@dataclass(frozen=True)
class KeepFiles:
    """Files ``who`` sends for a prompt (name and bytes each), kept in their own folder on
    the machine whose surface they used: the floor lets only their tasks and the owner's
    read it, and the prompt then names the paths.  Not a session's command (a hub keeps
    them and sends them on to a host with the prompt), so ``session`` only says what for;
    ``via``: the surface (audited)."""

    right: ClassVar[Right] = "prompt"
    who: Person
    files: tuple[tuple[str, bytes], ...]
    session: str = ""
    via: Literal["chat", "page"] = "chat"


@dataclass(frozen=True)
class ReadAudit:
    """The audit log's last ``limit`` records (what was done, by whom), newest first."""

    right: ClassVar[Right] = "manage"
    who: Person
    limit: int = 100


Command = (SendPrompt | AnswerRequest | AnswerQuestion | AnswerForm | StartSession | StopTask | KillSession
           | TrustFolder | ShowChanges | CompactSession | SwitchModel | ResumeSession | AssignRole
           | InviteAs | JoinTeam | KeepFiles | ReadAudit)

__all__ = ["AnswerForm", "AnswerKind", "AnswerQuestion", "AnswerRequest", "AssignRole", "Command",
           "CompactSession", "InviteAs", "JoinTeam", "KeepFiles", "KillSession", "Mode",
           "OnSession", "QuestionAnswer", "ReadAudit", "ResumeSession", "SendPrompt", "ShowChanges",
           "StartSession", "StopTask", "SwitchModel", "TrustFolder"]
