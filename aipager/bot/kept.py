"""The records the chat keeps in its state (``chatstate.ChatState``), saved with it and read
back field by field (what does not fit is left at its default, or out):

- what it asks a person step by step until answered: Claude's questions (one at a time,
  their answers gathered) and an MCP server's form (one field at a time, its values);
- an invitation code's promise;
- a chat's settings."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class QuestionAsk:
    """An AskUserQuestion dialog answered in the chat: ``questions``
    (``{question, header, options, multi}``), the one shown now (``step``), the answers so
    far (``{"picks": [...], "text": ...}`` each) and the options toggled on the shown one."""

    session: str
    key: str
    #: the chat it is asked in
    chat: int
    questions: list[dict[str, Any]] = field(default_factory=list)
    step: int = 0
    answers: list[dict[str, Any]] = field(default_factory=list)
    toggled: list[int] = field(default_factory=list)


@dataclass(slots=True)
class FormAsk:
    """An MCP server's form filled in in the chat: its ``fields`` (``forms.Field.as_json``),
    the one asked now (``step``) and the values so far (field name → value)."""

    session: str
    key: str
    chat: int
    server: str = ""
    message: str = ""
    fields: list[dict[str, Any]] = field(default_factory=list)
    step: int = 0
    values: dict[str, Any] = field(default_factory=dict)


Ask = QuestionAsk | FormAsk


def ask_to_json(ask: Ask) -> dict[str, Any]:
    doc = dataclasses.asdict(ask)
    if isinstance(ask, FormAsk):
        doc["form"] = True
    return doc


def _read(blank: Any, doc: dict[str, Any]) -> Any:
    """``blank`` with each of its fields ``doc`` holds a value of the same kind for (as JSON
    decodes it: a bool is not a number); the others stay as ``blank`` has them."""
    return dataclasses.replace(blank, **{f.name: doc[f.name] for f in dataclasses.fields(blank)
                                         if type(doc.get(f.name)) is type(getattr(blank, f.name))})


def ask_from_json(doc: Any) -> Ask | None:
    """An ask as saved (None: not one); a field of the wrong kind keeps its default."""
    if not isinstance(doc, dict) or not isinstance(doc.get("session"), str) \
            or not isinstance(doc.get("key"), str):
        return None
    kind: type[QuestionAsk] | type[FormAsk] = FormAsk if doc.get("form") else QuestionAsk
    ask: Ask = _read(kind(session="", key="", chat=0), doc)
    return ask


@dataclass(frozen=True)
class Prefs:
    """A chat's settings (``/settings``), each with its default."""

    #: the reply style asked of Claude (``chatstate.STYLES``; "": Claude's own)
    style: str = ""
    #: diff previews of edits
    diffs: bool = False
    #: card detail: full | compact
    detail: str = "full"
    #: quiet while a person is at the computer
    quiet: bool = True
    #: a voice note is sent at once (else shown first)
    voice_now: bool = False
    #: the permission mode /new starts sessions in ("": Claude Code's own)
    mode: str = ""
    #: the agent /new starts ("": Claude Code)
    agent: str = ""
    #: private mode as this chat was last told of it (``privacywatch``)
    private: bool = False

    @classmethod
    def read(cls, doc: Any) -> Prefs:
        """As saved: each setting of the right kind, the rest at its default."""
        prefs: Prefs = _read(cls(), doc) if isinstance(doc, dict) else cls()
        return prefs

    def with_(self, name: str, value: Any) -> Prefs:
        """This with ``name`` set (a setting it does not have, or a value of another kind,
        changes nothing)."""
        current = getattr(self, name, None)
        if current is None or not isinstance(value, type(current)):
            return self
        return dataclasses.replace(self, **{name: type(current)(value)})


__all__ = ["Ask", "FormAsk", "Prefs", "QuestionAsk", "ask_from_json", "ask_to_json"]
