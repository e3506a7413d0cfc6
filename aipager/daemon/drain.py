"""The drain: a tiny separate process that empties the control socket into a pipe.

Run as ``python -I -S drain.py FD [NATIVE [MAX_BACKLOG [PIPE SPOOL SOCKET PID]]]``: the
bound datagram socket arrives as file descriptor FD, and every datagram leaves
on stdout framed as a 4-byte little-endian length and the bytes.  It does
nothing else, so it keeps the socket's ~10-datagram kernel queue empty even
while the daemon's event loop is busy or stalled: it needs no share of the
daemon's GIL.

When the daemon dies without stopping it (``kill -9``, the OOM killer), what
the daemon never read would die with the pipe: the frames in it, the drain's
backlog, the kernel queue.  With the last four arguments (``Salvage``) the
drain keeps them: PIPE is a read end of its own stdout pipe (so the pipe
outlives the daemon), SPOOL the spool folder, SOCKET the control socket's path
and PID the daemon.  When PID exits, the drain removes the socket's name (new
datagrams then go to the spool, as the hooks do when no daemon listens), stops
its loop as on SIGTERM, reads back everything in the pipe and writes each
datagram to the spool as a hook would, named just before that moment, so the
next daemon replays them first, in order.

Two twin loops do the moving, with one contract (the tests run both):

- NATIVE, the path of the compiled ``aipager._drain_c`` (built from
  ``_fasthook/drain_ext.pyx`` around ``_fasthook/drainloop.pxi``; the daemon
  passes its file path because this script must not import aipager: it runs
  with ``-I -S`` to start fast and small).  It never holds the GIL and takes
  the kernel queue in ``recvmmsg`` batches: a fraction of the Python loop's
  cost per datagram.
- the Python loop below, when NATIVE is absent or ``-`` (no compiler at
  install time, ``AIPAGER_NO_EXTENSIONS=1``) or fails to load.

With a native build the daemon does not run this script at all: it runs
``aipager-drain FD [MAX_BACKLOG [PIPE SPOOL SOCKET PID]]`` (these arguments
without NATIVE), a glibc-only executable built from the same loop
(``_fasthook/drain_exe.pyx``) with this file's ``Salvage`` and ``main`` in C:
~1 MB of memory instead of a whole interpreter's ~10.  This script is the
reference it mirrors and the fallback without a compiler (or with the daemon's
``AIPAGER_DRAIN_EXE=0``); the tests run all three.

When the pipe is full the frames wait in memory; once ``MAX_BACKLOG`` bytes
wait, the socket is left unread, so its queue fills and the hooks spool
(nothing is dropped here).  SIGTERM: take what the kernel still queues, write
everything, exit 0.  It also exits (0) when the daemon closes the pipe; with
``Salvage`` (which holds a read end itself, so that close is never seen) when
the daemon dies.
"""

from __future__ import annotations

import fcntl
import os
import select
import signal
import socket
import sys
import threading
import time


def _load_sibling(name: str):
    """``aipager/proto/<name>.py`` (a builtins-only module), loaded by its path: this
    script must not import the package."""
    from importlib.util import module_from_spec, spec_from_file_location

    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    where = os.path.join(package, "proto", f"{name}.py")
    spec = spec_from_file_location(f"aipager_{name}", where)
    if spec is None or spec.loader is None:
        msg = f"no loader for {where}"
        raise ImportError(msg)
    module = module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: the largest datagram read (aipager.proto.wire.RECV_MAX; _drain_c gets it from the same place)
MAX_DATAGRAM = _load_sibling("wire").RECV_MAX
#: datagrams taken after the socket stopped reading, at most (``Salvage._close_door``)
DOOR_READS_MAX = 1 << 16
#: bytes kept in memory while the daemon does not read; beyond it the socket waits
MAX_BACKLOG = 512 * 1024 * 1024
#: Linux F_SETPIPE_SZ: ask for a 1 MiB pipe (the unprivileged maximum by default)
F_SETPIPE_SZ = 1031
PIPE_SIZE = 1024 * 1024


def frame(data: bytes) -> bytes:
    return len(data).to_bytes(4, "little") + data


