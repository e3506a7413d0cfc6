"""Finding and stopping a running daemon from the CLI (no socket protocol needed).

The daemon is whoever holds the control socket open: the same /proc lookup
``dtach.kill`` uses for session masters.
"""

from __future__ import annotations

import os
import signal
import time
from typing import Mapping

from aipager import dtach, paths


def daemon_pids(env: Mapping[str, str]) -> set[int]:
    """PIDs of processes bound to the control socket (empty when down)."""
    sock = paths.socket_path(env)
    if not os.path.exists(sock):
        return set()
    pids = dtach.socket_holders(sock)
    pids.discard(os.getpid())
    return pids


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
