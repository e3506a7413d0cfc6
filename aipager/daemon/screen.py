"""What a session's terminal shows, read from its screen: a dialog and its choices, or the
input line.  Pure: a screen is its rows of text (``screenwatch`` keeps them current).

Claude Code draws a dialog as a block under a rule of ``─``: a title, its text, the
choices one a row (``❯`` marks the one Enter would take, with or without ``1.`` numbers),
and a footer that says how to leave it ("Enter to confirm · Esc to cancel", "Esc to
cancel · Tab to amend").  The input line is a row starting with ``❯`` between two rules,
with no such footer.  These shapes were read off the real 2.1.328
(``tests/fixtures/screens/*.json``, recorded by ``tests/e2e/test_screen_dialogs.py``).
Codex 0.169.0 draws its dialogs the same way under a lower-case footer ("enter confirm ·
esc skip"), and its input line as "› …" over a "model · folder" row, with no rules
(``codex_*.json``).  Anything else is ``None``: not known, so no key is pressed on it.
"""

from __future__ import annotations

import re
from typing import Sequence

from aipager.port.screen import Dialog, Kind, Prompt, Seen

UP = b"\x1b[A"
DOWN = b"\x1b[B"
ENTER = b"\r"

#: a dialog's last row: how to leave it
_FOOTER = re.compile(r"^\s*(Enter to confirm|Enter to select|Esc to cancel|Esc to go back|"
                     r"Press Enter|"
                     # Codex 0.169.0's ("enter confirm · esc skip", "enter/esc confirm · ^c quit",
                     # "enter continue · esc back" under its folder trust dialog)
                     r"enter confirm|enter/esc confirm|enter continue)")
#: a choice: "❯ 1. Yes" (the selected one) or "  2. No"; a marker column, then the label
_CHOICE = re.compile(r"^ {0,2}(❯|›|>| ) (?:(\d{1,2})\. )?(\S.*)$")
#: the rest of a long choice on the row below it
_MORE = re.compile(r"^ {5,}\S")
_RULE = re.compile(r"^\s*[─━]{8,}\s*$")
_INPUT = re.compile(r"^[❯>] ?(.*)$")
_CODEX_INPUT = re.compile(r"^› (.*)$")
_CHOICE_NUMBERED = re.compile(r"^ {0,2}› \d{1,2}\. ")
#: what Codex's empty input line shows
_CODEX_PLACEHOLDER = "Ask Codex to do anything"


def read(rows: Sequence[str]) -> Seen:
    """The dialog or input line ``rows`` show, or None when neither is recognised."""
    rows = [r.rstrip() for r in rows]
    footer = next((i for i in range(len(rows) - 1, -1, -1) if _FOOTER.match(rows[i])), None)
    if footer is not None:
        found = _dialog(rows, footer)
        if found is not None:
            return found
    return _prompt(rows)


def _dialog(rows: list[str], footer: int) -> Dialog | None:
    end = footer - 1
    while end >= 0 and not rows[end].strip():
        end -= 1
    start = end
    while start - 1 >= 0 and (_CHOICE.match(rows[start - 1]) or _MORE.match(rows[start - 1])
                              or (_RULE.match(rows[start - 1]) and start - 2 >= 0
                                  and bool(_CHOICE.match(rows[start - 2])
                                           or _MORE.match(rows[start - 2])))):
        # (a question's picker draws a rule between its answers and "Chat about this")
        start -= 1
    while start <= end and (_MORE.match(rows[start]) or not _CHOICE.match(rows[start])):
        start += 1  # a choice's wrapped row cannot begin the list
    labels: list[str] = []
    marked: list[int] = []
    for i in range(start, end + 1):
        if _RULE.match(rows[i]):
            continue
        m = None if _MORE.match(rows[i]) else _CHOICE.match(rows[i])
        if m is None:  # the rest of a long choice, wrapped onto its own row
            labels[-1] += " " + rows[i].strip()
            continue
        if m.group(1) != " ":
            marked.append(len(labels))
        labels.append(m.group(3).strip())
    if len(labels) < 2 or len(marked) != 1:
        return None
    options = tuple(labels)
    top = next((i for i in range(start - 1, -1, -1) if _RULE.match(rows[i])), -1)
    body = [r.strip() for r in rows[top + 1:start] if r.strip() and not set(r.strip()) <= {"╌"}]
    title = body[0] if body else ""
    text = "\n".join(rows[top + 1:footer + 1])
    if any(o.startswith("Yes, I trust this folder") for o in options) \
            and "Accessing workspace" in text:
        kind = Kind.TRUST
    elif any(o.startswith("Trust and continue") for o in options) \
            and "Trust this folder?" in text:
        kind = Kind.TRUST  # Codex 0.169.0's, in a git project it was never trusted in
    elif "Do you want to proceed?" in text or "Do you want to make this edit" in text \
            or "Do you want to create" in text:
        kind = Kind.PERMISSION
    else:
        kind = Kind.OTHER
    return Dialog(kind, title, options, marked[0], text)


def _prompt(rows: list[str]) -> Prompt | None:
    for i in range(len(rows) - 2, 0, -1):
        m = _INPUT.match(rows[i])
        if m and _RULE.match(rows[i - 1]) and any(_RULE.match(r) for r in rows[i + 1:i + 8]):
            return Prompt(m.group(1).strip())
    # Codex 0.169.0: "› what is typed" (its placeholder when empty), its model and folder
    # ("GPT-5.5 default · /proj") a row or two below; no rules around it
    for i in range(len(rows) - 1, -1, -1):
        m = _CODEX_INPUT.match(rows[i])
        if m and not _CHOICE_NUMBERED.match(rows[i]) and any(" · " in r for r in rows[i + 1:i + 4]):
            typed = m.group(1).strip()
            return Prompt("" if typed == _CODEX_PLACEHOLDER else typed)
    return None


def choose(dialog: Dialog, index: int) -> list[bytes]:
    """The arrow keys that move the dialog's selection onto choice ``index`` (one write
    each); Enter is pressed apart, once the screen shows that choice selected."""
    if not 0 <= index < len(dialog.options):
        msg = f"the dialog has no choice {index + 1}"
        raise ValueError(msg)
    step = index - dialog.selected
    return [DOWN] * step if step > 0 else [UP] * -step


def trust_choice(dialog: Dialog, yes: bool) -> int:
    """The trust dialog's choice for yes (Claude Code's "Yes, I trust this folder", Codex's
    "Trust and continue") or no (Claude Code's "No, exit"), found by its words, wherever
    the dialog puts it.

    Raises:
        ValueError: the dialog has no such choice (Codex's has no "no": its Esc goes on
            without trusting).
    """
    wants = ("Yes, I trust", "Trust and continue") if yes else ("No",)
    for i, label in enumerate(dialog.options):
        if label.startswith(wants):
            return i
    msg = f"the trust dialog shows no {wants[0]!r} choice"
    raise ValueError(msg)


__all__ = ["Dialog", "Kind", "Prompt", "Seen", "choose", "read", "trust_choice"]