class FrameReader:
    """Splits the pipe stream ``frame`` writes (4-byte little-endian length + datagram) into
    datagrams: the daemon reading the pipe, and ``Salvage`` reading it back."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, chunk: bytes) -> list[bytes]:
        buf = self._buf
        buf += chunk
        out: list[bytes] = []
        pos = 0
        end = len(buf)
        while end - pos >= 4:
            size = int.from_bytes(buf[pos:pos + 4], "little")
            if end - pos - 4 < size:
                break
            out.append(bytes(buf[pos + 4:pos + 4 + size]))
            pos += 4 + size
        del buf[:pos]
        return out


def _read_all(sock: socket.socket, pending: bytearray, limit: float) -> None:
    # Stops at ``limit`` too: a sender keeping the queue full would otherwise
    # keep this loop reading past the backlog cap.
    while len(pending) < limit:
        try:
            data = sock.recv(MAX_DATAGRAM)
        except (BlockingIOError, InterruptedError):
            return
        pending += frame(data)


def python_loop(fd: int, out: int, wake: int, max_backlog: int) -> int:
    """The pure-Python twin of ``aipager._drain_c.run`` (same arguments, same contract)."""
    sock = socket.socket(fileno=fd)
    sock.setblocking(False)
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    poller.register(wake, select.POLLIN)
    poller.register(out, 0)
    pending = bytearray()
    try:
        while True:
            stopping = False
            for got, mask in poller.poll():
                if got == out and mask & (select.POLLERR | select.POLLHUP):
                    return 0  # the daemon went away
                if got == wake:
                    stopping = True
            _read_all(sock, pending, float("inf") if stopping else max_backlog)
            if stopping:
                break
            if pending:
                try:
                    del pending[: os.write(out, pending)]
                except (BlockingIOError, InterruptedError):
                    pass
                except BrokenPipeError:
                    return 0
            # A full backlog stops reading: the kernel queue fills and the hooks spool.
            poller.modify(fd, select.POLLIN if len(pending) < max_backlog else 0)
            poller.modify(out, select.POLLOUT if pending else 0)
        os.set_blocking(out, True)
        try:
            while pending:
                del pending[: os.write(out, pending)]
        except BrokenPipeError:
            pass
        return 0
    finally:
        sock.detach()  # the descriptor belongs to our caller


class Salvage:
    """Keeps what a dead daemon never read (see the module docstring).

    Args:
        pipe: a read end of the drain's stdout pipe.
        spool_dir: the spool folder (``paths.spool_dir``; used only when it is ours).
        sock_path: the control socket's path; its name is removed only while it
            is the file the daemon bound (same inode as when the drain started).
        fd: the drain's socket.
        pid: the daemon.
        wake: the write end of the loop's wake pipe (a byte stops the loop).
    """

    def __init__(self, pipe: int, spool_dir: str, sock_path: str, fd: int, pid: int,
                 wake: int) -> None:
        self.pipe, self.spool_dir, self.sock_path = pipe, spool_dir, sock_path
        self.fd, self.pid, self.wake = fd, pid, wake
        #: set once the daemon is gone (the watcher then holds the pipe's bytes)
        self.dead = threading.Event()
        self._loop_done = threading.Event()
        self._held = bytearray()
        self._before = 0
        self._thread = threading.Thread(target=self._watch, name="salvage", daemon=True)
        # The name as bound now (the daemon binds before it starts us): a socket file's
        # inode is not the socket's own (fstat of ``fd``), so it is compared with this.
        self._bound: tuple[int, int] | None
        try:
            st = os.stat(sock_path)
            self._bound = (st.st_dev, st.st_ino)
        except OSError:
            self._bound = None

    def start(self) -> None:
        self._thread.start()

    def _wait_for_death(self) -> None:
        try:
            pidfd = os.pidfd_open(self.pid)
        except ProcessLookupError:
            return
        except (OSError, AttributeError):
            # no pidfd (old kernel): our parent changes when the daemon dies
            while os.getppid() == self.pid:
                time.sleep(0.1)
            return
        try:
            select.select([pidfd], [], [])
        finally:
            os.close(pidfd)

    def _watch(self) -> None:
        self._wait_for_death()
        # Named before anything the hooks spool from now on, which comes later.
        self._before = time.time_ns()
        self._cut_socket()
        self.dead.set()
        try:
            os.write(self.wake, b"x")
        except OSError:
            pass
        # The loop now takes the kernel queue and writes its backlog into the pipe
        # (blocking): read it back while it does, until it is done and the pipe empty.
        os.set_blocking(self.pipe, False)
        while True:
            done = self._loop_done.is_set()
            select.select([self.pipe], [], [], 0.05)
            while True:
                try:
                    chunk = os.read(self.pipe, 1 << 20)
                except (BlockingIOError, InterruptedError):
                    break
                if not chunk:
                    break
                self._held += chunk
            if done:
                return

    def _cut_socket(self) -> None:
        try:
            st = os.stat(self.sock_path)
            if (st.st_dev, st.st_ino) == self._bound:
                os.unlink(self.sock_path)
        except OSError:
            pass

    def finish(self) -> int:
        """After the loop stopped for a dead daemon: spool what was held; how many."""
        self._loop_done.set()
        self._thread.join()
        datagrams = FrameReader().feed(bytes(self._held)) + self._close_door()
        return spool_all(self.spool_dir, datagrams, self._before - len(datagrams))

    def _close_door(self) -> list:
        """Once the loop took the kernel queue, nothing sent later may be accepted and then
        lost with the socket.  Cutting the name stops new senders, but one that connected
        before the cut (a hook handing its socket to its Python twin) could still write into
        the queue until we exit: the socket stops reading (``shutdown``: such a write fails
        with EPIPE, and the hook spools it), and what got in before is taken here."""
        late: list = []
        try:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM, fileno=os.dup(self.fd))
        except OSError:
            return late
        try:
            sock.shutdown(socket.SHUT_RD)
            sock.setblocking(False)
            for _ in range(DOOR_READS_MAX):
                late.append(sock.recv(MAX_DATAGRAM))
        except OSError:
            pass  # BlockingIOError: empty, and it stays so
        finally:
            sock.close()
        return late


def spool_all(spool_dir: str, datagrams: list, first_ns: int) -> int:
    """Write each datagram to ``spool_dir`` as the hook does, named ``first_ns``,
    ``first_ns + 1``, …; how many were written (failures are reported on stderr).

    The writer is ``aipager/proto/spoolfile.py``, loaded by its path (``_load_sibling``).
    """
    if not datagrams:
        return 0
    try:
        spoolfile = _load_sibling("spoolfile")
    except (ImportError, OSError) as exc:
        sys.stderr.write(f"aipager drain: cannot spool {len(datagrams)} datagram(s): {exc}\n")
        return 0
    written = 0
    for i, data in enumerate(datagrams):
        try:
            spoolfile.write(spool_dir, data, first_ns + i)
        except OSError as exc:
            sys.stderr.write(f"aipager drain: cannot spool a datagram: {exc}\n")
            continue
        written += 1
    return written


def load_native(path: str):
    """The compiled loop module at ``path``, or None when it cannot be loaded.

    Loaded by file path under its real name (its init function is named after
    it) without importing the ``aipager`` package.
    """
    from importlib.machinery import ExtensionFileLoader
    from importlib.util import module_from_spec, spec_from_file_location

    try:
        loader = ExtensionFileLoader("aipager._drain_c", path)
        spec = spec_from_file_location("aipager._drain_c", path, loader=loader)
        if spec is None:
            msg = f"no module spec for {path}"
            raise ImportError(msg)
        module = module_from_spec(spec)
        loader.exec_module(module)
    except (ImportError, OSError) as exc:
        sys.stderr.write(f"aipager drain: native loop unavailable ({exc}); using the Python loop\n")
        return None
    return module


def _prepare(out: int) -> tuple[int, int]:
    """Pipe size, non-blocking pipe, SIGTERM as a byte on a wake pipe; its two ends."""
    os.set_blocking(out, False)
    try:
        fcntl.fcntl(out, F_SETPIPE_SZ, PIPE_SIZE)
    except OSError:
        pass
    # SIGTERM only writes a byte to this pipe (set_wakeup_fd; CPython's C-level
    # handler does it even while the native loop runs without the GIL), so the
    # poll wakes and the loop stops between two complete steps, never halfway
    # through a write.
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGTERM, lambda *_: None)
    return wake_r, wake_w


def run(fd: int, out: int, native=None, max_backlog: int = MAX_BACKLOG,
        salvage: tuple | None = None) -> int:
    """Move datagrams from socket ``fd`` to pipe ``out`` until SIGTERM or a closed pipe.

    Args:
        fd: the bound datagram socket.
        out: the pipe's write end.
        native: the ``aipager._drain_c`` module, or None for the Python loop.
        max_backlog: bytes held in memory before the socket is left unread.
        salvage: ``(pipe, spool_dir, sock_path, pid)`` to keep what a dead daemon
            never read (``Salvage``), or None.

    Returns:
        0 after a clean stop, else the errno that ended the native loop.
    """
    wake, wake_w = _prepare(out)
    keeper = None
    if salvage is not None:
        pipe, spool_dir, sock_path, pid = salvage
        keeper = Salvage(pipe, spool_dir, sock_path, fd, pid, wake_w)
        keeper.start()
    if native is not None:
        code = native.run(fd, out, wake, max_backlog)
    else:
        code = python_loop(fd, out, wake, max_backlog)
    if keeper is not None and keeper.dead.is_set():
        kept = keeper.finish()
        sys.stderr.write(f"aipager drain: the daemon died; {kept} datagram(s) it never read "
                         "were spooled\n")
    return code


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the daemon decides when to stop
    native = None
    if len(args) > 1 and args[1] != "-":
        native = load_native(args[1])
    max_backlog = int(args[2]) if len(args) > 2 and args[2] != "-" else MAX_BACKLOG
    salvage = None
    if len(args) > 6:
        salvage = (int(args[3]), args[4], args[5], int(args[6]))
    code = run(int(args[0]), sys.stdout.fileno(), native, max_backlog, salvage)
    if code:
        sys.stderr.write(f"aipager drain: stopped by {os.strerror(code)}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
