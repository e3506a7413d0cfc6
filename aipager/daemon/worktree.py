"""What a session has changed in its folder, for ``/diff`` and the page's Changes.

A person away from the computer wants to see what Claude did to the project before they
say "commit it" or "undo that", without asking Claude (a paid turn that may itself change
things).  So the daemon compares the project's last commit with its work tree: every file
of ``HEAD`` that differs on disk or is gone, and every new file git does not ignore.

Nothing the project's files configure runs (a task may have written ``.git/config``,
``.gitattributes`` or a ``.git`` file): the commit's files are read through a sealed git
that reads the project's objects as data (``gitread``), the work tree's files are read
here directly (as a Read by the task would read them, a symlink as its target's name),
and the diff is made in Python.

Whoever asks sees only the files a Read of them would be allowed for their task (the
``allowed`` check, from their role and the floor): the diff reaches no further than the
tools do.  Files left out are counted, never named.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import stat
from typing import Callable

from aipager.daemon import gitread
from aipager.port.results import Diff

#: the longest diff shown (the rest is cut, and said to be)
DIFF_CAP = 400_000
#: new files diffed at most (the rest are only named)
NEW_FILES_MAX = 50
#: a file larger than this is named as changed, not diffed line by line
FILE_CAP = 2_000_000
#: how far git looks for a NUL to call a file binary
_BINARY_PROBE = 8000



def _on_disk(path: str) -> tuple[str, bytes] | None:
    """A work-tree file as git would store it: (mode, bytes); None when it is gone or is
    not a file (a folder, a fifo: nothing a diff shows)."""
    try:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            return "120000", os.fsencode(os.readlink(path))
        if not stat.S_ISREG(st.st_mode):
            return None
        # O_NOFOLLOW | O_NONBLOCK: swapped for a link or a fifo since the lstat, it is not read
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(FILE_CAP + 1)
    return ("100755" if st.st_mode & 0o100 else "100644"), data


def _oid(data: bytes, width: int) -> str:
    algo = hashlib.sha256 if width == 64 else hashlib.sha1
    return algo(b"blob %d\0" % len(data) + data).hexdigest()


def _lines(data: bytes) -> list[str]:
    return data.decode("utf-8", "replace").splitlines(keepends=True)


def _patch(name: str, old: tuple[str, bytes] | None, new: tuple[str, bytes] | None) -> str:
    """One file's part of a unified diff, headed as git heads it."""
    head = [f"diff --git a/{name} b/{name}\n"]
    if old is None and new is not None:
        head.append(f"new file mode {new[0]}\n")
    elif new is None and old is not None:
        head.append(f"deleted file mode {old[0]}\n")
    elif old is not None and new is not None and old[0] != new[0]:
        head += [f"old mode {old[0]}\n", f"new mode {new[0]}\n"]
    a, b = (old[1] if old else b""), (new[1] if new else b"")
    if a == b:
        return "".join(head)
    left = f"a/{name}" if old is not None else "/dev/null"
    right = f"b/{name}" if new is not None else "/dev/null"
    if len(a) > FILE_CAP or len(b) > FILE_CAP:
        return "".join(head) + f"Files {left} and {right} differ (too large to show)\n"
    if b"\0" in a[:_BINARY_PROBE] or b"\0" in b[:_BINARY_PROBE]:
        return "".join(head) + f"Binary files {left} and {right} differ\n"
    out = list(difflib.unified_diff(_lines(a), _lines(b), left, right, n=3))
    for i, line in enumerate(out):
        if not line.endswith("\n"):
            out[i] = line + "\n\\ No newline at end of file\n"
    return "".join(head) + "".join(out)


def changes(cwd: str, allowed: Callable[[str], bool], cap: int = DIFF_CAP) -> Diff:
    """The changes of the git work tree holding ``cwd``; ``allowed(path)`` (absolute)
    says whether the asker may see a file."""
    repo = gitread.find(cwd)
    if repo is None:
        return Diff(repo=False)
    commit = gitread.head(repo)
    with gitread.sealed(repo, commit) as git:
        if git is None:
            return Diff(repo=False)
        entries = git.tree(commit) if commit is not None else []
        committed = {e.path: e for e in entries or ()}
        new = sorted(set(git.untracked()) - committed.keys())
        width = len(commit) if commit is not None else 40
        changed: dict[str, tuple[str, bytes] | None] = {}
        for path, entry in committed.items():
            now = _on_disk(os.path.join(repo.top, path))
            if now is None or now[0] != entry.mode or _oid(now[1], width) != entry.oid:
                changed[path] = now
        shown_tracked = sorted(p for p in changed if allowed(os.path.join(repo.top, p)))
        shown_new = [p for p in new if allowed(os.path.join(repo.top, p))]
        hidden = len(changed) + len(new) - len(shown_tracked) - len(shown_new)
        old = git.blobs([committed[p].oid for p in shown_tracked])
    parts: list[str] = []
    size = 0
    for path in shown_tracked:
        entry = committed[path]
        part = _patch(path, (entry.mode, old.get(entry.oid, b"")), changed[path])
        parts.append(part)
        size += len(part)
        if size > cap:
            break
    for path in shown_new[:NEW_FILES_MAX]:
        if size > cap:
            break
        part = _patch(path, None, _on_disk(os.path.join(repo.top, path)) or ("100644", b""))
        parts.append(part)
        size += len(part)
    text = "".join(parts)
    cut = len(text) > cap
    if cut:
        text = text[:cap]
        text = text[:text.rfind("\n") + 1]
    return Diff(text, tuple(shown_tracked + shown_new), hidden, cut)


__all__ = ["DIFF_CAP", "Diff", "changes"]
