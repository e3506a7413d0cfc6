"""A chat message is a prompt, never a keystroke.

Claude Code reads more than prompts from its input box: a leading ``!`` runs
a shell command (bash mode: no PreToolUse, so neither the role nor the floor
sees it), ``/`` one of its own commands (``/exit``, ``/permissions``, …),
``#`` writes its memory and ``&`` starts a background job; control bytes and
escape sequences are keys (two Ctrl-C end the session).  And an ``@path``
mention puts a file's contents into the prompt without any tool call.
Measured on Claude Code 2.1.328 (``tests/e2e/test_chat_is_a_prompt.py``):
a leading space stops ``!`` but not ``/exit`` (Claude Code trims it), and a
bracketed paste that starts with ``!`` still runs it.  So no trick is relied
on: text whose first visible character is one of these is refused, control
bytes are removed, and an ``@`` mention of a file the sender's role may not
read is refused; what remains goes in as one bracketed paste
(``dtach.paste_writes``), which Claude Code takes as text, newlines and all.

``refusal`` is pure (no I/O) but for the mention check, which looks at the
named files the way Claude Code would.
"""

from __future__ import annotations

import enum
import os
import re
import unicodedata
from dataclasses import dataclass


class Refused(enum.Enum):
    """Why a chat message was not typed (the chat words each one)."""

    SHELL = "!"
    COMMAND = "/"
    MEMORY = "#"
    BACKGROUND = "&"
    MENTION = "@"


#: what the first visible character of the input box switches Claude Code to
LEADS = {"!": Refused.SHELL, "/": Refused.COMMAND, "#": Refused.MEMORY, "&": Refused.BACKGROUND}

# An @-mention as Claude Code reads one: at the start or after white space,
# a quoted path or a run of non-space characters.
_MENTION = re.compile(r'(?:^|(?<=\s))@(?:"([^"\n]+)"|(\S+))')
# "file.py#L10-20" names file.py
_LINE_RANGE = re.compile(r"#L\d+(?:-\d+)?$")


@dataclass(frozen=True)
class Verdict:
    """``reason`` None: ``text`` (cleaned) may be typed.  ``detail``: what was refused."""

    text: str
    reason: Refused | None = None
    detail: str = ""


def clean(text: str) -> str:
    """The text without control bytes and escape sequences (line breaks become ``\\n``,
    tabs stay): nothing in it can act as a key, and the paste cannot be ended early."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return "".join(ch for ch in text
                   if ch in "\n\t" or unicodedata.category(ch) != "Cc")


def _invisible(ch: str) -> bool:
    # white space, format characters (zero-width, bidi), marks with nothing to
    # sit on: none of them shows, so none of them may hide what comes next
    return ch.isspace() or unicodedata.category(ch)[0] in "CZM"


def lead(text: str) -> Refused | None:
    """What Claude Code would do with ``text`` instead of taking it as a prompt."""
    for ch in text:
        if _invisible(ch):
            continue
        return LEADS.get(unicodedata.normalize("NFKC", ch)[:1])
    return None


def mentions(text: str) -> list[str]:
    """The paths ``text`` @-mentions, as written (quotes and ``#L…`` ranges dropped)."""
    found = []
    for m in _MENTION.finditer(text):
        raw = m.group(1) or m.group(2) or ""
        raw = _LINE_RANGE.sub("", raw.rstrip(".,;:!?)]}'\""))
        if raw:
            found.append(raw)
    return found


def refusal(text: str, *, mention_check=None) -> Verdict:
    """Decide whether a member's chat message may be typed.

    Args:
        text: the message as the person sent it.
        mention_check: ``(path) -> reason | None`` for each @-mentioned path
            (the sender's read rules); None skips the check (the owner).
    """
    text = clean(text)
    why = lead(text)
    if why is not None:
        return Verdict(text, why)
    if mention_check is not None:
        for path in mentions(text):
            reason = mention_check(path)
            if reason:
                return Verdict(text, Refused.MENTION, f"@{path}: {reason}")
    return Verdict(text)


def read_check(snap: dict, cwd: str, home: str):
    """A ``mention_check`` that decides each mentioned path as a Read of it would be
    decided for the task (``snap``: the sender's rules with the floor), so a mention
    reaches no further than the tools do."""
    from aipager.policy import _match_py

    def check(path: str) -> str | None:
        try:
            full = _match_py.expand(path, cwd, home)
            if not os.path.lexists(full):
                return None  # Claude Code attaches nothing for a name that is not there
            tool = "LS" if os.path.isdir(full) else "Read"
            key = "path" if tool == "LS" else "file_path"
            decision, reason = _match_py.decide(snap, tool, {key: full}, cwd, home)
        except (_match_py.BadInput, OSError, ValueError) as exc:
            return f"could not be checked ({exc})"
        return reason if decision == _match_py.DENY else None

    return check


__all__ = ["LEADS", "Refused", "Verdict", "clean", "lead", "mentions", "read_check", "refusal"]
