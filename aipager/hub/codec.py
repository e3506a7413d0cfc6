"""Outputs and sessions to and from JSON, as they cross the broker.

An ``Output`` travels as ``{"kind": <kind>, <every field>}``; ``output_from_json``
builds the same frozen dataclass again (``output_from_json(output_to_json(o)) ==
o`` for every kind: ``tests/hub/test_codec.py``).  A session travels as its
saved form (``Session.to_dict``) without what only the host's card needs (tool
rows, pending Agent calls, answered requests, answer digests).

Everything a host publishes is read here, once: ``read_out`` (its
``aipager.<host>.out`` records) and ``read_state`` (its session snapshots) turn
the bytes into typed records, or into a ``BadRecord`` saying why not.  Neither
raises for anything a host can send (garbage, the wrong shape, a record too big,
a session of another host's name): one malformed record once stopped the hub's
link for every host, and again after each restart, as it was never acknowledged.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any, ClassVar

import orjson

from aipager.port.model import Session
from aipager.port.outputs import KINDS, Notice, NoticeName, Output, Prompted
from aipager.hub import commands, shape
from aipager.hub.shape import CodecError
from aipager.proto import paths

#: every output kind by name (``notifier.KINDS`` leaves ``prompted`` out)
OUTPUT_KINDS: dict[str, type[Output]] = {**KINDS, Prompted.kind: Prompted}

#: notices only the hub itself makes: a host saying one would speak as the hub
HUB_ONLY = frozenset({NoticeName.HUB_BAD_RECORD, NoticeName.HUB_LINK, NoticeName.FILES_ON_HOST})

#: saved-session keys a hub has no use for (the host renders its own cards)
_SLIM = ("rows", "agent_calls", "hook_answered", "delivered_answers")


#: the largest record the hub reads from a host (the broker's own limit is 1 MiB): an
#: answer or a card is far smaller; a host's bigger record is set aside, not read
MAX_RECORD = 512 * 1024
#: characters of a bad record's reason kept (the dead letter, the chat)
REASON_CHARS = 160

#: a session's internal name on its host (``dtach``'s names: no ``@``, so a host cannot
#: name a session that reads as another host's ``jim@vm``)
_SESSION = re.compile(rf"{re.escape(paths.SESSION_PREFIX)}[A-Za-z0-9_-]{{1,64}}")
_LABEL = re.compile(r"[A-Za-z0-9_-]{1,64}")
_EPOCH = re.compile(r"[A-Za-z0-9_-]{1,64}")


# -- what a host's records are, read ---------------------------------------------------


@dataclass(frozen=True)
class OutputRecord:
    """One of the host's outputs, with the session it is about as it was then."""

    kind: ClassVar[str] = "output"
    epoch: str
    seq: int
    out: Output
    sess: Session | None
    stamp: tuple[int, int]


@dataclass(frozen=True)
class ReplyRecord:
    """The host's answer to command ``id``: its value, or the error it raised."""

    kind: ClassVar[str] = "reply"
    epoch: str
    seq: int
    id: str
    value: Any = None
    error: BaseException | None = None


@dataclass(frozen=True)
class Snapshot:
    """All of a host's sessions (also its sign of life)."""

    kind: ClassVar[str] = "snapshot"
    sessions: tuple[Session, ...]
    stamp: tuple[int, int]
    heartbeat: float | None
    #: the host's aipager version ("": older than the hubs that read it)
    version: str = ""
    #: how many commands the host refused since it started (unsigned, forged, stale or
    #: sent again): someone other than the hub publishes commands (None: not said)
    refused: int | None = None


@dataclass(frozen=True)
class BadRecord:
    """What a host sent that cannot be read, and why (short, for a person)."""

    kind: ClassVar[str] = "bad"
    reason: str
    size: int


HostRecord = OutputRecord | ReplyRecord | BadRecord
StateRecord = Snapshot | BadRecord


