"""The keys that answer Claude Code's terminal dialogs (measured on 2.1.328).

Pure functions: each returns the writes to press, one ``dtach -p`` write per
key (``SessionIO.press``).  The sequences were measured on the real TUI and are
kept in ``tests/fixtures/tui_keys.json``, whose e2e test proves them; a unit
test holds these functions to that file.

- Permission dialogs: "1" is Yes for every tool; "2" is Bash's "don't ask
  again" (for Write/Edit it switches the session to accept-edits mode); Esc is
  No for every tool ("3" would be "auto mode" for Bash).
- AskUserQuestion: a digit picks option i+1 (single-select answers and moves
  on; multi-select toggles); "Type something." is n Downs away, then the text,
  then Enter (or, in multi-select, Down Enter to leave the field); Tab moves a
  multi-select question on; with several questions or a multi-select one a
  review tab ends the dialog and Enter submits.
"""

from __future__ import annotations

from dataclasses import dataclass

from aipager.port.commands import QuestionAnswer as Answer

UP = b"\x1b[A"
DOWN = b"\x1b[B"
ENTER = b"\r"
ESC = b"\x1b"
TAB = b"\t"

PERMISSION = {"allow": [b"1"], "allow_always": [b"2"], "deny": [ESC], "stop": [ESC]}


@dataclass(frozen=True)
class Question:
    text: str
    options: tuple[str, ...]
    multi: bool = False


def permission(kind: str) -> list[bytes]:
    """Keys for a permission dialog: ``allow``, ``allow_always``, ``deny`` or ``stop``."""
    return list(PERMISSION[kind])


def question_keys(asked: list[dict], answers: list[Answer]) -> list[bytes]:
    """``questions`` for a question request's questions as the daemon keeps them
    (``{question, options, multi}``: ``Request.questions``)."""
    qs = [Question(q.get("question", ""), tuple(q.get("options") or ()), bool(q.get("multi")))
          for q in asked]
    return questions(qs, answers)


def _typed(text: str) -> bytes:
    # One write, no line breaks: a CR would submit early, an LF would be a paste.
    return " ".join(text.split()).encode("utf-8")


def questions(qs: list[Question], answers: list[Answer]) -> list[bytes]:
    """Keys that answer every question of one AskUserQuestion call, then submit."""
    keys: list[bytes] = []
    for q, a in zip(qs, answers, strict=True):
        n = len(q.options)
        if not q.multi:
            if a.text:
                keys += [DOWN] * n + [_typed(a.text), ENTER]
            else:
                keys.append(str(a.picks[0] + 1).encode())
            continue
        keys += [str(i + 1).encode() for i in a.picks]
        if a.text:
            keys += [DOWN] * n + [_typed(a.text), DOWN, ENTER]
        else:
            keys.append(TAB)
    if len(qs) > 1 or any(q.multi for q in qs):
        keys.append(ENTER)  # the review tab: "1. Submit answers" is selected
    return keys


def decline() -> list[bytes]:
    """Keys that decline the whole dialog (the turn is interrupted)."""
    return [ESC]
