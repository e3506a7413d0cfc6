"""Reading Claude Code's saved conversation (the transcript JSONL) from its tail.

Used when a Stop carries no ``last_assistant_message``, for an idle_prompt that
stands in for a lost Stop, at start to finish tasks whose Stop was missed, and
to see background commands that ended mid-task.  Only the last ``TAIL_BYTES``
are read.
"""

from __future__ import annotations

import os
from typing import Any

import orjson

#: bytes read from the end of a transcript; an answer longer than this is cut at the start
TAIL_BYTES = 512 * 1024
_MARK = "<task-notification>"


def _tail(path: str) -> bytes:
    if not path:
        return b""
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - TAIL_BYTES))
            data = fh.read()
    except OSError:
        return b""
    if size > TAIL_BYTES:
        data = data.split(b"\n", 1)[-1]  # the first line is probably cut
    return data


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
    for entry in reversed(_entries(_tail(path))):
        if not isinstance(entry, dict) or entry.get("isSidechain"):
            continue
        kind = entry.get("type")
        if kind == "user":
            return None
        if kind != "assistant":
            continue
        content = _blocks(entry, "assistant")
        if isinstance(content, list) and any(
                isinstance(b, dict) and b.get("type") == "tool_use" for b in content):
            return None
        return _text_of(entry)
    return None


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
        content = _blocks(entry, "user")
        texts = [content] if isinstance(content, str) else [
            b.get("text", "") for b in content or () if isinstance(b, dict) and b.get("type") == "text"]
        found += [t for t in texts if _MARK in t]
    return found
