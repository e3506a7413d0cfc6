"""The control socket and the drain path that never stalls.

Linux queues only ``net.unix.max_dgram_qlen`` (10 by default) datagrams on a
Unix datagram socket, and the hook never waits: when the queue is full its
``sendto`` fails with EAGAIN and it spools the event instead (``spool``).  At
20,000 events/s ten datagrams are half a millisecond of traffic, so whatever
receives must never wait for the daemon.

Two things keep that from happening:

- ``bind_control_socket(path, queue_len)`` makes the socket through ``deepq``
  where the machine allows it: created in an own user + network namespace, it
  queues ``queue_len`` datagrams (1024: ~50 ms at 20,000/s) instead of 10.
- ``DrainIngest`` (preferred) hands the socket to a separate tiny process
  that only moves datagrams into a pipe; the daemon reads the pipe in large
  chunks.  With a native build that process is ``aipager-drain``
  (``native_drain_exe``: a glibc-only executable installed next to
  ``aipager-hook``, the compiled loop and ``drain.py``'s salvage in C, no
  interpreter); else it is ``python -I -S drain.py`` with the compiled loop
  ``aipager._drain_c`` when it was built (``native_drain_path``: the drain
  loads it by file path, since it must not import aipager), or its Python
  twin loop.  A process rather than a nogil thread here: the Python drain has
  its own GIL, and a drain that crashes or is killed leaves the daemon running
  (``Ingest`` takes over).

``Ingest`` (fallback when the drain cannot run) receives on a thread: it
sleeps in ``poll`` without the GIL and drains the whole kernel queue each time
it wakes, but it needs the GIL for each ``recv``, so a busy loop delays it by
up to a GIL switch interval.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import select
import socket
import stat
import sys
import sysconfig
import threading
from typing import Callable

from aipager import native
from aipager.proto import paths, trust, wire
from aipager.daemon import deepq
from aipager.daemon.drain import FrameReader  # the pipe format lives with its writer
from aipager.proto.errors import DaemonAlreadyRunning, DaemonError, UnsafePath

log = logging.getLogger("aipager.daemon")

#: receive buffer asked for (the kernel caps it at net.core.rmem_max)
RCVBUF = 8 * 1024 * 1024
#: datagrams held in memory for a stalled loop before new ones are dropped (and counted)
MAX_BACKLOG = 1_000_000


def socket_is_live(path: str) -> bool:
    """A daemon listens at ``path`` (a dead one's leftover socket file refuses)."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        probe.connect(path)
    except OSError:
        return False
    finally:
        probe.close()
    return True


def _new_socket(queue_len: int | None) -> socket.socket:
    if queue_len is not None:
        sock, why = deepq.deep_socket(queue_len)
        if sock is not None:
            log.info("control socket queues %d datagrams (own network namespace)", queue_len)
            return sock
        log.info("control socket keeps the system queue length (%s)", why)
    return socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)


def bind_control_socket(path: str, queue_len: int | None = None) -> socket.socket:
    """Bind the daemon's datagram socket at ``path``, owner-only (0600).

    The folder is created 0700 when missing.  A leftover socket file nobody
    listens on is replaced; a live one means another daemon runs.  With
    ``queue_len`` the socket is made to queue that many datagrams where the
    machine allows it (``deepq``), else it is an ordinary socket.

    Raises:
        DaemonAlreadyRunning: something answers on ``path``.
        DaemonError: ``path`` exists and is not a socket, or cannot be bound.
        UnsafePath: ``path`` is another user's socket or a symlink, or its
            folder is the private folder and is not ours (``aipager.proto.trust``).
    """
    folder = os.path.dirname(path) or "."
    if folder == paths.private_dir() or not os.path.isdir(folder):
        trust.make_folder(folder)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    if st is not None:
        # someone else's socket (or symlink) at our name: never talk to it, never unlink it
        found = trust.socket_finding(path)
        if found is not None and found.attack:
            raise UnsafePath(str(found))
        if not stat.S_ISSOCK(st.st_mode):
            msg = f"{path} exists and is not a socket; move it away and start again"
            raise DaemonError(msg)
        if socket_is_live(path):
            msg = f"another aipager daemon is listening on {path}"
            raise DaemonAlreadyRunning(msg)
        os.unlink(path)  # stale: its daemon died without cleaning up
    sock = _new_socket(queue_len)
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

    def flush(self) -> None:
        """Deliver what the thread received but the loop has not taken yet (at shutdown)."""
        self._drain()

    def _drain(self) -> None:
        with self._lock:
            batch, self._pending = self._pending, []
            self._scheduled = False
        if batch:
            self._deliver(batch)


