"""Commands that destroy work, named on their permission request.

A request for ``rm -rf`` of the project looked like one for ``touch``: the same Allow.  The
safety policy decides what may run; this only makes the request say, in words, that what it
asks for cannot be undone, so an Allow is not given at a glance.  Pure: a command in, the
kind of damage (or "") out.
"""

from __future__ import annotations

import re

#: (pattern, what it does), checked in order on a shell command; the first match names it
_DESTRUCTIVE = (
    (re.compile(r"(^|[;&|(]\s*|\bsudo\s+)rm\s+(-\S*\s+)*-\S*[rR]"), "rm -r"),
    (re.compile(r"\bgit\s+reset\s+(\S+\s+)*--hard\b"), "git reset --hard"),
    (re.compile(r"\bgit\s+clean\s+(\S+\s+)*-\S*f"), "git clean -f"),
    (re.compile(r"\bgit\s+push\s+(\S+\s+)*(--force\b|--force-with-lease\b|-f\b)"),
     "git push --force"),
    (re.compile(r"\bgit\s+checkout\s+(\S+\s+)*--\s+\.(\s|$)"), "git checkout -- ."),
    (re.compile(r"\bfind\s.*\s-delete\b"), "find -delete"),
    (re.compile(r"\bmkfs(\.\w+)?\s"), "mkfs"),
    (re.compile(r"\bdd\s.*\bof="), "dd of="),
    (re.compile(r"\b(DROP|TRUNCATE)\s+(TABLE|DATABASE|SCHEMA)\b", re.IGNORECASE), "DROP/TRUNCATE"),
)


def destructive(command: str) -> str:
    """What ``command`` destroys, as a short name (``rm -r``), or "" when nothing is known."""
    for pattern, name in _DESTRUCTIVE:
        if pattern.search(command):
            return name
    return ""
