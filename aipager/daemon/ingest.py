"""The control socket and the drain path that never stalls.

Linux queues only ``net.unix.max_dgram_qlen`` (10 by default) datagrams on a
Unix datagram socket, and the hook never waits: when the queue is full its
``sendto`` fails with EAGAIN and it spools the event instead (``spool``).  To
keep that queue empty even while the event loop is busy, a dedicated thread
does the receiving: it blocks in ``recv`` (the GIL is released there), and
each time it wakes it drains everything queued with non-blocking reads before
handing the batch to the loop with one ``call_soon_threadsafe``.  The loop
may stall; the thread keeps draining into memory.
"""

from __future__ import annotations

import asyncio
import logging
import os
import select
import socket
import stat
import threading
from typing import Callable

from aipager import wire
from aipager.errors import DaemonAlreadyRunning, DaemonError

log = logging.getLogger("aipager.daemon")

#: receive buffer asked for (the kernel caps it at net.core.rmem_max)
RCVBUF = 8 * 1024 * 1024
#: datagrams held in memory for a stalled loop before new ones are dropped (and counted)
MAX_BACKLOG = 1_000_000


def _socket_is_live(path: str) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        probe.connect(path)
    except OSError:
        return False
    finally:
        probe.close()
    return True


def bind_control_socket(path: str) -> socket.socket:
    """Bind the daemon's datagram socket at ``path``, owner-only (0600).

    The folder is created 0700 when missing.  A leftover socket file nobody
    listens on is replaced; a live one means another daemon runs.

    Raises:
        DaemonAlreadyRunning: something answers on ``path``.
        DaemonError: ``path`` exists and is not a socket, or cannot be bound.
    """
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        os.makedirs(folder, mode=0o700, exist_ok=True)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    if st is not None:
        if not stat.S_ISSOCK(st.st_mode):
            msg = f"{path} exists and is not a socket; move it away and start again"
            raise DaemonError(msg)
        if _socket_is_live(path):
            msg = f"another aipager daemon is listening on {path}"
            raise DaemonAlreadyRunning(msg)
        os.unlink(path)  # stale: its daemon died without cleaning up
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    old_umask = os.umask(0o177)  # born 0600: no window where others could connect
    try:
        sock.bind(path)
    except OSError as exc:
        sock.close()
        msg = f"cannot bind the control socket {path}: {exc.strerror}"
        raise DaemonError(msg) from exc
    finally:
        os.umask(old_umask)
    os.chmod(path, 0o600)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
    except OSError:
        pass
    return sock


class Ingest:
    """Receives datagrams on a thread and delivers them to the loop in batches.

    Args:
        sock: the bound control socket (owned by the caller; not closed here).
        loop: the event loop that runs ``deliver``.
        deliver: called on the loop with a list of datagrams (oldest first).
    """

    def __init__(self, sock: socket.socket, loop: asyncio.AbstractEventLoop,
                 deliver: Callable[[list[bytes]], None]) -> None:
        self._sock = sock
        self._loop = loop
        self._deliver = deliver
        self._lock = threading.Lock()
        self._pending: list[bytes] = []
        self._scheduled = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="aipager-ingest", daemon=True)
        #: datagrams dropped because the in-memory backlog was full
        self.overflow = 0

    def start(self) -> None:
        # Non-blocking socket + poll(): recv never waits, and a pipe wakes the
        # thread for shutdown (closing a socket does not interrupt a blocked recv).
        self._sock.setblocking(False)
        self._wake_r, self._wake_w = os.pipe()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass
        self._thread.join(timeout=2)
        for fd in (self._wake_r, self._wake_w):
            try:
                os.close(fd)
            except OSError:
                pass

    def _run(self) -> None:
        sock = self._sock
        size = wire.MAX_DATAGRAM + 1024
        poller = select.poll()
        poller.register(sock.fileno(), select.POLLIN)
        poller.register(self._wake_r, select.POLLIN)
        recv = sock.recv
        while not self._stop.is_set():
            try:
                poller.poll()
            except InterruptedError:
                continue
            batch: list[bytes] = []
            # Drain the whole kernel queue each time we hold the GIL.
            while True:
                try:
                    batch.append(recv(size))
                except (BlockingIOError, InterruptedError):
                    break
                except OSError as exc:
                    if not self._stop.is_set():
                        log.error("control socket receive failed: %s", exc)
                    break
            if batch:
                self._hand_over(batch)

    def _hand_over(self, batch: list[bytes]) -> None:
        with self._lock:
            room = MAX_BACKLOG - len(self._pending)
            if room < len(batch):
                self.overflow += len(batch) - max(room, 0)
                batch = batch[: max(room, 0)]
            self._pending.extend(batch)
            if self._scheduled:
                return
            self._scheduled = True
        try:
            self._loop.call_soon_threadsafe(self._drain)
        except RuntimeError:
            pass  # loop closed during shutdown

    def _drain(self) -> None:
        with self._lock:
            batch, self._pending = self._pending, []
            self._scheduled = False
        if batch:
            self._deliver(batch)
