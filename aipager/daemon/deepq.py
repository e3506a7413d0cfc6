"""A control socket with a deeper kernel queue than ``net.unix.max_dgram_qlen``.

Linux lets a Unix datagram socket queue only ``net.unix.max_dgram_qlen``
datagrams (10 by default; changing it needs root), and it reads that value
when the socket is *created*, from the network namespace of the creator.  A
user may create its own user + network namespace (no privilege needed where
the kernel allows unprivileged user namespaces), and there it owns
``/proc/sys/net/unix/max_dgram_qlen``.  So a short-lived helper process does
exactly that, creates the socket inside, hands its descriptor back over a
socketpair and exits.  The daemon binds it to the usual path as before:
filesystem socket names are found by path, not per network namespace, so the
hooks (in the normal namespace) send to it unchanged, and it accepts
``QUEUE_LEN`` datagrams before a sender sees EAGAIN instead of 10.

That turns "the drain must run within half a millisecond at 20,000 events/s"
into "within ~50 ms", which a busy 2-core machine can promise.  Where user
namespaces are refused (containers, some distributions' hardening) the
helper fails and the daemon uses an ordinary socket: nothing else changes.
``AIPAGER_DEEP_QUEUE=0`` turns it off.

Kernel memory stays bounded: each queued datagram is charged to its sender's
send buffer, and at most ``QUEUE_LEN`` of them wait.

Run as ``python -I -S deepq.py FD QUEUE_LEN``: the helper side; this file
imports only the standard library (it must not import aipager).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys

#: datagrams the control socket may queue (~50 ms of traffic at 20,000/s)
QUEUE_LEN = 1024
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
QLEN_FILE = "/proc/sys/net/unix/max_dgram_qlen"


def _unshare(flags: int) -> None:
    if hasattr(os, "unshare"):  # Python >= 3.12
        os.unshare(flags)
        return
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(flags) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def helper(channel: socket.socket, queue_len: int) -> None:
    """The helper process: own namespaces, raised limit, one socket sent back."""
    try:
        _unshare(CLONE_NEWUSER | CLONE_NEWNET)
        with open(QLEN_FILE, "w") as fh:
            fh.write(str(queue_len))
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        socket.send_fds(channel, [b"ok"], [sock.fileno()])
    except OSError as exc:
        channel.send(f"{exc.strerror or exc}".encode())


def deep_socket(queue_len: int = QUEUE_LEN, timeout: float = 10.0) -> tuple[socket.socket | None, str]:
    """An unbound ``AF_UNIX``/``SOCK_DGRAM`` socket queueing ``queue_len`` datagrams.

    Returns:
        ``(socket, "")``, or ``(None, why)`` when this machine does not allow
        it (the caller then makes an ordinary socket).
    """
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-S", __file__, str(theirs.fileno()), str(queue_len)],
            pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, capture_output=True,
            timeout=timeout, check=False)
        theirs.close()  # so the read below cannot wait for a helper that is gone
        ours.setblocking(False)
        try:
            msg, fds, _flags, _addr = socket.recv_fds(ours, 1024, 1)
        except BlockingIOError:
            why = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no answer"]
            return None, f"helper exited {done.returncode}: {why[0]}"
    except (OSError, subprocess.SubprocessError) as exc:
        return None, str(exc)
    finally:
        theirs.close()
        ours.close()
    if not fds:
        return None, msg.decode(errors="replace")
    return socket.socket(fileno=fds[0]), ""


#: Linux SO_NETNS_COOKIE (5.14+; the asm-generic number): a socket's network
#: namespace as a number.  Used only to report whether the raised queue is in effect.
SO_NETNS_COOKIE = 71


def _netns_cookie(sock: socket.socket) -> int | None:
    try:
        return int.from_bytes(sock.getsockopt(socket.SOL_SOCKET, SO_NETNS_COOKIE, 8), "little")
    except OSError:
        return None


def is_deep(sock: socket.socket) -> bool:
    """True when ``sock`` was made by ``deep_socket`` (it lives in another network namespace)."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        mine, theirs = _netns_cookie(probe), _netns_cookie(sock)
    finally:
        probe.close()
    return mine is not None and theirs is not None and mine != theirs


if __name__ == "__main__":
    helper(socket.socket(fileno=int(sys.argv[1])), int(sys.argv[2]))
