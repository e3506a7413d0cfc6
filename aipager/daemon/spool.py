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

Only what is ours is replayed: a spool folder that is a symlink or another
user's is neither used nor changed (``prepare_folder`` says why, the daemon
logs it and goes on), and a file in it that is not a regular file of ours is
never read (``pending`` leaves it out, ``take`` refuses it).
"""

from __future__ import annotations

import errno
import os
import re
import socket
import stat
import time
from typing import Callable

from aipager.proto import spoolfile, trust
from aipager.proto.errors import UnsafePath

SPOOL_RE = re.compile(r"^\d{20}-\d+\.json$")
#: sendto failures that spool: the queue is full, or the daemon is down
SPOOL_ERRNOS = (errno.EAGAIN, errno.ENOBUFS, errno.ENOENT, errno.ECONNREFUSED)
#: a file that does not parse yet may still be being written by a non-atomic writer
SETTLE_SECONDS = 2.0
#: spooled events older than this are dropped, not replayed
MAX_AGE = 24 * 3600.0


def spool_name(ns: int, pid: int) -> str:
    return spoolfile.name_of(ns, pid)


def write_spool(spool_dir: str, data: bytes) -> str:
    """Spool one datagram as the hook does (``spoolfile.write``); returns the file path.

    Raises:
        OSError: the folder is missing, a symlink, not ours, or unwritable.
    """
    return os.path.join(spool_dir, spoolfile.write(spool_dir, data))


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


def prepare_folder(spool_dir: str) -> str | None:
    """Make the spool folder (0700) or tighten ours; None, or why it is not used.

    A folder that is a symlink, another user's or not a folder is left exactly
    as it is (no chmod of someone else's folder): the caller logs the reason.
    """
    try:
        os.mkdir(spool_dir, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        return f"cannot create the spool folder {spool_dir}: {exc.strerror}"
    found = trust.own_folder_finding(spool_dir, "spool folder")
    if found is not None:
        return str(found)
    try:
        dfd = trust.open_own_dir(spool_dir)
    except UnsafePath:
        return f"the spool folder {spool_dir} is not ours"
    except OSError as exc:
        return f"cannot open the spool folder {spool_dir}: {exc.strerror}"
    try:
        if stat.S_IMODE(os.fstat(dfd).st_mode) != 0o700:
            os.fchmod(dfd, 0o700)  # ours: through the descriptor, never a path that may move
    finally:
        os.close(dfd)
    return None


def _own_dir(spool_dir: str) -> int | None:
    """A descriptor of the spool folder if it is a real folder of ours, else None."""
    try:
        return trust.open_own_dir(spool_dir)
    except (OSError, UnsafePath):
        return None


def _own_file(st: os.stat_result) -> bool:
    return stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid()


def _scan(spool_dir: str) -> tuple[list[str], list[str]]:
    """Spool-named entries, oldest first: (regular files of ours, anything else)."""
    dfd = _own_dir(spool_dir)
    if dfd is None:
        return [], []
    own: list[str] = []
    other: list[str] = []
    try:
        for name in sorted(n for n in os.listdir(dfd) if SPOOL_RE.match(n)):
            try:
                st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            except OSError:
                continue  # taken meanwhile
            (own if _own_file(st) else other).append(name)
    except OSError:
        pass
    finally:
        os.close(dfd)
    return own, other


def pending(spool_dir: str) -> list[str]:
    """Spooled file names, oldest first: regular files of ours in a folder of ours."""
    return _scan(spool_dir)[0]


def foreign(spool_dir: str) -> list[str]:
    """Spool-named entries that are not regular files of ours (never replayed)."""
    return _scan(spool_dir)[1]


def take(spool_dir: str, name: str, parses: Callable[[bytes], bool],
         keep: Callable[[bytes], None] | None = None) -> bytes | None:
    """Read and remove one spooled file.

    ``keep`` is given the bytes before the file is removed (the daemon's journal),
    so no moment exists where the datagram is in neither place.

    Returns None when the file is gone (another pass took it), is not a
    regular file of ours (never read, left in place), or does not parse yet
    but is young (a writer may still be at it); an old unparsable file is
    removed and returned so the caller counts it as malformed.
    """
    dfd = _own_dir(spool_dir)
    if dfd is None:
        return None
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
        try:
            st = os.fstat(fd)
            if not _own_file(st):
                return None
            with os.fdopen(fd, "rb", closefd=False) as fh:
                data = fh.read()
        finally:
            os.close(fd)
        if not parses(data):
            if time.time() - st.st_mtime < SETTLE_SECONDS:
                return None
        if keep is not None:
            keep(data)
        os.unlink(name, dir_fd=dfd)
    except OSError:
        return None
    finally:
        os.close(dfd)
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
