"""Reading back a damaged saved state: keep every record that is still usable.

The saved state (``persist``) is the daemon's own file, but a crash, a full
disk or a stray editor can leave it truncated, garbled or with values of the
wrong type.  ``sessions_of`` recovers what it can, record by record:

- a file cut short keeps the sessions written completely before the cut;
- a field of the wrong type is dropped (its default applies), an element of
  the wrong type is dropped from its list, a nested record (row, agent,
  request …) missing a required field is dropped whole;
- a session without a usable name is dropped whole.

The types come from the model's own annotations (``model.Session`` and the
records it nests), so a field added there is checked here without a change.
Every drop is described in the returned problems.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import re
import types
import typing
from collections import deque
from typing import Any, Union

import orjson

from aipager.port import model
from aipager.port.model import Session, State

#: attribute → key in the saved state (``model`` saves a few under other names)
_SAVED_AS = model._SAVED_AS
#: session attributes that hold nested records, saved as lists of objects
_NESTED = model._NESTED
#: problems described one by one (the rest are counted)
PROBLEMS_LISTED = 20

_SESSIONS_KEY = re.compile(rb'"sessions"\s*:\s*\[')
_SCALARS = (str, int, float, bool)


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _required(f: dataclasses.Field) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


def _type_name(value: Any) -> str:
    if value.__class__ is str:
        return repr(value[:40])
    return type(value).__name__


def fits(value: Any, hint: Any) -> bool:
    """Whether a decoded JSON value is acceptable for an annotation of the model.

    Numbers are strict (a bool is not an int; an int is a float); an enum takes
    its members' values; containers are checked element by element.
    """
    if hint is Any:
        return True
    if hint is type(None):
        return value is None
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        return any(fits(value, arg) for arg in typing.get_args(hint))
    if hint is bool:
        return value.__class__ is bool
    if hint is int:
        return value.__class__ is int
    if hint is float:
        return value.__class__ in (int, float)
    if hint is str:
        return value.__class__ is str
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return any(value == m.value for m in hint) if value.__class__ is str else False
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return isinstance(value, dict)
    if hint in (list, deque) or origin in (list, deque):
        args = typing.get_args(hint)
        return isinstance(value, list) and (not args or all(fits(v, args[0]) for v in value))
    if hint is dict:
        # a bare ``dict`` holds plain facts (notices, authors): scalars only, so
        # readers may hash or print any of them
        return isinstance(value, dict) and all(v is None or v.__class__ in _SCALARS
                                                for v in value.values())
    if origin is dict:
        return isinstance(value, dict)
    return False


def record(kind: type, raw: Any, where: str, problems: list[str]) -> dict[str, Any] | None:
    """The usable fields of one nested record (a ``Row``, ``Agent`` …), or None.

    A bad optional field is left out (its default applies); a bad or missing
    required one drops the record.
    """
    if not isinstance(raw, dict):
        problems.append(f"{where}: expected an object, got {_type_name(raw)} (dropped)")
        return None
    hints = _hints(kind)
    out: dict[str, Any] = {}
    for f in dataclasses.fields(kind):
        if f.name not in raw:
            if _required(f):
                problems.append(f"{where}: no {f.name} (dropped)")
                return None
            continue
        value = _elements(raw[f.name], hints[f.name], f"{where}.{f.name}", problems)
        if fits(value, hints[f.name]):
            out[f.name] = value
        elif _required(f):
            problems.append(f"{where}.{f.name}: {_type_name(value)} is not usable (dropped)")
            return None
        else:
            problems.append(f"{where}.{f.name}: {_type_name(value)} is not usable (default kept)")
    return out


def _elements(value: Any, hint: Any, where: str, problems: list[str]) -> Any:
    """A list with the elements of the wrong type removed (other values unchanged)."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin not in (list, deque) or not args or not isinstance(value, list):
        return value
    kept = [v for v in value if fits(v, args[0])]
    if len(kept) != len(value):
        problems.append(f"{where}: {len(value) - len(kept)} element(s) of the wrong type dropped")
    return kept


