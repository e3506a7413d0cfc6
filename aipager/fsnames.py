"""Small file-system helpers: naming a file kept next to another (a backup, a damaged file
set aside), and telling one version of a file from the next."""

from __future__ import annotations

import itertools
import os


def unused_name(stem: str) -> str:
    """``stem``, else ``stem-2``, ``stem-3``…: the first name where nothing exists.

    A dangling symlink counts as taken: writing there would follow it.
    """
    return next(name for n in itertools.count(1)
                if not os.path.lexists(name := stem if n == 1 else f"{stem}-{n}"))


#: what tells one version of a file from another: (inode, mtime ns, size); None when absent
Stamp = tuple[int, int, int] | None


def file_stamp(path: str) -> Stamp:
    """The version of the file at ``path`` (followed: a symlinked file changes through its
    target, as dotfile managers keep it), or None when there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)
