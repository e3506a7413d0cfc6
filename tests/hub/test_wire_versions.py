"""Hub and hosts of different releases: what crosses the broker only ever grows compatibly.

A host and its hub may run different aipager releases for a while (one upgraded first).
Every record that crosses (the service's commands and results, the outputs, the records
nested in them) is read by field name: a field the reader does not know is ignored, a
field it knows and did not get takes its default (``usecases._build``,
``codec.output_from_json``).  So a pair works when the newer side only *added* fields
with defaults and records.  ``tests/fixtures/wire/0.1.json`` is the shapes of release 0.1
(each record: its fields, and which are required): this test fails when a change would
break that pair (a record or a field gone or renamed, a new field without a default).
What a newer side sends that the older one does not know at all (a new command or output
kind) is refused where it is read, said once (a dead letter; a ``Failed`` result), never a
stopped link.  Regenerate the fixture only at a release: ``UPDATE_WIRE_FIXTURE=1``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import typing

import pytest

from aipager.port.outputs import Notice, NoticeName
from aipager.hub import codec, usecases
from aipager.port.commands import SendPrompt
from aipager.port.who import Person

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "wire", "0.1.json")


def _records() -> dict[str, type]:
    """Every record that crosses, by name, nested ones included."""
    found: dict[str, type] = {}
    todo = [*usecases.COMMANDS.values(), *usecases.RESULTS.values(),
            *codec.OUTPUT_KINDS.values()]
    while todo:
        cls = todo.pop()
        if cls.__name__ in found:
            continue
        found[cls.__name__] = cls
        for hint in typing.get_type_hints(cls).values():
            for arm in (hint, *typing.get_args(hint)):
                for inner in (arm, *typing.get_args(arm)):
                    if isinstance(inner, type) and dataclasses.is_dataclass(inner):
                        todo.append(inner)
    return found


def _shapes() -> dict[str, dict[str, bool]]:
    """Each record: field name → whether it is required (no default)."""
    return {name: {f.name: f.default is dataclasses.MISSING
                   and f.default_factory is dataclasses.MISSING
                   for f in dataclasses.fields(cls) if f.init}
            for name, cls in sorted(_records().items())}


def test_every_record_of_the_last_release_reads_and_is_read_by_this_one() -> None:
    if os.environ.get("UPDATE_WIRE_FIXTURE"):
        with open(FIXTURE, "w", encoding="utf-8") as fh:
            json.dump(_shapes(), fh, indent=1, sort_keys=True)
            fh.write("\n")
    with open(FIXTURE, encoding="utf-8") as fh:
        then = json.load(fh)
    now = _shapes()
    problems = []
    for record, fields in then.items():
        if record not in now:
            problems.append(f"{record} is gone (the other release still sends or reads it)")
            continue
        for name in fields:
            if name not in now[record]:
                problems.append(f"{record}.{name} is gone (the other release reads it)")
        for name, required in now[record].items():
            if required and not fields.get(name, False):
                problems.append(f"{record}.{name} is required now (the other release "
                                "does not send it): give it a default")
    assert not problems, "\n".join(problems)


def test_a_field_from_a_newer_release_is_ignored_and_a_missing_one_defaulted() -> None:
    """The two directions, on real records: a newer hub's command with a field this host
    does not know, and an older hub's without one this host added since."""
    owner = Person(1, "owner", "owner", never_held=True)
    doc = usecases.command_to_json(SendPrompt(owner, "claude-a", "hi", 5, 42))
    doc["a_field_of_a_later_release"] = {"x": 1}
    doc["who"]["another_later_field"] = True
    assert usecases.command_from_json(doc) == SendPrompt(owner, "claude-a", "hi", 5, 42)
    del doc["who"]["never_held"], doc["style"]
    older = usecases.command_from_json(doc)
    assert older.who.never_held is False and older.style is None
    out = codec.output_to_json(Notice("claude-a", "text", notice=NoticeName.API_ERROR))
    out["later"] = 1
    assert codec.output_from_json(out).text == "text"


def test_what_this_release_does_not_know_is_refused_where_it_is_read() -> None:
    with pytest.raises(codec.CodecError, match="not a command this version knows"):
        usecases.command_from_json({"record": "CommandOfALaterRelease", "who": {}})
    with pytest.raises(codec.CodecError, match="unknown output kind"):
        codec.output_from_json({"kind": "later_kind", "session": "claude-a"})
