"""One datagram spooled to a file: the only writer of spool files in Python.

The hook's twin (``hookpy/transport``), the drain's salvage (``daemon/drain``,
which loads this file by path since it must not import the package) and the
tests and benches (``daemon/spool.send_or_spool``) all write through ``write``;
the compiled hook's ``send.pxi`` follows the same contract:

- only into a real folder (no symlink) owned by our uid;
- the bytes go to a dot-temp file (0600, ``O_EXCL``), which is *linked* to
  ``<20-digit ns>-<pid>.json`` and then removed: a reader never sees half a
  file and an existing spool file is never replaced (the next nanosecond's
  name is tried, up to ``TRIES`` times).

Builtins only (``posix``, ``time``): the hook twin imports it.
"""

from __future__ import annotations

import posix
import time

#: names tried (one nanosecond apart) before giving up
TRIES = 64
_DIR_FLAGS = posix.O_RDONLY | posix.O_DIRECTORY | posix.O_NOFOLLOW | posix.O_CLOEXEC
_NEW_FLAGS = posix.O_WRONLY | posix.O_CREAT | posix.O_EXCL | posix.O_NOFOLLOW | posix.O_CLOEXEC


def name_of(ns: int, pid: int) -> str:
    """The spool file name for wall-clock nanoseconds ``ns`` and process ``pid``."""
    return f"{ns:020d}-{pid}.json"


def write(spool_dir: str, data: bytes, ns: int | None = None) -> str:
    """Spool ``data`` as one file in ``spool_dir``; returns the file's name.

    Args:
        ns: the time the name records (default: now); the drain's salvage names
            what a dead daemon never read from just before its death.

    Raises:
        OSError: the folder is missing, a symlink or unwritable;
            ``PermissionError`` when it is not ours; ``FileExistsError`` when
            ``TRIES`` names are taken.
    """
    dfd = posix.open(spool_dir, _DIR_FLAGS)
    try:
        if posix.fstat(dfd).st_uid != posix.geteuid():
            raise PermissionError(13, f"the spool folder {spool_dir} is not ours")
        ns = time.time_ns() if ns is None else ns
        pid = posix.getpid()
        tmp = f".{name_of(ns, pid)}.tmp"
        fd = posix.open(tmp, _NEW_FLAGS, 0o600, dir_fd=dfd)
        try:
            view = memoryview(data)
            while view:
                view = view[posix.write(fd, view):]
        finally:
            posix.close(fd)
        try:
            for tries in range(TRIES):
                name = name_of(ns + tries, pid)
                try:
                    posix.link(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
                except FileExistsError:
                    continue
                return name
            raise FileExistsError(17, f"no free spool file name after {TRIES} tries")
        finally:
            posix.unlink(tmp, dir_fd=dfd)
    finally:
        posix.close(dfd)
