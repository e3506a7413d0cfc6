"""What a Write, Edit or MultiEdit would change: a real unified diff against the file on disk.

A permission request for an edit shows this diff, so the person approves what will
change, not Claude's description of it.  The file is read through an injected reader
(``Ctx.read_text``: ``read_text`` in the daemon, nothing in unit tests) so the event
handlers stay plain functions; anything that cannot be diffed (the file is too big or
not text, an edit's old text is not in it) gives "" and the request shows the edit's
own old and new lines instead (``events.tools.diff_preview``).
"""

from __future__ import annotations

import difflib
import os
from typing import Callable

#: files larger than this are not read for a diff
READ_MAX = 512 * 1024
#: a diff longer than this is not kept on the request's output (it would not be read either)
DIFF_MAX = 200_000

Reader = Callable[[str], "str | None"]


def read_text(path: str) -> str | None:
    """The text of the regular file at ``path``, "" when there is none, None when it cannot
    be used (too big, not UTF-8, not a regular file, unreadable)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        return ""
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not (st.st_mode & 0o170000 == 0o100000) or st.st_size > READ_MAX:
            return None
        data = os.read(fd, READ_MAX + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _after(tool: str, tool_input: dict, before: str) -> str | None:
    """The file's text after the call, or None when the call would not apply as given."""
    if tool == "Write":
        content = tool_input.get("content")
        return content if isinstance(content, str) else None
    edits = tool_input.get("edits") if tool == "MultiEdit" else [tool_input]
    if not isinstance(edits, list) or not edits:
        return None
    text = before
    for edit in edits:
        if not isinstance(edit, dict):
            return None
        old, new = edit.get("old_string"), edit.get("new_string")
        if not isinstance(old, str) or not isinstance(new, str) or old not in text:
            return None
        text = text.replace(old, new) if edit.get("replace_all") is True \
            else text.replace(old, new, 1)
    return text


def unified(tool: str, tool_input: object, cwd: str, read: Reader) -> str:
    """The unified diff (3 lines of context) the call would make, "" when it cannot be made."""
    if not isinstance(tool_input, dict):
        return ""
    path = tool_input.get("file_path")
    if not isinstance(path, str) or not path:
        return ""
    full = path if os.path.isabs(path) else os.path.join(cwd or "/", path)
    before = read(full)
    if before is None:
        return ""
    after = _after(tool, tool_input, before)
    if after is None or after == before:
        return ""
    old_name = "/dev/null" if before == "" and tool == "Write" else f"a{full}"
    lines = difflib.unified_diff(before.splitlines(keepends=True),
                                 after.splitlines(keepends=True), old_name, f"b{full}", n=3)
    text = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
                   for line in lines)
    return text if len(text) <= DIFF_MAX else ""