def session(raw: Any, index: int, problems: list[str]) -> dict[str, Any] | None:
    """One saved session made safe for ``Session.from_dict``, or None when it has no name."""
    if not isinstance(raw, dict):
        problems.append(f"sessions[{index}]: expected an object, got {_type_name(raw)} (dropped)")
        return None
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        problems.append(f"sessions[{index}]: no usable name (dropped)")
        return None
    hints = _hints(Session)
    out: dict[str, Any] = {"name": name}
    for f in dataclasses.fields(Session):
        key = _SAVED_AS.get(f.name, f.name)
        if f.name in ("name", "row_index") or key not in raw:
            continue
        value, where = raw[key], f"{name}: {key}"
        if f.name in _NESTED:
            if not isinstance(value, list):
                problems.append(f"{where}: expected a list, got {_type_name(value)} (dropped)")
                continue
            items = (record(_NESTED[f.name], item, f"{where}[{i}]", problems)
                     for i, item in enumerate(value))
            out[key] = [item for item in items if item is not None]
        elif f.name == "task":
            if value is not None:
                value = record(model.Task, value, where, problems)
            out[key] = value
        else:
            value = _elements(value, hints[f.name], where, problems)
            if fits(value, hints[f.name]):
                out[key] = value
            else:
                problems.append(f"{where}: {_type_name(value)} is not usable (default kept)")
    out.setdefault("label", _label(name))
    out.setdefault("registered_at", out.get("last_event_at", 0.0))
    _coherent(out)
    return out


def _label(name: str) -> str:
    from aipager.daemon.registry import label_of

    return label_of(name)


def _coherent(out: dict[str, Any]) -> None:
    # A session shown waiting needs a request to answer; if its requests were
    # dropped it is simply working (task open) or ready.
    if out.get("state") == State.WAITING and not out.get("requests"):
        task = out.get("task")
        out["state"] = str(State.WORKING if task and task.get("ended_at") is None else State.READY)


def _no_constant(name: str) -> Any:
    # NaN and Infinity are not JSON (orjson never writes them)
    msg = f"{name} is not JSON"
    raise ValueError(msg)


def _truncated_sessions(data: bytes) -> list[Any]:
    """The session objects written completely before the file was cut short."""
    text = data.decode("utf-8", errors="replace")
    decoder = json.JSONDecoder(parse_constant=_no_constant)
    for match in _SESSIONS_KEY.finditer(data):
        pos = len(data[:match.end()].decode("utf-8", errors="replace"))
        found: list[Any] = []
        while True:
            while pos < len(text) and text[pos] in " \t\r\n,":
                pos += 1
            try:
                value, pos = decoder.raw_decode(text, pos)
            except (ValueError, RecursionError):
                break
            found.append(value)
        if any(isinstance(v, dict) and isinstance(v.get("name"), str) for v in found):
            return found
    return []


def sessions_of(data: bytes) -> tuple[list[dict[str, Any]], int, list[str]]:
    """The usable sessions of a saved state file's bytes.

    Returns:
        ``(sessions, seen, problems)``: the sessions ready for
        ``Registry.restore``, how many session records the file held (as far
        as it could be read), and what was wrong, one line each (empty: the
        file was sound).
    """
    problems: list[str] = []
    try:
        state = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        problems.append(f"not valid JSON ({exc})")
        raw_sessions = _truncated_sessions(data)
        if raw_sessions:
            problems.append(f"{len(raw_sessions)} complete session record(s) read before the damage")
    else:
        if not isinstance(state, dict):
            problems.append(f"expected a JSON object, got {_type_name(state)}")
            raw_sessions = []
        else:
            raw_sessions = state.get("sessions", [])
            if not isinstance(raw_sessions, list):
                problems.append(f"sessions: expected a list, got {_type_name(raw_sessions)}")
                raw_sessions = []
    sessions = [s for i, raw in enumerate(raw_sessions) if (s := session(raw, i, problems)) is not None]
    return sessions, len(raw_sessions), problems


__all__ = ["fits", "record", "session", "sessions_of"]
