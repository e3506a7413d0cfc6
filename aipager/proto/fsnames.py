"""Small file-system helpers: naming a file kept next to another (a backup, a damaged file
set aside), writing a private file, and telling one version of a file from the next."""

from __future__ import annotations

import itertools
import os
import time

from aipager.proto import fsio

#: a damaged file is renamed to ``<name><KEPT_INFIX><UTC stamp>`` next to it
KEPT_INFIX = ".damaged-"


def unused_name(stem: str) -> str:
    """``stem``, else ``stem-2``, ``stem-3``…: the first name where nothing exists.

    A dangling symlink counts as taken: writing there would follow it.
    """
    return next(name for n in itertools.count(1)
                if not os.path.lexists(name := stem if n == 1 else f"{stem}-{n}"))


def keep_aside(path: str, now: float | None = None) -> str:
    """Rename a damaged ``path`` next to itself (``KEPT_INFIX`` and the UTC time); returns
    the new name.

    Raises:
        OSError: it cannot be renamed.
    """
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    kept = unused_name(f"{path}{KEPT_INFIX}{stamp}")
    os.rename(path, kept)
    return kept


def write_private(path: str, data: bytes, *, sync: bool = True) -> None:
    """Write ``data`` to ``path`` owner-only (0600, in a folder created 0700) with aipager's one
    atomic writer (``fsio.write_atomic``).  ``sync=False`` skips the fsync: the file then
    survives a crash of the process, not of the machine."""
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    fsio.write_atomic(path, data, 0o600, sync=sync)


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


def read_tail(path: str, limit: int) -> bytes:
    """The last ``limit`` bytes of the file at ``path``, from its first whole line (b"" when
    it cannot be read): the newest records of a log."""
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - limit))
            data = fh.read()
    except OSError:
        return b""
    if size > limit:
        data = data.split(b"\n", 1)[-1]  # the first line is probably cut
    return data

