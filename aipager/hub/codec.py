"""Outputs and sessions to and from JSON, as they cross the broker.

An ``Output`` travels as ``{"kind": <kind>, <every field>}``; ``output_from_json``
builds the same frozen dataclass again (``output_from_json(output_to_json(o)) ==
o`` for every kind: ``tests/hub/test_codec.py``).  A session travels as its
saved form (``Session.to_dict``) without what only the host's card needs (tool
rows, pending Agent calls, answered requests, answer digests).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import orjson

from aipager.daemon.model import Session
from aipager.daemon.notifier import KINDS, Notice, NoticeName, Output, Prompted

#: every output kind by name (``notifier.KINDS`` leaves ``prompted`` out)
OUTPUT_KINDS: dict[str, type[Output]] = {**KINDS, Prompted.kind: Prompted}

#: saved-session keys a hub has no use for (the host renders its own cards)
_SLIM = ("rows", "agent_calls", "hook_answered", "delivered_answers")


class CodecError(ValueError):
    """A record that is not what this version of aipager reads."""


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
    kwargs = {f.name: doc[f.name] for f in dataclasses.fields(cls) if f.name in doc}
    if not isinstance(kwargs.get("session"), str):
        msg = f"a {cls.kind} output without a session"
        raise CodecError(msg)
    if cls is Notice and "notice" in kwargs:
        try:
            kwargs["notice"] = NoticeName(kwargs["notice"])
        except ValueError as exc:
            msg = f"unknown notice {kwargs['notice']!r}"
            raise CodecError(msg) from exc
    try:
        return cls(**kwargs)
    except TypeError as exc:
        msg = f"a {cls.kind} output that does not fit: {exc}"
        raise CodecError(msg) from exc


def session_to_json(sess: Session) -> dict[str, Any]:
    """What a hub needs of a session (orjson writes the nested records natively)."""
    doc = sess.to_dict()
    for key in _SLIM:
        doc.pop(key, None)
    return doc


def session_from_json(doc: Any) -> Session:
    """A read-only copy of a host's session.

    Raises:
        CodecError: not a saved session.
    """
    if not isinstance(doc, dict) or not isinstance(doc.get("name"), str) \
            or not isinstance(doc.get("label"), str):
        msg = "a session must be an object with a name and a label"
        raise CodecError(msg)
    try:
        return Session.from_dict(doc)
    except (TypeError, ValueError, KeyError) as exc:
        msg = f"a session that does not fit: {exc}"
        raise CodecError(msg) from exc


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
