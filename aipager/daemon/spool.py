"""The spool: events the hook could not send because the socket queue was full.

Contract with the hook (both twins): when ``sendto`` fails with EAGAIN the
hook writes the datagram bytes to ``<spool_dir>/<20-digit ns>-<pid>.json``
(``time.time_ns()`` zero-padded), atomically: written under a name that does
not end in ``.json`` (``.<name>.tmp``) and renamed into place.  The daemon
replays spooled files in name order (oldest first) and unlinks each one.
"""

from __future__ import annotations

import os
import re
import socket
import time
from typing import Callable

SPOOL_RE = re.compile(r"^\d{20}-\d+\.json$")
#: a file that does not parse yet may still be being written by a non-atomic writer
SETTLE_SECONDS = 2.0


def spool_name(ns: int, pid: int) -> str:
    return f"{ns:020d}-{pid}.json"


def write_spool(spool_dir: str, data: bytes) -> str:
    """Spool one datagram (what the hook does on EAGAIN); returns the file path."""
    name = spool_name(time.time_ns(), os.getpid())
    tmp = os.path.join(spool_dir, f".{name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    path = os.path.join(spool_dir, name)
    os.rename(tmp, path)
    return path


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
    """What the hook does with one datagram: send without waiting, spool when the queue is full.

    ``sock`` must be a non-blocking ``AF_UNIX``/``SOCK_DGRAM`` socket.  Returns
    ``"sent"``, ``"spooled"`` or ``"lost"`` (daemon down, or the spool unwritable).
    The hook twins implement the same contract; tests and the bench use this one.
    """
    try:
        sock.sendto(data, address)
        return "sent"
    except BlockingIOError:
        pass
    except OSError:
        return "lost"  # ENOENT / ECONNREFUSED: nobody listens
    try:
        write_spool(spool_dir, data)
    except OSError:
        return "lost"
    return "spooled"