def read_out(data: bytes) -> HostRecord:
    """A record of ``aipager.<host>.out``: an output, an answer, or why it is neither.
    Never raises (whatever the bytes)."""
    return _guarded(data, _read_out)


def read_state(data: bytes) -> StateRecord:
    """A record of ``aipager.<host>.state``, or why it is not one.  Never raises."""
    return _guarded(data, _read_state)


def _guarded(data: bytes, read: Any) -> Any:
    size = len(data) if isinstance(data, (bytes, bytearray, memoryview)) else 0
    try:
        if size > MAX_RECORD:
            msg = f"{size} bytes, over the {MAX_RECORD} a record may have"
            raise CodecError(msg)
        return read(loads(bytes(data)))
    except RecursionError:
        return BadRecord("nested too deeply", size)
    except Exception as exc:  # noqa: BLE001 - anything a host's bytes cause is a bad record
        why = str(exc) if isinstance(exc, CodecError) else f"{type(exc).__name__}: {exc}"
        return BadRecord(why[:REASON_CHARS], size)


def _read_out(doc: Any) -> HostRecord:
    if not isinstance(doc, dict):
        msg = "a record must be a JSON object"
        raise CodecError(msg)
    epoch, seq = doc.get("epoch"), doc.get("seq")
    if not isinstance(epoch, str) or not _EPOCH.fullmatch(epoch):
        msg = "a record without its epoch"
        raise CodecError(msg)
    if isinstance(seq, bool) or not isinstance(seq, int) or not 0 < seq < 2**53:
        msg = "a record without its number"
        raise CodecError(msg)
    match doc.get("type"):
        case "output":
            out = output_from_json(doc.get("out"))
            sess = session_from_json(doc["sess"]) if doc.get("sess") is not None else None
            if sess is not None and sess.name != out.session:
                msg = f"an output of {out.session} carrying session {sess.name}"
                raise CodecError(msg)
            return OutputRecord(epoch, seq, out, sess, _stamp(doc.get("stamp")))
        case "reply":
            if not isinstance(doc.get("id"), str):
                msg = "an answer without its command's id"
                raise CodecError(msg)
            value, error = _answer(doc)
            return ReplyRecord(epoch, seq, doc["id"], value, error)
        case other:
            msg = f"unknown record type {other!r}"
            raise CodecError(msg)


def _answer(doc: dict[str, Any]) -> tuple[Any, BaseException | None]:
    return commands.read_answer(doc)


def _read_state(doc: Any) -> StateRecord:
    if not isinstance(doc, dict):
        msg = "a snapshot must be a JSON object"
        raise CodecError(msg)
    docs = doc.get("sessions") or []
    if not isinstance(docs, list):
        msg = "a snapshot's sessions must be a list"
        raise CodecError(msg)
    heartbeat = doc.get("heartbeat")
    if heartbeat is not None and (isinstance(heartbeat, bool) or not isinstance(
            heartbeat, (int, float)) or not 0.1 <= heartbeat <= 3600):
        msg = "a snapshot's heartbeat must be seconds"
        raise CodecError(msg)
    version = doc.get("version", "")
    if not isinstance(version, str) or len(version) > 40:
        msg = "a snapshot's version must be a short text"
        raise CodecError(msg)
    refused = doc.get("refused")
    if refused is not None and (isinstance(refused, bool) or not isinstance(refused, int)
                                or refused < 0):
        msg = "a snapshot's refused commands must be a count"
        raise CodecError(msg)
    return Snapshot(tuple(session_from_json(d) for d in docs), _stamp(doc.get("stamp")),
                    float(heartbeat) if heartbeat is not None else None, version, refused)


def _stamp(stamp: Any) -> tuple[int, int]:
    """A host's ``[boot_ns, counter]`` order of what it says about its sessions."""
    if stamp is None:
        return (0, 0)
    if isinstance(stamp, list) and len(stamp) == 2 and all(
            isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 2**63 for x in stamp):
        return stamp[0], stamp[1]
    msg = "a stamp must be two whole numbers"
    raise CodecError(msg)


