"""Claude's last answer from a saved conversation (Claude Code's transcript JSONL).

Used when a Stop carries no ``last_assistant_message`` and for an idle_prompt
that stands in for a lost Stop.  Reads only the tail of the file.
"""

from __future__ import annotations

import os
from typing import Any

import orjson

#: bytes read from the end of a transcript; an answer longer than this is cut at the start
TAIL_BYTES = 512 * 1024


def _text_of(entry: Any) -> str | None:
    if not isinstance(entry, dict) or entry.get("type") != "assistant":
        return None
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content or None
    if not isinstance(content, list):
        return None
    parts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
    text = "\n".join(p for p in parts if p)
    return text or None


def _tail_entries(path: str) -> list[Any]:
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - TAIL_BYTES))
            tail = fh.read()
    except OSError:
        return []
    out = []
    for raw in tail.split(b"\n"):
        if raw.strip():
            try:
                out.append(orjson.loads(raw))
            except orjson.JSONDecodeError:
                continue
    return out


def finished_answer(path: str) -> str | None:
    """Claude's answer if the saved conversation shows the turn ended, else None.

    The turn ended when the last main-conversation entry that is a user or
    assistant message is an assistant message with text and no tool call.  Used
    at start to finish tasks whose Stop arrived while the daemon was down.
    """
    if not path:
        return None
    for entry in reversed(_tail_entries(path)):
        if not isinstance(entry, dict) or entry.get("isSidechain"):
            continue
        kind = entry.get("type")
        if kind == "user":
            return None
        if kind != "assistant":
            continue
        message = entry.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list) and any(
                isinstance(b, dict) and b.get("type") == "tool_use" for b in content):
            return None
        return _text_of(entry)
    return None


def last_answer(path: str) -> str | None:
    """The text of the last assistant message in ``path`` that has text, or None.

    Args:
        path: a transcript JSONL path from an event's ``transcript_path``.

    Returns:
        None when the file is missing, unreadable or has no assistant text
        (tool-only assistant turns are skipped, as are sidechain/subagent entries).
    """
    if not path:
        return None
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - TAIL_BYTES))
            tail = fh.read()
    except OSError:
        return None
    lines = tail.split(b"\n")
    if len(tail) == TAIL_BYTES and size > TAIL_BYTES:
        lines = lines[1:]  # the first line is probably cut
    for raw in reversed(lines):
        if not raw.strip():
            continue
        try:
            entry = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if isinstance(entry, dict) and entry.get("isSidechain"):
            continue
        text = _text_of(entry)
        if text:
            return text
    return None


def _user_texts(entry: Any) -> list[str]:
    if not isinstance(entry, dict) or entry.get("type") != "user":
        return []
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
    return []


def task_notifications(path: str) -> list[str]:
    """``<task-notification>`` texts in the tail of a transcript, oldest first.

    Claude Code folds a background job's end into the running turn without a
    UserPromptSubmit when it happens mid-task; the saved conversation is then
    the only place it shows.
    """
    if not path:
        return []
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - TAIL_BYTES))
            tail = fh.read()
    except OSError:
        return []
    if b"<task-notification>" not in tail:
        return []
    found = []
    for raw in tail.split(b"\n"):
        if b"<task-notification>" not in raw:
            continue
        try:
            entry = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        found += [t for t in _user_texts(entry) if "<task-notification>" in t]
    return found
