"""The audit log: one JSON line per safety event, appended to ``paths.audit_log``.

Two halves, like the output seam: ``from_event`` is a pure function from one of
aipager's own datagrams (and the session it names) to a record, and
``AuditFile`` is the tiny writer.  Handlers hand records to an ``AuditSink``;
tests use ``RecordingAudit``.  The chat's and the page's answers to requests and
forms are records through the same sink (``permission_answer``, ``form_answer``).

Records (every one has ``ts`` in UTC ISO-8601 seconds, ``session``, ``action``):

- ``safety_blocked``: ``label``, ``tool``, ``reason``, ``task`` (its seq or null),
  ``authors`` (who asked for the task, from the queue pick-up: ``user_id``,
  ``msg_id``, ``label`` when the chat queue knew it; empty when typed at the
  terminal or unknown).
- ``send_files_refused``: ``label``, ``tool_use_id``, ``files``
  (``path``, ``code``, ``reason`` each), ``task``, ``authors``.
- ``hook_memory_cap_hit``: ``label``, ``hook``, ``tool``.
- ``report_error``: ``where``, ``hook``, ``kind``, ``place`` — the shape of the
  error only, never event content.
- ``permission_answer`` (a tap, written by ``replies.answer``): ``label``, ``tool``,
  ``answer`` (allow | allow_always | deny | stop), ``via`` (hook_decision |
  keystroke_fallback), ``who``, ``task``.

The file is created 0600 and only ever appended to; the log outlives
``aipager uninstall --purge``.  Writing is best effort: a failure is logged and
counted, never fatal.
"""

from __future__ import annotations

import logging
import os
from datetime import UTC, datetime
from typing import Any, Protocol

import orjson

from aipager.proto import wire
from aipager.proto.fsnames import read_tail
from aipager.port.model import Session

log = logging.getLogger("aipager.daemon")

#: the datagrams that make an audit record
AUDITED = (wire.SAFETY_BLOCKED, wire.SEND_FILES_REFUSED, wire.HOOK_MEMORY_CAP_HIT, wire.REPORT_ERROR,
           wire.PROMPT_BLOCKED)


def iso_seconds(ts: float) -> str:
    """``2026-12-02T13:45:07Z`` for a wall-clock time."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _text(ev: dict, key: str) -> str | None:
    value = ev.get(key)
    return value if isinstance(value, str) else None


def _task_facts(sess: Session | None) -> dict[str, Any]:
    task = sess.task if sess is not None else None
    if task is None:
        return {"task": None, "authors": []}
    return {"task": task.seq, "authors": list(task.authors)}


def _files(ev: dict) -> list[dict[str, Any]]:
    files = ev.get("files")
    if not isinstance(files, list):
        return []
    return [{"path": f.get("path"), "code": f.get("code"), "reason": f.get("reason")}
            for f in files if isinstance(f, dict)]


def from_event(ev: dict, sess: Session | None, now: float) -> dict[str, Any] | None:
    """The audit record for one of aipager's own datagrams, or None if it is not audited.

    Args:
        ev: the decoded datagram.
        sess: the session it names (None for a sessionless ``report_error``).
        now: wall-clock seconds (the registry's clock).

    Returns:
        A JSON-ready dict (see the module docstring), or None.
    """
    action = wire.dispatch_key(ev)
    if action not in AUDITED:
        return None
    record: dict[str, Any] = {
        "ts": iso_seconds(now),
        "session": sess.name if sess is not None else _text(ev, "session"),
        "action": action,
    }
    if action == wire.REPORT_ERROR:
        for key in ("where", "hook", "kind", "place"):
            record[key] = _text(ev, key)
        return record
    record["label"] = sess.label if sess is not None else None
    if action == wire.SAFETY_BLOCKED:
        record.update(tool=_text(ev, "tool"), reason=_text(ev, "reason"), **_task_facts(sess))
    elif action == wire.PROMPT_BLOCKED:
        # the real senders of the messages the block gave up (none: a forged message)
        notes = ev.get("given_up")
        record.update(reason=_text(ev, "reason"), senders=[
            {"user_id": n.get("author_user_id"), "msg_id": n.get("msg_id"), "chat_id": n.get("chat_id")}
            for n in (notes if isinstance(notes, list) else []) if isinstance(n, dict)])
    elif action == wire.SEND_FILES_REFUSED:
        record.update(tool_use_id=_text(ev, "tool_use_id"), files=_files(ev), **_task_facts(sess))
    else:
        record.update(hook=_text(ev, "hook"), tool=_text(ev, "tool"))
    return record


class AuditSink(Protocol):
    def write(self, record: dict[str, Any]) -> None:
        """Store one record; must not raise."""


class RecordingAudit:
    """Keeps records in memory (tests; the default when no file is given)."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def write(self, record: dict[str, Any]) -> None:
        self.records.append(record)


class AuditFile:
    """Appends records as JSON lines to ``path`` (0600, folder 0700 if created).

    Each record is one ``write`` on an ``O_APPEND`` descriptor, so lines from
    concurrent writers never interleave.  Failures are logged and counted in
    ``failures``; the daemon goes on.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.failures = 0

    def write(self, record: dict[str, Any]) -> None:
        line = orjson.dumps(record) + b"\n"
        try:
            os.makedirs(os.path.dirname(self.path) or ".", mode=0o700, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW,
                         0o600)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)
        except OSError as exc:
            self.failures += 1
            log.error("cannot append to the audit log %s: %s", self.path, exc)


#: how much of the log's end is read
TAIL_BYTES = 512 * 1024


def tail(path: str, limit: int = 100) -> list[dict[str, Any]]:
    """The audit log's last ``limit`` records (``paths.audit_log``: JSON lines), newest
    first (a missing log has none; a line that is not a JSON object is skipped)."""
    lines = read_tail(path, TAIL_BYTES).splitlines()
    out: list[dict[str, Any]] = []
    for line in reversed(lines):
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(record, dict):
            out.append(record)
            if len(out) >= limit:
                break
    return out
