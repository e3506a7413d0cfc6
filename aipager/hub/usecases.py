"""The service's commands and results as JSON: what travels when the hub asks a host.

A use case for a host's session is that host's own to decide (``remote``): the hub sends
the command record of ``aipager.port.commands`` whole, as the person asked it, and gets
back the result record of ``aipager.port.results``.  Both travel as ``{"record": <class>,
<field>: …}``; what is read back is rebuilt from the records' own annotations and
checked against them (``shape``), so a host's answer that does not fit is refused where
it is read, never far away in a renderer.  A command's callback (``SendPrompt.submitting``)
stays behind: the hub calls it before the command leaves.

``command_from_json(command_to_json(c)) == c`` and the same for results, for every kind
(``tests/hub/test_codec.py``).
"""

from __future__ import annotations

import dataclasses
import enum
import typing
from collections.abc import Mapping
from typing import Any, get_args

from aipager.hub import shape
from aipager.hub.shape import CodecError
from aipager.port import commands, results

#: every command a hub may send, by class name
COMMANDS: dict[str, type] = {cls.__name__: cls for cls in get_args(commands.Command)}
#: every result a host may answer with, by class name
RESULTS: dict[str, type] = {cls.__name__: cls for cls in get_args(results.Result)}
#: the same, for ``isinstance``
RESULT_TYPES = tuple(RESULTS.values())


def command_to_json(command: commands.Command) -> dict[str, Any]:
    return _to_json(command)


def result_to_json(result: results.Result) -> dict[str, Any]:
    return _to_json(result)


def command_from_json(doc: Any) -> commands.Command:
    """Raises:
        CodecError: not a command this version knows, or fields that do not fit."""
    return typing.cast(commands.Command, _from_json(doc, COMMANDS, "command"))


def result_from_json(doc: Any) -> results.Result:
    """Raises:
        CodecError: not a result this version knows, or fields that do not fit."""
    return typing.cast(results.Result, _from_json(doc, RESULTS, "result"))


def _to_json(record: Any) -> dict[str, Any]:
    return {"record": type(record).__name__, **_plain(record)}


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)
                if not callable(getattr(value, f.name))}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _from_json(doc: Any, table: dict[str, type], what: str) -> Any:
    if not isinstance(doc, dict) or doc.get("record") not in table:
        kind = doc.get("record") if isinstance(doc, dict) else type(doc).__name__
        msg = f"not a {what} this version knows: {kind!r}"
        raise CodecError(msg)
    cls = table[doc["record"]]
    try:
        value = shape.build(cls, doc)
        shape.check(value)
    except (TypeError, ValueError) as exc:  # (ShapeError is a ValueError)
        msg = f"a {cls.__name__} {what} that does not fit: {exc}"
        raise CodecError(msg) from exc
    return value


__all__ = ["COMMANDS", "RESULTS", "RESULT_TYPES", "command_from_json", "command_to_json", "result_from_json",
           "result_to_json"]