def output_to_json(out: Output) -> dict[str, Any]:
    """``out`` as a JSON-ready dict: its kind and every field."""
    doc: dict[str, Any] = {"kind": out.kind}
    for f in dataclasses.fields(out):
        value = getattr(out, f.name)
        doc[f.name] = str(value) if isinstance(value, NoticeName) else value
    return doc


def output_from_json(doc: Any) -> Output:
    """The ``Output`` a dict from ``output_to_json`` describes; unknown fields are ignored.

    Raises:
        CodecError: not a dict, an unknown kind or notice, or a field of the wrong shape.
    """
    if not isinstance(doc, dict):
        msg = "an output must be a JSON object"
        raise CodecError(msg)
    cls = OUTPUT_KINDS.get(doc.get("kind"))  # type: ignore[arg-type]
    if cls is None:
        msg = f"unknown output kind {doc.get('kind')!r}"
        raise CodecError(msg)
    known = shape.hints(cls)  # type: ignore[arg-type]  # (classes hash)
    try:  # (nested records and enums made: a ``files`` output's copies)
        kwargs = {f.name: shape.made(doc[f.name], known[f.name])
                  for f in dataclasses.fields(cls) if f.name in doc and f.name != "notice"}
    except (TypeError, ValueError) as exc:
        msg = f"a {cls.kind} output that does not fit: {exc}"
        raise CodecError(msg) from exc
    if "notice" in doc:
        kwargs["notice"] = doc["notice"]
    if not isinstance(kwargs.get("session"), str):
        msg = f"a {cls.kind} output without a session"
        raise CodecError(msg)
    if cls is Notice and "notice" in kwargs:
        try:
            kwargs["notice"] = NoticeName(kwargs["notice"])
        except ValueError as exc:
            msg = f"unknown notice {kwargs['notice']!r}"
            raise CodecError(msg) from exc
        if kwargs["notice"] in HUB_ONLY:
            msg = f"a host's {kwargs['notice']} notice (only the hub says those)"
            raise CodecError(msg)
    if not _SESSION.fullmatch(kwargs["session"]):
        msg = f"a {cls.kind} output of {kwargs['session'][:80]!r}, not a session name"
        raise CodecError(msg)
    try:
        out = cls(**kwargs)
        shape.check(out)
    except (TypeError, shape.ShapeError) as exc:
        msg = f"a {cls.kind} output that does not fit: {exc}"
        raise CodecError(msg) from exc
    return out


def session_to_json(sess: Session) -> dict[str, Any]:
    """What a hub needs of a session (orjson writes the nested records natively)."""
    doc = sess.to_dict()
    for key in _SLIM:
        doc.pop(key, None)
    return doc


def session_from_json(doc: Any) -> Session:
    """A read-only copy of a host's session, every field of the shape it should have.

    Raises:
        CodecError: not a saved session, or named as no session on a host can be.
    """
    if not isinstance(doc, dict) or not isinstance(doc.get("name"), str) \
            or not isinstance(doc.get("label"), str):
        msg = "a session must be an object with a name and a label"
        raise CodecError(msg)
    if not _SESSION.fullmatch(doc["name"]) or not _LABEL.fullmatch(doc["label"]):
        msg = f"a session named {doc['name'][:80]!r} ({doc['label'][:80]!r}), not a session name"
        raise CodecError(msg)
    try:
        sess = Session.from_dict(doc)
        shape.check(sess)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        msg = f"a session that does not fit: {exc}"
        raise CodecError(msg) from exc
    return sess


def dumps(doc: Any) -> bytes:
    return orjson.dumps(doc)


def loads(data: bytes) -> Any:
    """Raises:
        CodecError: not JSON."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        msg = f"not JSON: {exc}"
        raise CodecError(msg) from exc
