"""The audit log's last records, for the page (``paths.audit_log``: JSON lines)."""

from __future__ import annotations

import json
import os
from typing import Any

#: how much of the log's end is read
TAIL_BYTES = 512 * 1024


def tail(path: str, limit: int = 100) -> list[dict[str, Any]]:
    """The last ``limit`` records, newest first (a missing log has none; a line that is
    not a JSON object is skipped)."""
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - TAIL_BYTES))
            data = fh.read()
    except OSError:
        return []
    lines = data.splitlines()
    if len(data) >= TAIL_BYTES and lines:
        lines = lines[1:]  # the first line is probably cut
    out: list[dict[str, Any]] = []
    for line in reversed(lines):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            out.append(record)
            if len(out) >= limit:
                break
    return out
