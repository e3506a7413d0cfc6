"""What the outbox sends, one frozen record a kind (``Op``), and how each is saved in the
chat state (``ChatState.pending``) so a restart sends what was left unsent.

Its own module so the chat state can hold ops typed without importing the outbox (which
reads the chat state)."""

from __future__ import annotations

import base64
from dataclasses import dataclass, fields
from typing import Any, ClassVar


@dataclass(frozen=True)
class _Op:
    """What every operation has: the chat it is for.  ``kind`` names it in the saved state."""

    kind: ClassVar[str] = ""
    chat_id: int

    def to_json(self) -> dict[str, Any]:
        """The op as saved in ``ChatState.pending`` (``from_json`` reads it back)."""
        doc: dict[str, Any] = {"kind": self.kind}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bytes):
                value = base64.b64encode(value).decode() if value else ""
            elif isinstance(value, tuple):
                value = list(value)
            doc[f.name] = value
        return doc


@dataclass(frozen=True)
class Post(_Op):
    """A new message (``text``, ``entities``, ``markup``, ``reply_to``); ``key`` set: remembered
    as a live message; ``session`` set: replies to it route there.

    ``low``: a reply to a non-member: sent after everything else in its chat, dropped when
    too many wait, never kept across a restart.

    ``buzz``: the phone notifies.  Off by default: progress (cards, the status line,
    notices, replies to what the person just did) arrives silently; what needs the
    person (the answer, a permission request, a question, a failure) buzzes, so a
    prompt makes one notification, not three.
    """

    kind: ClassVar[str] = "post"
    text: str
    entities: tuple[dict[str, Any], ...] = ()
    markup: dict[str, Any] | None = None
    reply_to: int | None = None
    key: str = ""
    session: str = ""
    low: bool = False
    buzz: bool = False
    #: its sending started (saved before the call): if it is still set when the message is
    #: sent again, Telegram may have shown it already (the connection dropped, or the daemon
    #: died mid-call), so it goes again marked ``REPEAT_MARK``
    sending: bool = False
    #: owed to the person (an answer, a request, a notice: ``put(urgent=True)``): it may
    #: use the part of the chat's pace silent messages leave (``SEND_RESERVE``)
    urgent: bool = False
    #: it tells of a message Telegram refused (``refused_notice``): refused in turn, it is
    #: not told of again (a flag, not its text: the text is in the chat's language)
    refusal: bool = False
    #: it stands for this many messages of its session folded (``folded_notice``)
    folded: int = 0


@dataclass(frozen=True)
class Live(_Op):
    """The message under ``key``, edited in place (sent first if new: then it replies to
    ``reply_to``, its replies route to ``session``, and ``pin`` pins it)."""

    kind: ClassVar[str] = "live"
    text: str
    key: str
    markup: dict[str, Any] | None = None
    reply_to: int | None = None
    session: str = ""
    pin: bool = False
    #: as ``Post.sending`` (for the first send; an edit repeats harmlessly)
    sending: bool = False
    #: the message's last edit (a card whose task ended): it may use the edit kept in
    #: reserve instead of waiting for the pace
    final: bool = False

    @property
    def background(self) -> bool:
        """Edits that yield to other edits when both wait (the pinned status line)."""
        return self.key == "status"


@dataclass(frozen=True)
class Upload(_Op):
    """A document (``filename``; ``data``, or ``path`` of a private copy that is removed
    once sent; ``caption``), or with ``photo`` a photo."""

    kind: ClassVar[str] = "upload"
    filename: str
    caption: str = ""
    data: bytes = b""
    path: str = ""
    photo: bool = False
    session: str = ""
    #: as ``Post.sending``
    sending: bool = False
    #: as ``Post.urgent`` (an answer's whole text, a request's whole diff)
    urgent: bool = False


@dataclass(frozen=True)
class React(_Op):
    """Reaction ``emoji`` on message ``msg_id``."""

    kind: ClassVar[str] = "react"
    msg_id: int
    emoji: str


@dataclass(frozen=True)
class Action(_Op):
    """A chat action ("typing"); best effort, never retried, never saved."""

    kind: ClassVar[str] = "action"
    action: str = "typing"


#: one thing to show (the outbox dispatches on the class with ``match``)
Op = Post | Live | Upload | React | Action
_KINDS: dict[str, type[_Op]] = {cls.kind: cls for cls in (Post, Live, Upload, React, Action)}
#: fields saved by older versions under another name: kind → {old name: new name}
_RENAMED = {"upload": {"text": "caption"}}


def from_json(doc: Any) -> Op | None:
    """An op saved by ``to_json`` (or by older versions: one record with every field of
    every kind); None when it is not one."""
    if not isinstance(doc, dict):
        return None
    cls = _KINDS.get(doc.get("kind"))  # type: ignore[arg-type]
    if cls is None:
        return None
    renamed = _RENAMED.get(cls.kind, {})
    names = {f.name: f for f in fields(cls)}
    args: dict[str, Any] = {}
    for name, value in doc.items():
        name = renamed.get(name, name) if name not in names else name
        if name not in names or name in args:
            continue
        if name == "data":
            value = base64.b64decode(value or "")
        elif name == "entities" and isinstance(value, list):
            value = tuple(value)
        if not _fits(value, str(names[name].type)):
            return None  # a damaged op: left out, never sent half right
        args[name] = value
    try:
        return cls(**args)  # type: ignore[return-value]
    except (TypeError, ValueError):
        return None


#: what each annotation of an op's fields takes, as JSON gave it back
_TAKES: dict[str, tuple[type, ...]] = {
    "int": (int,), "str": (str,), "bool": (bool,), "bytes": (bytes,),
    "int | None": (int, type(None)), "dict[str, Any] | None": (dict, type(None)),
    "tuple[dict[str, Any], ...]": (tuple,),
}


def _fits(value: Any, annotation: str) -> bool:
    takes = _TAKES.get(annotation)
    if takes is None:
        return True
    if isinstance(value, bool) and bool not in takes:
        return False  # (a bool is an int to isinstance)
    return isinstance(value, takes)


__all__ = ["Action", "Live", "Op", "Post", "React", "Upload", "from_json"]
