"""The single-instance lock: an flock on ``paths.lock_file`` held for the daemon's life."""

from __future__ import annotations

import fcntl
import os

from aipager.proto.errors import DaemonAlreadyRunning, DaemonError


def acquire(path: str) -> int:
    """Take the lock (non-blocking) and write our pid into the file.

    Returns:
        The open file descriptor; keep it open to keep the lock.

    Raises:
        DaemonAlreadyRunning: another process holds the lock.
        DaemonError: the lock file cannot be created.
    """
    try:
        os.makedirs(os.path.dirname(path) or ".", mode=0o700, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        msg = f"cannot create the daemon lock {path}: {exc.strerror}"
        raise DaemonError(msg) from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
        os.close(fd)
        msg = f"the aipager daemon is already running (pid {holder or '?'})"
        raise DaemonAlreadyRunning(msg) from exc
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def release(fd: int) -> None:
    """Drop the lock (closing the descriptor releases the flock)."""
    try:
        os.ftruncate(fd, 0)
    except OSError:
        pass
    os.close(fd)
