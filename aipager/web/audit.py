"""The audit log's last records, for the page (``paths.audit_log``: JSON lines)."""

from __future__ import annotations

import json
from typing import Any

from aipager.proto.fsnames import read_tail

#: how much of the log's end is read
TAIL_BYTES = 512 * 1024


def tail(path: str, limit: int = 100) -> list[dict[str, Any]]:
    """The last ``limit`` records, newest first (a missing log has none; a line that is
    not a JSON object is skipped)."""
    lines = read_tail(path, TAIL_BYTES).splitlines()
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
