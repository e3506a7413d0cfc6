"""Does a dataclass built from a host's JSON hold what its annotations say?  Pure, no I/O.

``cls(**doc)`` checks only which keys there are: ``Output(session=5)`` or a session
whose ``task`` is a list builds fine and fails later, far from the record, in the
chat's rendering or the hub's view (once it stopped the hub's link for every host).
``check`` walks the built value against its field annotations, nested dataclasses
included, so a record is refused where it is read (``codec``).

Text may be None (the daemon's own outputs leave an absent id so, and the chat reads
them that way).  Numbers are bounded too: a timestamp in the year 30000 fits a float and then makes
``time.localtime`` raise wherever a time is shown.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import math
import types
import typing
from collections import abc, deque
from typing import Any, get_args

#: the largest number a host's session or output may hold: every timestamp before the
#: year 5000 and every count aipager keeps fit under it
MAX_NUMBER = 1e11
#: the largest whole number: what JSON keeps exact (a page's message ids are milliseconds
#: since 1970, past ``MAX_NUMBER``; a time is never an ``int`` field)
MAX_INT = 2**53


class CodecError(ValueError):
    """A record that is not what this version of aipager reads (``codec``, ``commands``,
    ``usecases``: here, below all three, so none imports another for it)."""


class ShapeError(ValueError):
    """A value that is not what its annotation says; the message names where."""


@functools.cache
def hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def check(value: Any, where: str = "") -> None:
    """Raises:
        ShapeError: a field of ``value`` (a dataclass instance), or of one nested in it,
            does not hold what its annotation says."""
    known = hints(type(value))  # type: ignore[arg-type]  # (classes hash)
    for f in dataclasses.fields(value):
        _check(getattr(value, f.name), known[f.name], f"{where}.{f.name}" if where else f.name)


def _check(value: Any, hint: Any, where: str) -> None:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if hint is Any or hint is object:
        return
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return
        arms = [a for a in args if a is not type(None)]
        for arm in arms[:-1]:
            try:
                _check(value, arm, where)
                return
            except ShapeError:
                continue
        _check(value, arms[-1], where)  # (``X | None``: what is wrong inside the X)
        return
    if hint is type(None):
        if value is not None:
            _fail(value, hint, where)
        return
    if origin is typing.ClassVar:
        return
    if origin is typing.Literal:
        if not any(value == arg and type(value) is type(arg) for arg in args):
            msg = f"{where}: {value!r} is none of {', '.join(map(repr, args))}"
            raise ShapeError(msg)
        return
    if origin is abc.Sequence:  # (a service's record: any list or tuple, not text)
        origin = list if isinstance(value, list) else tuple
    if origin is abc.Mapping:
        origin = dict
    if origin in (list, deque, tuple) or hint in (list, deque, tuple):
        container = origin or hint
        if not isinstance(value, (list, deque, tuple)) or \
                (container is not tuple and isinstance(value, tuple)):
            _fail(value, hint, where)
        item = args[0] if args else Any
        for i, v in enumerate(value):
            _check(v, item, f"{where}[{i}]")
        return
    if origin is dict or hint is dict:
        if not isinstance(value, dict):
            _fail(value, hint, where)
        key, val = args if args else (Any, Any)
        for k, v in value.items():
            _check(k, key, f"{where} key")
            _check(v, val, f"{where}[{k!r}]")
        return
    if isinstance(hint, type):
        _check_type(value, hint, where)
        return
    msg = f"{where}: an annotation this check does not know ({hint!r})"
    raise ShapeError(msg)


def _check_type(value: Any, hint: type, where: str) -> None:
    if dataclasses.is_dataclass(hint):
        if not isinstance(value, hint):
            _fail(value, hint, where)
        check(value, where)
        return
    if issubclass(hint, enum.Enum):
        if not isinstance(value, hint):
            _fail(value, hint, where)
        return
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            _fail(value, hint, where)
        _bounded(value, where)
        return
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            _fail(value, hint, where)
        if abs(value) > MAX_INT:
            msg = f"{where}: {value!r} is out of range"
            raise ShapeError(msg)
        return
    if hint is str and value is None:
        return  # the daemon itself leaves an absent id None (``Permission.agent_id``)
    if not isinstance(value, hint):
        _fail(value, hint, where)


def _bounded(value: float, where: str) -> None:
    if not math.isfinite(value) or abs(value) > MAX_NUMBER:
        msg = f"{where}: {value!r} is out of range"
        raise ShapeError(msg)


def _fail(value: Any, hint: Any, where: str) -> typing.NoReturn:
    name = getattr(hint, "__name__", None) or str(hint)
    msg = f"{where}: {type(value).__name__} where {name} belongs"
    raise ShapeError(msg)


def build(cls: type, doc: Any) -> Any:
    """The record ``cls`` a JSON object describes, nested records, enums and tuples made
    (``made``); unknown fields are ignored.

    Raises:
        TypeError, ValueError: ``doc`` cannot be one.
    """
    if not isinstance(doc, dict):
        msg = f"{cls.__name__} must be an object, not {type(doc).__name__}"
        raise TypeError(msg)
    known = hints(cls)
    return cls(**{f.name: made(doc[f.name], known[f.name])
                  for f in dataclasses.fields(cls) if f.init and f.name in doc})


def made(raw: Any, hint: Any) -> Any:
    """``raw`` as JSON gave it, made what ``hint`` names where JSON cannot say it (a
    record, an enum member, a tuple); the rest is left to ``shape.check``."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        if raw is None:
            return None
        for arm in get_args(hint):
            if arm is not type(None):
                try:
                    return made(raw, arm)
                except (TypeError, ValueError):
                    continue
        return raw
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return build(hint, raw)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint(raw)
    if origin in (tuple, abc.Sequence, list) and isinstance(raw, list):
        item = get_args(hint)[0] if get_args(hint) else Any
        items = [made(v, item) for v in raw]
        return tuple(items) if origin is tuple else items
    return raw
