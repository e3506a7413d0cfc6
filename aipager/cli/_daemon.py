"""Finding and stopping a running daemon from the CLI (no socket protocol needed).

The daemon is whoever holds the control socket open (the same /proc lookup
``dtach.kill`` uses for session masters) or holds the single-instance lock.
"""

from __future__ import annotations

import os
import signal
import tempfile
import time
from typing import Mapping

from aipager import dtach
from aipager.proto import paths, trust
from aipager.proto.errors import DaemonError

#: ``aipager start`` replaces its process with the daemon's (``aipager.main.exec_daemon``):
#: set by the program (``app.main``); a caller running the app in its own process (tests,
#: ``CliRunner``) keeps the daemon in that process
EXEC = False


def daemon_pids(env: Mapping[str, str]) -> set[int]:
    """PIDs of the running daemon (empty when down).

    Two signs, either suffices: holding the control socket open (found through
    /proc/net/unix, which lists only this network namespace's sockets, so it
    misses the deeper-queued socket ``daemon.deepq`` makes in its own one), and
    holding the single-instance lock whose file names its pid.
    """
    pids: set[int] = set()
    sock = paths.socket_path(env)
    if os.path.exists(sock):
        pids = dtach.socket_holders(sock)
    holder = lock_holder(paths.lock_file(env))
    if holder is not None:
        pids.add(holder)
    pids.discard(os.getpid())
    return pids


def lock_holder(path: str) -> int | None:
    """The pid written in the daemon lock file if that process has the file open.

    Checked through /proc without taking the lock: trying ``flock`` here could
    make a daemon starting at that moment believe another one runs.  A stale pid
    (a crashed daemon, a recycled number) does not have the file open.
    """
    try:
        with open(path, encoding="ascii", errors="replace") as fh:
            text = fh.read(32).strip()
        target = os.path.realpath(path)
    except OSError:
        return None
    if not text.isdigit():
        return None
    return int(text) if target in dtach.fd_targets(int(text)) else None


def stop_daemon(env: Mapping[str, str], grace: float = 5.0) -> bool:
    """SIGTERM a running daemon and wait up to ``grace`` s; True if one was running."""
    pids = daemon_pids(env)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace
    left = set(pids)
    while left and time.monotonic() < deadline:
        left = {p for p in left if dtach.alive(p)}
        time.sleep(0.05)
    return bool(pids)


def ensure_folders(env: Mapping[str, str]) -> None:
    """Create the daemon's folders (0700) and check that each one takes a file.

    Run by ``aipager start`` before anything else, so a read-only HOME or
    state folder stops it with one message instead of a traceback, or a
    daemon that cannot save its state.

    Raises:
        DaemonError: a folder cannot be created or written; names the folder,
            what lives there and the variable that moves it.
        UnsafePath: the private folder is another user's, a symlink or open to others.
    """
    inst = "AIPAGER_INSTANCE_DIR" if env.get("AIPAGER_INSTANCE_DIR") else None
    wanted = [
        (paths.state_dir(env), "log, state and audit log", "XDG_STATE_HOME"),
        (os.path.dirname(paths.lock_file(env)), "single-instance lock", inst or "XDG_DATA_HOME"),
        (paths.control_dir(env), "control socket and spool",
         inst or "XDG_RUNTIME_DIR (or AIPAGER_SOCKET_PATH)"),
        (paths.session_dir(env), "sessions' sockets and files", "AIPAGER_INSTANCE_DIR"),
    ]
    for folder, what, var in wanted:
        try:
            # the private folder is made 0700 or refused (UnsafePath, an attack named)
            trust.make_folder(folder)
            fd, probe = tempfile.mkstemp(prefix=".aipager-probe-", dir=folder)
            os.close(fd)
            os.unlink(probe)
        except OSError as exc:
            msg = (f"cannot write to {folder} ({exc.strerror}), where aipager keeps its {what}; "
                   f"make it writable, or set {var} to a writable folder")
            raise DaemonError(msg) from exc
