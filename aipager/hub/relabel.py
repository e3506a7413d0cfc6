"""A host's text with its session's label as the hub shows it.

A host's daemon renders every text itself (``texts.render``: "🔐 h1 · Bash", "⏳ h1 ·
working") with its own label, ``h1``; it cannot know that another machine runs an ``h1``
too.  The hub can: when its label for the session names the host (``h1@box``), the
label in the text's first line, where every rendering puts it, becomes that.  Pure.
"""

from __future__ import annotations

import re

#: the first line's head: an optional icon (one to three non-space characters and a
#: space), the label, then the " · " that follows it or the end of the line
_HEAD = r"^(?P<icon>\S{{1,3}} )?{label}(?= · |$)"


def relabel(text: str, shown: str) -> str:
    """``text`` with the bare label (``shown`` before its ``@``) in its first line replaced
    by ``shown``; unchanged when ``shown`` names no host or the line has no label."""
    bare, at, _host = shown.partition("@")
    if not (at and bare and text):
        return text
    first, nl, rest = text.partition("\n")
    pattern = re.compile(_HEAD.format(label=re.escape(bare)))
    new = pattern.sub(lambda m: f"{m.group('icon') or ''}{shown}", first, count=1)
    return new + nl + rest
