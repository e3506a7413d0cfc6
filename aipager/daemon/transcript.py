"""Reading Claude Code's saved conversation (the transcript JSONL) from its tail.

Used when a Stop carries no ``last_assistant_message``, for an idle_prompt that
stands in for a lost Stop, at start to finish tasks whose Stop was missed, to
see background commands that ended mid-task, and to see a turn Esc cut short
(Claude Code fires no hook for that).  Only the last ``TAIL_BYTES``
are read.
"""

from __future__ import annotations

from typing import Any

import orjson

from aipager.proto.fsnames import read_tail

#: bytes read from the end of a transcript; an answer longer than this is cut at the start
TAIL_BYTES = 512 * 1024
_MARK = "<task-notification>"
#: the user entry Claude Code (2.1.328) writes when Esc cuts a turn short:
#: "[Request interrupted by user]" or "[Request interrupted by user for tool use]"
INTERRUPT_MARK = "[Request interrupted by user"


def _tail(path: str) -> bytes:
    return read_tail(path, TAIL_BYTES) if path else b""


def _entries(tail: bytes, needle: bytes = b"") -> list[Any]:
    out = []
    for raw in tail.split(b"\n"):
        if raw.strip() and needle in raw:
            try:
                out.append(orjson.loads(raw))
            except orjson.JSONDecodeError:
                continue
    return out


def _blocks(entry: Any, kind: str) -> list[Any] | str | None:
    if not isinstance(entry, dict) or entry.get("type") != kind:
        return None
    message = entry.get("message")
    return message.get("content") if isinstance(message, dict) else None


def _text_of(entry: Any) -> str | None:
    content = _blocks(entry, "assistant")
    if isinstance(content, str):
        return content or None
    if not isinstance(content, list):
        return None
    parts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
    return "\n".join(p for p in parts if p) or None


def _user_texts(entry: Any) -> list[str]:
    """The text blocks of a user entry (a plain string counts as one)."""
    content = _blocks(entry, "user")
    if isinstance(content, str):
        return [content]
    return [b["text"] for b in content or ()
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)]


def _last_turn(tail: bytes) -> dict | None:
    """The last main-conversation (not sidechain) user or assistant entry: whose turn it was."""
    for entry in reversed(_entries(tail)):
        if isinstance(entry, dict) and not entry.get("isSidechain") \
                and entry.get("type") in ("user", "assistant"):
            return entry
    return None


def last_answer(path: str) -> str | None:
    """The text of the last assistant message in ``path`` that has text, or None.

    Args:
        path: a transcript JSONL path from an event's ``transcript_path``.

    Returns:
        None when the file is missing, unreadable or has no assistant text
        (tool-only assistant turns are skipped, as are sidechain/subagent entries).
    """
    for entry in reversed(_entries(_tail(path))):
        if isinstance(entry, dict) and not entry.get("isSidechain"):
            text = _text_of(entry)
            if text:
                return text
    return None


def finished_answer(path: str) -> str | None:
    """Claude's answer if the saved conversation shows the turn ended, else None.

    The turn ended when the last main-conversation entry that is a user or
    assistant message is an assistant message with text and no tool call.
    """
    entry = _last_turn(_tail(path))
    if entry is None or entry.get("type") != "assistant":
        return None
    content = _blocks(entry, "assistant")
    if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_use" for b in content):
        return None
    return _text_of(entry)


def task_notifications(path: str) -> list[str]:
    """``<task-notification>`` texts of user entries in the tail, oldest first.

    Claude Code folds a background job's end into the running turn without a
    UserPromptSubmit when it happens mid-task; the saved conversation is then
    the only place it shows.
    """
    tail = _tail(path)
    if _MARK.encode() not in tail:
        return []
    found: list[str] = []
    for entry in _entries(tail, _MARK.encode()):
        found += [t for t in _user_texts(entry) if _MARK in t]
    return found


def interrupted_at(path: str) -> float | None:
    """When Esc cut the conversation's last turn short, else None.

    Claude Code fires no hook when a turn is interrupted (no Stop follows); it
    writes a user entry starting with ``INTERRUPT_MARK``.  The turn counts as
    interrupted when that entry is the last main-conversation user or assistant
    entry.

    Returns:
        The entry's ``timestamp`` in seconds since the epoch (the caller compares
        it with the task's start, so an older interruption never ends a newer
        task); None when not interrupted or the time cannot be read.
    """
    tail = _tail(path)
    if INTERRUPT_MARK.encode() not in tail:
        return None
    entry = _last_turn(tail)
    if entry is None or entry.get("type") != "user":
        return None
    if not any(t.startswith(INTERRUPT_MARK) for t in _user_texts(entry)):
        return None
    return _epoch(entry.get("timestamp"))


def _epoch(stamp: Any) -> float | None:
    """``2026-12-03T08:15:10.102Z`` → seconds since the epoch (None if unreadable)."""
    from datetime import datetime

    if not isinstance(stamp, str) or not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
