"""The port's calls as records: what the hub sends a host, and what comes back.

Each command is a frozen dataclass named after the ``DaemonPort`` method it
calls; ``run(port)`` makes that call on the host's own daemon.  Session names
in a command are the host's own (``claude-jim``, never ``claude-jim@box``).
A result travels as ``{"ok": value}`` (an ``Outcome`` as ``{"outcome": name}``)
or ``{"error": {"type", "message"}}``, raised again on the hub as the same
class when it is one of aipager's session errors or a ``ValueError``, else as
``HostFailed``.

``command_from_json(command_to_json(c)) == c`` and the same for results, for
every kind (``tests/hub/test_codec.py``).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping, get_args

from aipager.proto import errors
from aipager.daemon.dialogkeys import Answer as QuestionAnswer
from aipager.daemon.port import AnswerKind, DaemonPort, Outcome, Who
from aipager.daemon.worktree import Diff
from aipager.hub import shape, transfer
from aipager.hub.codec import CodecError


class HostFailed(errors.SessionError):
    """A host could not do what the hub asked (the message says why)."""


class HostUnreachable(errors.SessionError):
    """A host did not answer in time (offline, or the broker is down)."""


@dataclass(frozen=True)
class Command:
    name: ClassVar[str] = ""

    async def run(self, port: DaemonPort) -> Any:
        raise NotImplementedError


@dataclass(frozen=True)
class QueueChatMessage(Command):
    name: ClassVar[str] = "queue_chat_message"
    session: str
    msg_id: int | str
    text: str
    chat_id: int | str = ""
    sender: str = ""
    held: bool = False
    held_for: str = "task"
    #: the hub's paths in ``text`` → the files sent ahead (``transfer``)
    files: Mapping[str, str] = field(default_factory=dict)

    async def run(self, port: DaemonPort) -> None:
        text = transfer.rewrite(port.env, self.text, self.files)
        port.queue_chat_message(self.session, self.msg_id, text, chat_id=self.chat_id,
                                sender=self.sender, held=self.held, held_for=self.held_for)


@dataclass(frozen=True)
class DropChatMessage(Command):
    name: ClassVar[str] = "drop_chat_message"
    session: str
    msg_id: int | str

    async def run(self, port: DaemonPort) -> None:
        port.drop_chat_message(self.session, self.msg_id)


@dataclass(frozen=True)
class AnswerRequest(Command):
    name: ClassVar[str] = "answer_request"
    session: str
    key: str
    kind: AnswerKind
    who: Who
    reason: str = ""
    suggestion: int | None = None
    #: the corrected command or path (edit then allow), checked by the host's own policy
    edit: str | None = None

    async def run(self, port: DaemonPort) -> Any:
        return await port.answer_request(self.session, self.key, self.kind, self.who,
                                         reason=self.reason, suggestion=self.suggestion,
                                         edit=self.edit)


@dataclass(frozen=True)
class AnswerQuestion(Command):
    name: ClassVar[str] = "answer_question"
    session: str
    key: str
    who: Who
    answers: tuple[QuestionAnswer, ...] | None = None

    async def run(self, port: DaemonPort) -> Any:
        answers = None if self.answers is None else list(self.answers)
        return await port.answer_question(self.session, self.key, self.who, answers)


@dataclass(frozen=True)
class StartSession(Command):
    name: ClassVar[str] = "start_session"
    label: str
    resume_id: str = ""
    cwd: str = ""
    #: the permission mode (``port.commands.Mode``'s value; "": Claude Code's own)
    mode: str = ""

    async def run(self, port: DaemonPort) -> str:
        # the hub's folder may not exist here: then this host's home
        cwd = self.cwd if self.cwd and os.path.isdir(self.cwd) else port.env.get("HOME", "")
        if self.mode:
            return await port.start_session(self.label, resume_id=self.resume_id, cwd=cwd,
                                            mode=self.mode)
        return await port.start_session(self.label, resume_id=self.resume_id, cwd=cwd)


@dataclass(frozen=True)
class StopSession(Command):
    name: ClassVar[str] = "stop_session"
    session: str

    async def run(self, port: DaemonPort) -> bool:
        return await port.stop_session(self.session)


@dataclass(frozen=True)
class KillSession(Command):
    name: ClassVar[str] = "kill_session"
    label: str

    async def run(self, port: DaemonPort) -> bool:
        return await port.kill_session(self.label)


@dataclass(frozen=True)
class SwitchModel(Command):
    name: ClassVar[str] = "switch_model"
    session: str
    model: str

    async def run(self, port: DaemonPort) -> None:
        await port.switch_model(self.session, self.model)


@dataclass(frozen=True)
class SessionChanges(Command):
    """``/diff``: the host decides what the asker's role may read, with its own policy."""

    name: ClassVar[str] = "session_changes"
    session: str
    role: str
    user_id: int | None = None

    async def run(self, port: DaemonPort) -> Diff:
        return await port.session_changes(self.session, role=self.role, user_id=self.user_id)


@dataclass(frozen=True)
class TypePrompt(Command):
    name: ClassVar[str] = "type_prompt"
    session: str
    text: str
    note: Mapping[str, Any] = field(default_factory=dict)
    #: the hub's paths in ``text`` → the files sent ahead (``transfer``)
    files: Mapping[str, str] = field(default_factory=dict)

    async def run(self, port: DaemonPort) -> None:
        text = transfer.rewrite(port.env, self.text, self.files)
        await port.type_prompt(self.session, text, note=dict(self.note))


@dataclass(frozen=True)
class TypeText(Command):
    name: ClassVar[str] = "type_text"
    session: str
    text: str

    async def run(self, port: DaemonPort) -> None:
        await port.type_text(self.session, self.text)


