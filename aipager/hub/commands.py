"""What the hub sends a host, and what comes back.

``Ask`` carries a use case for one of the host's sessions, which the host's own service
decides and does (``run(port)``); ``PutFile`` carries a piece of a file from the phone
ahead of the prompt that names it.  Session names in a command are the host's own
(``claude-jim``, never ``claude-jim@box``).  A result travels as ``{"ok": value}`` (a
service's result as ``{"result": …}``, ``usecases``) or ``{"error": {"type",
"message"}}``, raised again on the hub as the same class when it is one of aipager's
session errors or a ``ValueError``, else as ``HostFailed``.

``command_from_json(command_to_json(c)) == c`` and the same for results, for
every kind (``tests/hub/test_codec.py``).
"""

from __future__ import annotations

import dataclasses
import os
import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping

from aipager.hub import transfer, usecases
from aipager.hub.shape import CodecError
from aipager.port.commands import Command as PortCommand
from aipager.port.commands import SendPrompt, StartSession
from aipager.port.door import Port
from aipager.port.results import Result
from aipager.proto import errors


class HostFailed(errors.SessionError):
    """A host could not do what the hub asked (the message says why)."""


class HostUnreachable(errors.SessionError):
    """A host did not answer in time (offline, or the broker is down)."""


@dataclass(frozen=True)
class Command:
    name: ClassVar[str] = ""

    async def run(self, port: Port) -> Any:
        raise NotImplementedError


@dataclass(frozen=True)
class Ask(Command):
    """A use case for one of this host's sessions, as the person asked it on the hub: this
    host's own service decides it (their rights from ``who``, this host's sessions and
    safety policy) and does it; the answer is its result record (``port.results``)."""

    name: ClassVar[str] = "ask"
    #: the service's command (``port.commands``), naming this host's session
    command: PortCommand
    #: the hub's paths in a prompt's text → the files sent ahead (``transfer``)
    files: Mapping[str, str] = field(default_factory=dict)

    async def run(self, port: Port) -> Result:
        command = self.command
        if self.files and isinstance(command, SendPrompt):
            command = dataclasses.replace(
                command, text=transfer.rewrite(port.env, command.text, self.files))
        if isinstance(command, StartSession) and command.folder \
                and not os.path.isdir(command.folder):
            # the hub's page offers the hub's folders: one this host lacks is its default
            # (the result names the folder it started in)
            command = dataclasses.replace(command, folder="")
        # this host's one service (``main`` composed it)
        return await port.ask(command)


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

    async def run(self, port: Port) -> None:
        transfer.put(port.env, self.file_id, self.filename, self.part, self.parts, self.data,
                     self.person)


#: every command by name
COMMANDS: dict[str, type[Command]] = {cls.name: cls for cls in (Ask, PutFile)}

#: commands the hub sends without waiting for their result (a file's pieces: the prompt
#: after them waits for its own answer)
FIRE_AND_FORGET = frozenset({PutFile.name})


def command_to_json(cmd: Command) -> dict[str, Any]:
    doc: dict[str, Any] = {"name": cmd.name}
    for f in dataclasses.fields(cmd):
        value = getattr(cmd, f.name)
        if isinstance(cmd, Ask) and f.name == "command":
            value = usecases.command_to_json(value)
        elif isinstance(value, Mapping):
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
    if cls is Ask:
        kwargs["command"] = usecases.command_from_json(kwargs.get("command"))
        files = kwargs.get("files", {})
        if not isinstance(files, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
            msg = "an ask whose files are not paths to file ids"
            raise CodecError(msg)
    try:
        return cls(**kwargs)
    except (TypeError, AttributeError) as exc:
        msg = f"a {cls.name} command that does not fit: {exc}"
        raise CodecError(msg) from exc


# -- results --------------------------------------------------------------------------

#: errors a host's answer may name that the hub raises as themselves
_ERRORS: dict[str, type[Exception]] = {cls.__name__: cls for cls in (
    errors.SessionError, errors.SessionNotFound, errors.InvalidSessionName,
    errors.DaemonError, errors.PolicyError, errors.UnsafePath, ValueError,
    HostFailed, HostUnreachable)}


def result_to_json(value: Any) -> dict[str, Any]:
    if isinstance(value, usecases.RESULT_TYPES):
        return {"ok": {"result": usecases.result_to_json(typing.cast(Result, value))}}
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
    if isinstance(value, dict) and "result" in value:
        return usecases.result_from_json(value["result"]), None
    if value is not None and not isinstance(value, (bool, int, str)):
        msg = f"an answer of type {type(value).__name__}"
        raise CodecError(msg)
    return value, None
