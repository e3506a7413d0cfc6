"""An MCP server's form as every surface reads it (``aipager.port.forms``): the schema the
real Claude Code 2.1.328 hands its Elicitation hook, read into fields; typed text parsed;
a whole answer checked before it goes back to the server."""

from __future__ import annotations

import json
import os

import pytest

from aipager.port import forms

HERE = os.path.dirname(__file__)


def recorded() -> dict:
    with open(os.path.join(HERE, "..", "fixtures", "elicitation.json"), encoding="utf-8") as fh:
        return json.load(fh)


def fields() -> list[forms.Field]:
    got = forms.fields_of(recorded()["requested_schema"])
    assert got is not None
    return got


def test_the_recorded_schema_reads_as_four_fields_in_order() -> None:
    channel, note, replicas, notify = fields()
    assert (channel.name, channel.kind, channel.required) == ("channel", "enum", True)
    assert channel.options == ("stable", "beta", "nightly")
    assert channel.labels == ("Stable", "Beta", "Nightly")
    assert (note.kind, note.required, note.description) == ("string", False, "one line")
    assert (replicas.kind, replicas.minimum, replicas.maximum, replicas.required) == (
        "integer", 1, 9, True)
    assert (notify.kind, notify.default, notify.title) == ("boolean", True, "Tell the team")


def test_fields_survive_their_json() -> None:
    for f in fields():
        assert forms.Field.from_json(json.loads(json.dumps(f.as_json()))) == f


@pytest.mark.parametrize("schema", [
    None, [], {"type": "array"}, {"type": "object", "properties": []},
    {"type": "object", "properties": {"a": {"type": "object", "properties": {}}}},
    {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"}}}},
    {"type": "object", "properties": {"a": {"type": "string", "enum": []}}},
    {"type": "object", "properties": {"a": {"type": "string", "enum": ["x", 3]}}},
    {"type": "object", "properties": {f"f{i}": {"type": "string"} for i in range(forms.FIELDS_MAX + 1)}},
])
def test_a_schema_the_phone_cannot_ask_is_none(schema: object) -> None:
    assert forms.fields_of(schema) is None


def test_typed_text_becomes_the_fields_value() -> None:
    channel, note, replicas, notify = fields()
    assert forms.parse(channel, "beta") == "beta"
    assert forms.parse(channel, " Nightly ") == "nightly"  # a label, any case
    assert forms.parse(note, "ship it\n") == "ship it"
    assert forms.parse(replicas, " 3 ") == 3
    assert forms.parse(notify, "no") is False and forms.parse(notify, "Sí") is True


@pytest.mark.parametrize(("index", "text", "why"), [
    (0, "alpha", "one of Stable, Beta, Nightly"),
    (2, "three", "a whole number is needed"),
    (2, "2.5", "a whole number is needed"),
    (2, "0", "at least 1"),
    (2, "10", "at most 9"),
    (3, "maybe", "answer yes or no"),
])
def test_typed_text_that_does_not_fit_says_why(index: int, text: str, why: str) -> None:
    with pytest.raises(forms.FormError, match=why):
        forms.parse(fields()[index], text)


def test_an_answer_is_checked_whole_and_kept_in_the_forms_order() -> None:
    got = forms.content(fields(), {"replicas": 3, "channel": "beta", "notify": False})
    assert list(got.items()) == [("channel", "beta"), ("replicas", 3), ("notify", False)]


@pytest.mark.parametrize(("answer", "why"), [
    ({"channel": "beta"}, "Replicas: required"),
    ({"channel": "gamma", "replicas": 1}, "Channel: one of"),
    ({"channel": "beta", "replicas": "3"}, "a number is needed"),
    ({"channel": "beta", "replicas": True}, "a number is needed"),
    ({"channel": "beta", "replicas": 3, "notify": "yes"}, "yes or no"),
    ({"channel": "beta", "replicas": 3, "admin": True}, "no field 'admin'"),
    ({"channel": "beta", "replicas": 3, "note": "x" * (forms.TEXT_MAX + 1)}, "at most"),
])
def test_an_answer_that_does_not_fit_is_refused(answer: dict, why: str) -> None:
    with pytest.raises(forms.FormError, match=why):
        forms.content(fields(), answer)
