"""The drain: a tiny separate process that empties the control socket into a pipe.

Run as ``python -I -S drain.py FD``: the bound datagram socket arrives as file
descriptor FD, and every datagram leaves on stdout framed as a 4-byte
little-endian length and the bytes.  It imports only the standard library and
does nothing else, so it keeps the socket's ~10-datagram kernel queue empty
even while the daemon's event loop is busy or stalled: it needs no share of
the daemon's GIL.  When the pipe is full it keeps datagrams in memory (up to
``MAX_BACKLOG`` bytes) and writes them as the daemon catches up.

SIGTERM: take what the kernel still queues, write everything, exit 0.  It also
exits when the daemon closes the pipe.  This file must not import aipager.
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
#: bytes kept in memory while the daemon does not read
MAX_BACKLOG = 512 * 1024 * 1024
#: Linux F_SETPIPE_SZ: ask for a 1 MiB pipe (the unprivileged maximum by default)
F_SETPIPE_SZ = 1031
PIPE_SIZE = 1024 * 1024


def frame(data: bytes) -> bytes:
    return len(data).to_bytes(4, "little") + data


def _read_all(sock: socket.socket, pending: bytearray) -> None:
    while True:
        try:
            data = sock.recv(MAX_DATAGRAM)
        except (BlockingIOError, InterruptedError):
            return
        if len(pending) < MAX_BACKLOG:
            pending += frame(data)


def run(fd: int, out: int) -> int:
    """Move datagrams from socket ``fd`` to pipe ``out`` until SIGTERM or a closed pipe."""
    sock = socket.socket(fileno=fd)
    sock.setblocking(False)
    os.set_blocking(out, False)
    try:
        fcntl.fcntl(out, F_SETPIPE_SZ, PIPE_SIZE)
    except OSError:
        pass
    # SIGTERM only writes a byte to this pipe (set_wakeup_fd), so the poll wakes
    # and the loop stops between two complete steps, never halfway through a write.
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGTERM, lambda *_: None)
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    poller.register(wake_r, select.POLLIN)
    poller.register(out, 0)
    pending = bytearray()
    while True:
        stopping = False
        for got, mask in poller.poll():
            if got == out and mask & (select.POLLERR | select.POLLHUP):
                return 0  # the daemon went away
            if got == wake_r:
                stopping = True
        _read_all(sock, pending)
        if stopping:
            break
        if pending:
            try:
                del pending[: os.write(out, pending)]
            except (BlockingIOError, InterruptedError):
                pass
            except BrokenPipeError:
                return 0
        poller.modify(out, select.POLLOUT if pending else 0)
    os.set_blocking(out, True)
    try:
        while pending:
            del pending[: os.write(out, pending)]
    except BrokenPipeError:
        pass
    return 0


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the daemon decides when to stop
    return run(int(sys.argv[1]), sys.stdout.fileno())


if __name__ == "__main__":
    sys.exit(main())
