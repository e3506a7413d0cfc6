"""A small JSON Schema validator for the subset ``schema.json`` uses.

We ship no jsonschema dependency; ``schema.json`` stays the single documented
definition and this walker enforces it.  Supported keywords: ``type``,
``enum``, ``properties``, ``required``, ``additionalProperties``,
``propertyNames`` (``pattern`` only), ``items``, ``minLength``,
``maxLength``, ``pattern``, ``anyOf``, local ``$ref`` and the aipager
extension ``x-dialect`` (``glob`` or ``regex``).  An unknown keyword in the
schema is an error, so the schema cannot grow past what is enforced
(``tests/policy/test_schema_contract.py``).
"""

from __future__ import annotations

import json
import re
from importlib import resources

from aipager.proto.errors import PatternError, PolicySchemaError
from aipager.policy import dialect

KNOWN = frozenset(
    {
        "$schema", "$id", "title", "description", "$defs", "$ref", "type", "enum",
        "properties", "required", "additionalProperties", "propertyNames", "items",
        "minLength", "maxLength", "pattern", "anyOf", "x-dialect",
    }
)

_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "null": lambda v: v is None,
}


def load_schema() -> dict:
    """The shipped ``schema.json``."""
    text = resources.files("aipager.policy").joinpath("schema.json").read_text("utf-8")
    return json.loads(text)


def _place(path: tuple) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


class _Walker:
    def __init__(self, schema: dict) -> None:
        self.root = schema
        self.problems: list[str] = []

    def resolve(self, node: dict) -> dict:
        while "$ref" in node:
            ref = node["$ref"]
            if not ref.startswith("#/"):
                msg = f"unsupported $ref {ref}"
                raise PolicySchemaError(msg)
            target = self.root
            for part in ref[2:].split("/"):
                target = target[part]
            node = target
        return node

    def errors_of(self, node: dict, value, path: tuple) -> list[str]:
        """Problems of ``value`` against ``node`` without recording them."""
        saved = self.problems
        self.problems = []
        self.walk(node, value, path)
        found, self.problems = self.problems, saved
        return found

    def add(self, path: tuple, text: str) -> None:
        self.problems.append(f"{_place(path)}: {text}")

    def walk(self, node: dict, value, path: tuple) -> None:
        node = self.resolve(node)
        unknown = set(node) - KNOWN
        if unknown:
            msg = f"schema uses unsupported keywords {sorted(unknown)}"
            raise PolicySchemaError(msg)
        if "anyOf" in node:
            branches = [self.errors_of(sub, value, path) for sub in node["anyOf"]]
            if all(branches):
                best = min(branches, key=len)
                self.problems.extend(best)
            return
        kind = node.get("type")
        if kind and not _TYPES[kind](value):
            self.add(path, f"expected {kind}, got {type(value).__name__}")
            return
        if "enum" in node and value not in node["enum"]:
            self.add(path, f"must be one of {node['enum']}")
        if isinstance(value, str):
            self.check_string(node, value, path)
        elif isinstance(value, list) and "items" in node:
            for i, item in enumerate(value):
                self.walk(node["items"], item, path + (i,))
        elif isinstance(value, dict):
            self.check_object(node, value, path)

    def check_string(self, node: dict, value: str, path: tuple) -> None:
        if len(value) < node.get("minLength", 0):
            self.add(path, "must not be empty" if not value else "is too short")
        if "maxLength" in node and len(value) > node["maxLength"]:
            self.add(path, f"is longer than {node['maxLength']} characters")
        if "pattern" in node and not re.search(node["pattern"], value):
            self.add(path, f"{value!r} does not match {node['pattern']}")
        form = node.get("x-dialect")
        if form and value:
            check = dialect.check_glob if form == "glob" else dialect.check_regex
            try:
                check(value, _place(path))
            except PatternError as exc:
                self.problems.append(str(exc))

    def check_object(self, node: dict, value: dict, path: tuple) -> None:
        props = node.get("properties", {})
        for key in node.get("required", ()):
            if key not in value:
                self.add(path, f"missing required field {key!r}")
        names = node.get("propertyNames", {}).get("pattern")
        extra = node.get("additionalProperties", True)
        for key, item in value.items():
            if names and not re.search(names, key):
                self.add(path + (key,), f"name does not match {names}")
            if key in props:
                self.walk(props[key], item, path + (key,))
            elif extra is False:
                self.add(path + (key,), "is not a known field")
            elif isinstance(extra, dict):
                self.walk(extra, item, path + (key,))


def problems(document, schema: dict | None = None) -> list[str]:
    """Every place where ``document`` breaks the schema, as readable lines."""
    walker = _Walker(schema or load_schema())
    walker.walk(walker.root, document, ())
    return walker.problems


def validate(document, schema: dict | None = None, source: str = "policy") -> None:
    """Raise if ``document`` breaks the schema.

    Raises:
        PatternError: the only problems are patterns outside the dialect.
        PolicySchemaError: anything else, all problems listed.
    """
    found = problems(document, schema)
    if not found:
        return
    msg = f"{source}: " + "; ".join(found)
    if all("outside the portable dialect" in line for line in found):
        raise PatternError(msg)
    raise PolicySchemaError(msg)
