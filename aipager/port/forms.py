"""An MCP server's form (an elicitation), as every surface reads and answers it.

Claude Code's ``Elicitation`` hook hands over the server's ``requested_schema``: a flat JSON
Schema object whose properties are strings (optionally an enum, a length, a format), numbers,
integers (optionally a range) and booleans, as the MCP specification restricts it.
``fields_of`` reads it into ``Field`` records (what the chat asks step by step and the page
draws as inputs); ``parse`` turns what a person typed into a field's value; ``content`` checks
a whole answer against the fields before it goes back to the server.  A schema that asks for
more than this (nested objects, arrays) is not answered from the phone: ``fields_of``
returns None and the form stays in the terminal.

Pure: no I/O, no imports from the daemon, so the chat, the page and the daemon share it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal, Mapping

#: what a form's answer may say (MCP's ElicitResult ``action``)
FormAction = Literal["accept", "decline", "cancel"]
ACTIONS: tuple[FormAction, ...] = ("accept", "decline", "cancel")

#: fields shown at most (a form is answered on a phone; more stays in the terminal)
FIELDS_MAX = 20
#: options of one choice at most
OPTIONS_MAX = 24
#: the longest text one field takes (Claude Code's own form takes what it is given; a reply
#: to the hook must fit one datagram)
TEXT_MAX = 2000

Kind = Literal["string", "number", "integer", "boolean", "enum"]

_TRUE = ("yes", "y", "true", "1", "on", "sí", "si", "sim", "có", "oui", "ja", "✅")
_FALSE = ("no", "n", "false", "0", "off", "não", "nao", "không", "non", "nein", "❌")


class FormError(ValueError):
    """An answer the form does not take (the message says which field and why)."""


@dataclass(frozen=True)
class Field:
    """One input of a form."""

    name: str
    kind: Kind
    title: str
    description: str = ""
    required: bool = False
    #: an enum's values, and the labels shown for them (``enumNames``, else the values)
    options: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()
    default: Any = None
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    #: a string's ``format`` (email, uri, date, date-time): shown as a hint
    format: str = ""

    def as_json(self) -> dict[str, Any]:
        """The field as plain JSON (kept with the request, sent to the surfaces)."""
        out: dict[str, Any] = {"name": self.name, "kind": self.kind, "title": self.title}
        for key, value in (("description", self.description), ("required", self.required),
                           ("options", list(self.options)), ("labels", list(self.labels)),
                           ("default", self.default), ("minimum", self.minimum),
                           ("maximum", self.maximum), ("min_length", self.min_length),
                           ("max_length", self.max_length), ("format", self.format)):
            if value not in (None, "", False, []):
                out[key] = value
        return out

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Field:
        """A field ``as_json`` wrote (a saved request, an output)."""
        return cls(name=str(doc.get("name", "")), kind=doc.get("kind", "string"),
                   title=str(doc.get("title", "")), description=str(doc.get("description", "")),
                   required=doc.get("required") is True,
                   options=tuple(str(o) for o in doc.get("options") or ()),
                   labels=tuple(str(o) for o in doc.get("labels") or ()),
                   default=doc.get("default"), minimum=doc.get("minimum"),
                   maximum=doc.get("maximum"), min_length=doc.get("min_length"),
                   max_length=doc.get("max_length"), format=str(doc.get("format", "")))

    def label_of(self, value: Any) -> str:
        """How a value of this field reads (an option's label; yes/no left to the caller)."""
        if self.kind == "enum" and value in self.options:
            return self.labels[self.options.index(value)]
        return str(value)


def _number(value: Any) -> float | None:
    return float(value) if type(value) in (int, float) and math.isfinite(value) else None


def _field(name: str, prop: Any, required: bool) -> Field | None:
    if not isinstance(prop, dict):
        return None
    title = str(prop.get("title") or name)[:200]
    description = str(prop.get("description") or "")[:500]
    kind = prop.get("type")
    options = prop.get("enum")
    if kind == "string" and isinstance(options, list):
        values = tuple(str(o) for o in options if isinstance(o, str))
        if not values or len(values) != len(options) or len(values) > OPTIONS_MAX:
            return None
        names = prop.get("enumNames")
        labels = tuple(str(n) for n in names) if isinstance(names, list) \
            and len(names) == len(values) else values
        default = prop.get("default") if prop.get("default") in values else None
        return Field(name, "enum", title, description, required, values, labels, default)
    if kind == "string":
        default = prop.get("default") if isinstance(prop.get("default"), str) else None
        lo, hi = prop.get("minLength"), prop.get("maxLength")
        return Field(name, "string", title, description, required, default=default,
                     min_length=lo if type(lo) is int and lo >= 0 else None,
                     max_length=hi if type(hi) is int and hi >= 0 else None,
                     format=str(prop.get("format") or "")[:40])
    if kind in ("number", "integer"):
        default = _number(prop.get("default"))
        if kind == "integer" and default is not None and not default.is_integer():
            default = None
        return Field(name, kind, title, description, required,
                     default=int(default) if kind == "integer" and default is not None
                     else default,
                     minimum=_number(prop.get("minimum")), maximum=_number(prop.get("maximum")))
    if kind == "boolean":
        default = prop.get("default") if isinstance(prop.get("default"), bool) else None
        return Field(name, "boolean", title, description, required, default=default)
    return None


def fields_of(schema: Any) -> list[Field] | None:
    """The fields of an elicitation's ``requested_schema``, in its order; None when the
    phone cannot ask it (not an object of plain fields, or too many)."""
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        return None
    props = schema.get("properties")
    if not isinstance(props, dict) or len(props) > FIELDS_MAX:
        return None
    required = schema.get("required")
    needed = {r for r in required if isinstance(r, str)} if isinstance(required, list) else set()
    out = []
    for name, prop in props.items():
        found = _field(str(name), prop, name in needed)
        if found is None:
            return None
        out.append(found)
    return out


def parse(field: Field, text: str) -> Any:
    """The value a person's typed ``text`` means for ``field``.

    Raises:
        FormError: it is not such a value (says why, in English: the surfaces word it).
    """
    raw = text.strip()
    match field.kind:
        case "boolean":
            low = raw.lower()
            if low in _TRUE:
                return True
            if low in _FALSE:
                return False
            raise FormError(f"{field.title}: answer yes or no")
        case "integer" | "number":
            try:
                value: float = int(raw) if field.kind == "integer" else float(raw.replace(",", "."))
            except ValueError:
                raise FormError(f"{field.title}: a {'whole ' if field.kind == 'integer' else ''}"
                                f"number is needed") from None
            return _checked(field, value)
        case "enum":
            for option, label in zip(field.options, field.labels, strict=True):
                if raw in (option, label) or raw.lower() in (option.lower(), label.lower()):
                    return option
            raise FormError(f"{field.title}: one of {', '.join(field.labels)}")
        case _:
            return _checked(field, text.strip("\n"))


def _checked(field: Field, value: Any) -> Any:
    """``value`` if ``field`` takes it, else FormError."""
    match field.kind:
        case "boolean":
            if type(value) is not bool:
                raise FormError(f"{field.title}: yes or no")
        case "enum":
            if value not in field.options:
                raise FormError(f"{field.title}: one of {', '.join(field.labels)}")
        case "integer" | "number":
            if type(value) not in (int, float) or (type(value) is float and not math.isfinite(value)):
                raise FormError(f"{field.title}: a number is needed")
            if field.kind == "integer" and not float(value).is_integer():
                raise FormError(f"{field.title}: a whole number is needed")
            if field.kind == "integer":
                value = int(value)
            if field.minimum is not None and value < field.minimum:
                raise FormError(f"{field.title}: at least {_num(field.minimum)}")
            if field.maximum is not None and value > field.maximum:
                raise FormError(f"{field.title}: at most {_num(field.maximum)}")
        case _:
            if not isinstance(value, str):
                raise FormError(f"{field.title}: text is needed")
            if len(value) > TEXT_MAX:
                raise FormError(f"{field.title}: at most {TEXT_MAX} characters")
            if field.min_length is not None and len(value) < field.min_length:
                raise FormError(f"{field.title}: at least {field.min_length} characters")
            if field.max_length is not None and len(value) > field.max_length:
                raise FormError(f"{field.title}: at most {field.max_length} characters")
    return value


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def content(fields: list[Field], answer: Mapping[str, Any]) -> dict[str, Any]:
    """The answer the server gets: each field's value checked, in the form's order; a
    field left out takes nothing (the server's default applies).

    Raises:
        FormError: a required field is missing, a value does not fit, or the answer names a
            field the form does not have.
    """
    known = {f.name for f in fields}
    unknown = [name for name in answer if name not in known]
    if unknown:
        raise FormError(f"the form has no field {unknown[0]!r}")
    out: dict[str, Any] = {}
    for f in fields:
        if f.name in answer and answer[f.name] is not None:
            out[f.name] = _checked(f, answer[f.name])
        elif f.required:
            raise FormError(f"{f.title}: required")
    return out


__all__ = ["ACTIONS", "FIELDS_MAX", "Field", "FormAction", "FormError", "content", "fields_of",
           "parse"]
