"""Records the hub could not read, set aside: a bounded file, one JSON line each.

A bad record is acknowledged (the broker would otherwise give it again, for ever)
and kept here with the host, the subject, its stream sequence and why, so the owner
can see what a host sent.  The file never grows past ``MAX_BYTES``: when it would,
it becomes ``dead-letters.jsonl.1`` (the one before that goes), so a host that floods
the hub fills two files, not the disk.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

import orjson

from aipager.hub import layout

log = logging.getLogger("aipager.hub")

#: bytes of one file before it is set aside as ``.1``
MAX_BYTES = 256 * 1024
#: bytes of the record itself kept (its start, to see what it was)
HEAD_BYTES = 96


def entry(host: str, subject: str, seq: int, reason: str, data: bytes,
          now: float | None = None) -> dict[str, Any]:
    """One dead letter (pure: what ``keep`` writes)."""
    return {"at": time.time() if now is None else now, "host": host, "subject": subject,
            "seq": seq, "reason": reason, "size": len(data),
            "head": bytes(data[:HEAD_BYTES]).decode("utf-8", "replace")}


def keep(path: str, doc: dict[str, Any]) -> None:
    """Append ``doc`` to the file at ``path`` (0600), first setting a full one aside.
    Never raises: a disk problem is logged (the record is acknowledged anyway)."""
    line = orjson.dumps(doc) + b"\n"
    try:
        layout.make_private(os.path.dirname(path))
        try:
            if os.path.getsize(path) + len(line) > MAX_BYTES:
                os.replace(path, path + ".1")
        except FileNotFoundError:
            pass
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
    except OSError as exc:
        log.error("cannot keep a dead letter in %s: %s", path, exc.strerror)


def read(path: str) -> list[dict[str, Any]]:
    """The dead letters kept, oldest first (both files)."""
    found: list[dict[str, Any]] = []
    for name in (path + ".1", path):
        try:
            with open(name, "rb") as fh:
                found.extend(orjson.loads(line) for line in fh if line.strip())
        except OSError:
            continue
    return found
