"""The drain: a tiny separate process that empties the control socket into a pipe.

Run as ``python -I -S drain.py FD [NATIVE [MAX_BACKLOG]]``: the bound datagram
socket arrives as file descriptor FD, and every datagram leaves on stdout
framed as a 4-byte little-endian length and the bytes.  It does nothing else,
so it keeps the socket's ~10-datagram kernel queue empty even while the
daemon's event loop is busy or stalled: it needs no share of the daemon's GIL.

Two twin loops do the moving, with one contract (the tests run both):

- NATIVE, the path of the compiled ``aipager._drain_c`` (built from
  ``_fasthook/drain_ext.pyx``; the daemon passes its file path because this
  script must not import aipager: it runs with ``-I -S`` to start fast and
  small).  It never holds the GIL and takes the kernel queue in ``recvmmsg``
  batches: a fraction of the Python loop's cost per datagram.
- the Python loop below, when NATIVE is absent or ``-`` (no compiler at
  install time, ``AIPAGER_NO_EXTENSIONS=1``) or fails to load.

When the pipe is full the frames wait in memory; once ``MAX_BACKLOG`` bytes
wait, the socket is left unread, so its queue fills and the hooks spool
(nothing is dropped here).  SIGTERM: take what the kernel still queues, write
everything, exit 0.  It also exits (0) when the daemon closes the pipe.
"""

from __future__ import annotations

import fcntl
import os
import select
import signal
import socket
import sys

#: the largest datagram read (aipager.wire.MAX_DATAGRAM plus slack)
MAX_DATAGRAM = 201_024
#: bytes kept in memory while the daemon does not read; beyond it the socket waits
MAX_BACKLOG = 512 * 1024 * 1024
#: Linux F_SETPIPE_SZ: ask for a 1 MiB pipe (the unprivileged maximum by default)
F_SETPIPE_SZ = 1031
PIPE_SIZE = 1024 * 1024


def frame(data: bytes) -> bytes:
    return len(data).to_bytes(4, "little") + data


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
        module = module_from_spec(spec)
        loader.exec_module(module)
    except (ImportError, OSError) as exc:
        sys.stderr.write(f"aipager drain: native loop unavailable ({exc}); using the Python loop\n")
        return None
    return module


def _prepare(out: int) -> int:
    """Pipe size, non-blocking pipe, SIGTERM as a byte on a wake pipe; the wake read end."""
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
    return wake_r


def run(fd: int, out: int, native=None, max_backlog: int = MAX_BACKLOG) -> int:
    """Move datagrams from socket ``fd`` to pipe ``out`` until SIGTERM or a closed pipe.

    Args:
        fd: the bound datagram socket.
        out: the pipe's write end.
        native: the ``aipager._drain_c`` module, or None for the Python loop.
        max_backlog: bytes held in memory before the socket is left unread.

    Returns:
        0 after a clean stop, else the errno that ended the native loop.
    """
    wake = _prepare(out)
    if native is not None:
        return native.run(fd, out, wake, max_backlog)
    return python_loop(fd, out, wake, max_backlog)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the daemon decides when to stop
    native = None
    if len(args) > 1 and args[1] != "-":
        native = load_native(args[1])
    max_backlog = int(args[2]) if len(args) > 2 else MAX_BACKLOG
    code = run(int(args[0]), sys.stdout.fileno(), native, max_backlog)
    if code:
        sys.stderr.write(f"aipager drain: stopped by {os.strerror(code)}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