class DrainIngest:
    """Receives through the drain process (``aipager-drain`` or ``drain.py``): the preferred path.

    The drain owns the receiving; the daemon reads its pipe in large chunks on
    the event loop.  A stalled loop only lets the pipe (1 MiB) and then the
    drain's memory fill up; the socket queue stays empty.

    The pipe is read with ``add_reader`` and handed to ``deliver`` in the same
    callback (no stream buffer in between), so what the daemon has read is
    journaled at once (``journal``).  Given the spool folder, the drain also
    holds a read end of the pipe and keeps, in the spool, whatever a daemon
    killed hard never read (``drain.Salvage``).

    Args:
        sock: the bound control socket; its descriptor is passed to the drain.
        deliver: called on the loop with a list of datagrams (oldest first).
        native: let the drain be compiled when it is built: ``aipager-drain``, else
            ``drain.py`` with ``aipager._drain_c`` (False: always ``drain.py``'s Python loop).
        executable: with ``native``, prefer ``aipager-drain`` when it is installed (False:
            ``drain.py`` with the compiled loop; the daemon's ``AIPAGER_DRAIN_EXE=0``).
        spool_dir: where the drain spools what a dead daemon never read (None: nowhere).
        sock_path: the control socket's path (its name is removed when the daemon dies).
    """

    #: bytes read from the pipe per callback at most (then the loop gets a turn)
    READ_BUDGET = 4 * 1024 * 1024

    def __init__(self, sock: socket.socket, deliver: Callable[[list[bytes]], None],
                 native: bool = True, *, spool_dir: str | None = None,
                 sock_path: str | None = None, executable: bool = True) -> None:
        self._sock = sock
        self._deliver = deliver
        self._spool_dir = spool_dir
        self._sock_path = sock_path
        self._proc: asyncio.subprocess.Process | None = None
        self._pipe: int | None = None
        self._frames = FrameReader()
        self._eof: asyncio.Event | None = None
        self.stopping = False
        #: set when the drain ended without being asked to
        self.failed = asyncio.Event()
        #: the installed ``aipager-drain``, or None for ``drain.py``
        self.exe = native_drain_exe() if native and executable else None
        #: the compiled loop's file for ``drain.py`` to load, or None for its Python loop
        self.native_path = native_drain_path() if native and self.exe is None else None

    async def start(self) -> None:
        from aipager.daemon import drain

        fd = self._sock.fileno()
        read_end, write_end = os.pipe2(os.O_CLOEXEC)
        if self.exe is not None:  # drain.py's arguments without NATIVE
            argv = [self.exe, str(fd)]
        else:
            argv = [sys.executable, "-I", "-S", drain.__file__, str(fd), self.native_path or "-"]
        keep = [fd]
        if self._spool_dir and self._sock_path:
            argv += ["-", str(read_end), self._spool_dir, self._sock_path, str(os.getpid())]
            keep.append(read_end)
        try:
            self._proc = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.DEVNULL, stdout=write_end, pass_fds=keep)
        except BaseException:
            os.close(read_end)
            raise
        finally:
            os.close(write_end)
        os.set_blocking(read_end, False)
        self._pipe = read_end
        self._eof = asyncio.Event()
        asyncio.get_running_loop().add_reader(read_end, self._readable)

    def _readable(self) -> None:
        assert self._pipe is not None
        batch: list[bytes] = []
        budget = self.READ_BUDGET
        ended = False
        while budget > 0:
            try:
                chunk = os.read(self._pipe, 1024 * 1024)
            except (BlockingIOError, InterruptedError):
                break
            if not chunk:
                ended = True
                break
            budget -= len(chunk)
            batch += self._frames.feed(chunk)
        if batch:
            self._deliver(batch)
        if ended:
            self._closed()

    def _closed(self) -> None:
        assert self._pipe is not None and self._eof is not None
        asyncio.get_running_loop().remove_reader(self._pipe)
        os.close(self._pipe)
        self._pipe = None
        self._eof.set()
        if not self.stopping:
            asyncio.get_running_loop().create_task(self._report())

    async def _report(self) -> None:
        assert self._proc is not None
        log.error("the ingest drain process ended (exit %s); falling back to a thread",
                  await self._proc.wait())
        self.failed.set()

    async def stop(self) -> None:
        """Ask the drain to hand over everything it holds, and wait for it."""
        self.stopping = True
        if self._proc is None:
            return
        if self._proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._proc.terminate()
        if self._eof is not None:
            try:
                await asyncio.wait_for(self._eof.wait(), 10)
            except asyncio.TimeoutError:
                log.error("the ingest drain did not finish within 10 s; killed")
                with contextlib.suppress(ProcessLookupError):
                    self._proc.kill()
                if self._pipe is not None:
                    self._closed()
        await self._proc.wait()


#: the glibc-only drain executable (setup.py ``EXECUTABLES``; never a twin script)
DRAIN_EXE = "aipager-drain"


def native_drain_exe() -> str | None:
    """The installed ``aipager-drain`` (an ELF executable), or None.

    None when ``aipager.native`` says no (``AIPAGER_NO_EXTENSIONS`` set) or it
    was not installed (no native build); the daemon then runs ``drain.py``.
    Looked for where pip puts ``aipager-hook`` for this interpreter: its
    scripts folder, then the folder of ``sys.executable`` (a venv's ``bin``).
    Never on ``PATH``: another installation's drain is not ours.
    """
    from aipager.claudefiles import is_native

    if native.disabled():
        return None
    for folder in dict.fromkeys((sysconfig.get_path("scripts"), os.path.dirname(sys.executable))):
        candidate = os.path.join(folder, DRAIN_EXE)
        if is_native(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def native_drain_path() -> str | None:
    """File of the compiled drain loop (``aipager._drain_c``), or None.

    None when ``aipager.native`` says no (``AIPAGER_NO_EXTENSIONS`` set, or
    the extension not built); the drain then runs its Python loop.
    Importing it here proves it loads in this interpreter before the drain
    (same interpreter, ``-I -S``) loads it by path.
    """
    module = native.load("_drain_c")
    return None if module is None else module.__file__


def recv_leftovers(sock: socket.socket) -> list[bytes]:
    """Whatever the kernel still queues on ``sock`` (non-blocking), at shutdown."""
    sock.setblocking(False)
    out = []
    while True:
        try:
            out.append(sock.recv(wire.MAX_DATAGRAM + 1024))
        except (BlockingIOError, InterruptedError, OSError):
            return out