@dataclass(frozen=True)
class PutFile(Command):
    """One piece of a file from the phone, ahead of the prompt that names it."""

    name: ClassVar[str] = "put_file"
    file_id: str
    filename: str
    part: int
    parts: int
    data: str
    #: the person's folder the hub keeps it in (``transfer.person_of``): the host keeps its
    #: copy in that person's folder too ("": in none)
    person: str = ""

    async def run(self, port: DaemonPort) -> None:
        transfer.put(port.env, self.file_id, self.filename, self.part, self.parts, self.data,
                     self.person)


#: every command by name
COMMANDS: dict[str, type[Command]] = {cls.name: cls for cls in (
    QueueChatMessage, DropChatMessage, AnswerRequest, AnswerQuestion, StartSession,
    StopSession, KillSession, SwitchModel, SessionChanges, TypePrompt, TypeText, PutFile)}

#: commands the hub sends without waiting for their result (the port's sync calls, and a
#: file's pieces: the prompt after them waits for its own answer)
FIRE_AND_FORGET = frozenset({QueueChatMessage.name, DropChatMessage.name, PutFile.name})


def command_to_json(cmd: Command) -> dict[str, Any]:
    doc: dict[str, Any] = {"name": cmd.name}
    for f in dataclasses.fields(cmd):
        value = getattr(cmd, f.name)
        if isinstance(value, Who):
            value = dataclasses.asdict(value)
        elif f.name == "answers" and value is not None:
            value = [dataclasses.asdict(a) for a in value]
        elif f.name in ("note", "files"):
            value = dict(value)
        doc[f.name] = value
    return doc


def command_from_json(doc: Any) -> Command:
    """Raises:
        CodecError: not a command this version knows, or fields that do not fit."""
    if not isinstance(doc, dict) or doc.get("name") not in COMMANDS:
        msg = f"unknown command {doc.get('name') if isinstance(doc, dict) else doc!r}"
        raise CodecError(msg)
    cls = COMMANDS[doc["name"]]
    kwargs = {f.name: doc[f.name] for f in dataclasses.fields(cls) if f.name in doc}
    try:
        if isinstance(kwargs.get("who"), dict):
            kwargs["who"] = Who(**kwargs["who"])
        if kwargs.get("answers") is not None:
            kwargs["answers"] = tuple(QuestionAnswer(list(a.get("picks") or []),
                                                     str(a.get("text") or ""))
                                      for a in kwargs["answers"])
        return cls(**kwargs)
    except (TypeError, AttributeError) as exc:
        msg = f"a {cls.name} command that does not fit: {exc}"
        raise CodecError(msg) from exc


# -- results --------------------------------------------------------------------------

#: every outcome the port names (one list: ``port.Outcome``), and the other records a
#: command answers with
_OUTCOMES: dict[str, type] = {cls.__name__: cls for cls in (*get_args(Outcome), Diff)}
#: errors a host's answer may name that the hub raises as themselves
_ERRORS: dict[str, type[Exception]] = {cls.__name__: cls for cls in (
    errors.SessionError, errors.SessionNotFound, errors.InvalidSessionName,
    errors.DaemonError, errors.PolicyError, errors.UnsafePath, ValueError,
    HostFailed, HostUnreachable)}


def result_to_json(value: Any) -> dict[str, Any]:
    if type(value).__name__ in _OUTCOMES and dataclasses.is_dataclass(value) \
            and not isinstance(value, type):
        return {"ok": {"outcome": type(value).__name__, **dataclasses.asdict(value)}}
    if value is None or isinstance(value, (bool, int, str)):
        return {"ok": value}
    msg = f"a command result of type {type(value).__name__} cannot travel"
    raise CodecError(msg)


def error_to_json(exc: BaseException) -> dict[str, Any]:
    kind = next((name for name, cls in _ERRORS.items() if type(exc) is cls),
                HostFailed.__name__)
    return {"error": {"type": kind, "message": str(exc) or type(exc).__name__}}


def result_from_json(doc: Any) -> Any:
    """The value a host's answer holds; its error raised again.

    Raises:
        CodecError: not an answer.
        SessionError, SessionNotFound, ValueError, …, HostFailed: what the host raised.
    """
    value, error = read_answer(doc)
    if error is not None:
        raise error
    return value


def read_answer(doc: Any) -> tuple[Any, Exception | None]:
    """A host's answer as (its value, None) or (None, the error it raised, rebuilt).

    Raises:
        CodecError: not an answer (nothing else, whatever ``doc`` holds).
    """
    if not isinstance(doc, dict):
        msg = "an answer must be a JSON object"
        raise CodecError(msg)
    if "error" in doc:
        err = doc["error"] if isinstance(doc["error"], dict) else {}
        cls = _ERRORS.get(str(err.get("type")), HostFailed)
        return None, cls(str(err.get("message") or "the host failed")[:2000])
    if "ok" not in doc:
        msg = "an answer without ok or error"
        raise CodecError(msg)
    value = doc["ok"]
    if isinstance(value, dict) and value.get("outcome") in _OUTCOMES:
        cls = _OUTCOMES[value["outcome"]]
        try:
            # JSON has no tuples: a tuple field comes back as the list it travelled as
            outcome = cls(**{k: tuple(v) if isinstance(v, list) else v
                             for k, v in value.items() if k != "outcome"})
            shape.check(outcome)
        except (TypeError, shape.ShapeError) as exc:
            msg = f"a {cls.__name__} answer that does not fit: {exc}"
            raise CodecError(msg) from exc
        return outcome, None
    if value is not None and not isinstance(value, (bool, int, str)):
        msg = f"an answer of type {type(value).__name__}"
        raise CodecError(msg)
    return value, None
