"""The spool: events the hook could not send (queue full, or the daemon down).

Contract with the hook (both twins): when ``sendto`` fails with EAGAIN/ENOBUFS
(the queue is full) or ENOENT/ECONNREFUSED (nobody listens) the hook writes
the datagram bytes to ``<spool_dir>/<20-digit ns>-<pid>.json``
(``time.time_ns()`` zero-padded), atomically: written under a name that does
not end in ``.json`` (``.<name>.tmp``) and linked into place.  It does so
only when the spool folder exists, is a real directory and is ours: the
daemon creates it (0700) and leaves it across restarts, so a machine where
aipager never ran (or was uninstalled) collects nothing.  The daemon replays
spooled files in name order (oldest first) and unlinks each one; files older
than ``MAX_AGE`` (by the time in their name) are dropped unreplayed, so a
daemon that was down for days does not replay stale history.
"""

from __future__ import annotations

import errno
import os
import re
import socket
import time
from typing import Callable

SPOOL_RE = re.compile(r"^\d{20}-\d+\.json$")
#: sendto failures that spool: the queue is full, or the daemon is down
SPOOL_ERRNOS = (errno.EAGAIN, errno.ENOBUFS, errno.ENOENT, errno.ECONNREFUSED)
#: a file that does not parse yet may still be being written by a non-atomic writer
SETTLE_SECONDS = 2.0
#: spooled events older than this are dropped, not replayed
MAX_AGE = 24 * 3600.0


def spool_name(ns: int, pid: int) -> str:
    return f"{ns:020d}-{pid}.json"


def write_spool(spool_dir: str, data: bytes) -> str:
    """Spool one datagram as the hook does; returns the file path.

    Raises:
        OSError: the folder is missing, a symlink, not ours, or unwritable.
    """
    dfd = os.open(spool_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        if os.fstat(dfd).st_uid != os.geteuid():
            msg = f"spool folder {spool_dir} is not ours"
            raise PermissionError(msg)
        name = spool_name(time.time_ns(), os.getpid())
        tmp = f".{name}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600, dir_fd=dfd)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
    finally:
        os.close(dfd)
    return os.path.join(spool_dir, name)


def written_at(name: str) -> float:
    """Wall-clock seconds a spool file name records (its 20-digit ns prefix)."""
    return int(name[:20]) / 1e9


def is_stale(name: str, now: float, max_age: float = MAX_AGE) -> bool:
    """True when the spooled event is older than ``max_age`` seconds."""
    return now - written_at(name) > max_age


def discard(spool_dir: str, name: str) -> bool:
    """Remove one spooled file unread; False when another pass took it first."""
    try:
        os.unlink(os.path.join(spool_dir, name))
    except OSError:
        return False
    return True


def pending(spool_dir: str) -> list[str]:
    """Spooled file names, oldest first."""
    try:
        names = os.listdir(spool_dir)
    except OSError:
        return []
    return sorted(n for n in names if SPOOL_RE.match(n))


def take(spool_dir: str, name: str, parses: Callable[[bytes], bool]) -> bytes | None:
    """Read and remove one spooled file.

    Returns None when the file is gone (another pass took it) or does not parse
    yet but is young (a writer may still be at it); an old unparsable file is
    removed and returned so the caller counts it as malformed.
    """
    path = os.path.join(spool_dir, name)
    try:
        with open(path, "rb") as fh:
            data = fh.read()
        if not parses(data):
            if time.time() - os.stat(path).st_mtime < SETTLE_SECONDS:
                return None
        os.unlink(path)
    except FileNotFoundError:
        return None
    except OSError:
        return None
    return data


def send_or_spool(sock: socket.socket, address: str, spool_dir: str, data: bytes) -> str:
    """What the hook does with one datagram: send without waiting, else spool.

    ``sock`` must be a non-blocking ``AF_UNIX``/``SOCK_DGRAM`` socket.  Returns
    ``"sent"``, ``"spooled"`` (queue full, or nobody listens) or ``"lost"``
    (any other error, or no usable spool folder).  The hook twins implement
    the same contract; tests and the bench use this one.
    """
    try:
        sock.sendto(data, address)
        return "sent"
    except OSError as exc:
        if exc.errno not in SPOOL_ERRNOS:
            return "lost"  # EMSGSIZE and the like: spooling would not help
    try:
        write_spool(spool_dir, data)
    except OSError:
        return "lost"
    return "spooled"
