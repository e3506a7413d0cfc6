"""Non-blocking datagram send with the spool (send.pxi twin).

errno mapping, the one place it happens: EAGAIN/ENOBUFS (the daemon's queue is
full) and ENOENT/ECONNREFUSED (nobody listens: the daemon is down) -> spool
the datagram, if the spool folder is ours; anything else -> drop.  The hook
never waits on the daemon.

Only a socket of our own takes a datagram (``socket_ours``, checked before
every send): a missing, foreign-owned or symlinked path is "nobody listens",
so the datagram is spooled instead of handed to whoever bound that name.
"""

from __future__ import annotations

import errno
import posix

from aipager.proto import paths, spoolfile
from aipager.hookpy.common import debug_line

TYPE_CHECKING = False
if TYPE_CHECKING:
    import _socket  # at run time only on the first send (Sender.send)

SEND_OK = 0
SEND_SPOOLED = 1
SEND_DROPPED = -1

_FULL = (errno.EAGAIN, errno.ENOBUFS)
#: nobody listens (EPIPE: a dead daemon's drain stopped reading its socket: ``drain``)
_DOWN = (errno.ENOENT, errno.ECONNREFUSED, errno.ENOTCONN, errno.EPIPE)
#: a larger datagram needs SO_SNDBUF raised, which takes the _socket extension
_FD_MAX = 65536
#: sizeof(sockaddr_un.sun_path): a path must fit with its NUL
_SUN_PATH = 108
#: stat.S_IFMT / stat.S_IFSOCK, without importing stat on the hot path
_S_IFMT = 0o170000
_S_IFSOCK = 0o140000


def socket_ours(path: str) -> bool:
    """send.pxi socket_ours: ``path`` is a socket (not a symlink) owned by our uid."""
    try:
        st = posix.lstat(path)
    except (OSError, ValueError):
        return False
    return (st.st_mode & _S_IFMT) == _S_IFSOCK and st.st_uid == posix.getuid()


def passed_socket(argv: list[str]) -> int:
    """The ``--sock=FD`` stage 2 got from the native hook (stage2.pxi), else -1."""
    for arg in argv:
        if arg.startswith("--sock="):
            fd = arg[7:]
            return int(fd) if fd.isdigit() else -1
    return -1


class Sender:
    """One socket per hook run, opened on first use.

    ``fd``: a datagram socket the native hook connected to the daemon before
    it started this interpreter; ``write`` on it needs no extension module.
    """

    def __init__(self, env, debug: bool = False, who: str = "aipager-hook", fd: int = -1) -> None:
        self.path = paths.socket_path(env)
        self.spool = paths.spool_dir(env)
        self.debug = debug
        self.who = who
        self._fd = fd
        self._sock: _socket.socket | None = None
        self._sndbuf = 0

    def send(self, data: bytes) -> int:
        """Send one datagram: SEND_OK, SEND_SPOOLED or SEND_DROPPED."""
        if self._fd >= 0 and len(data) <= _FD_MAX:
            try:
                posix.write(self._fd, data)
            except OSError as exc:
                return self._failed(exc, data)
            debug_line(self.debug, self.who, "sent through the passed socket to", self.path)
            return SEND_OK
        if len(self.path.encode("utf-8", "surrogateescape")) >= _SUN_PATH:
            # send.pxi sender_init: too long for sockaddr_un, every send is dropped
            debug_line(self.debug, self.who, "socket path unusable, dropped")
            return SEND_DROPPED
        if not socket_ours(self.path):
            debug_line(self.debug, self.who, "no socket of ours, spooling:", self.path)
            return SEND_SPOOLED if self._spool(data) else SEND_DROPPED
        # imported on the first send, not at import: a twin run that only decides
        # (a tool call the native hook already forwarded) never loads the extension
        import _socket

        if self._sock is None:
            self._sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_DGRAM | _socket.SOCK_CLOEXEC)
        sock = self._sock
        if len(data) > 65536:
            # a datagram is capped by the sender's SO_SNDBUF: raise it as needed
            if not self._sndbuf:
                self._sndbuf = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_SNDBUF)
            if self._sndbuf < len(data) + 4096:
                sock.setsockopt(_socket.SOL_SOCKET, _socket.SO_SNDBUF, len(data) + 4096)
                self._sndbuf = (len(data) + 4096) * 2
        try:
            sock.sendto(data, _socket.MSG_DONTWAIT | _socket.MSG_NOSIGNAL, self.path)
        except OSError as exc:
            return self._failed(exc, data)
        debug_line(self.debug, self.who, "sent to", self.path)
        return SEND_OK

    def _failed(self, exc: OSError, data: bytes) -> int:
        if exc.errno in _FULL:
            return SEND_SPOOLED if self._spool(data) else SEND_DROPPED
        if exc.errno in _DOWN:
            debug_line(self.debug, self.who, "daemon not reachable, spooling:", self.path)
            return SEND_SPOOLED if self._spool(data) else SEND_DROPPED
        debug_line(self.debug, self.who, "send failed, dropped:", self.path, exc)
        return SEND_DROPPED

    def _spool(self, data: bytes) -> bool:
        """Write the datagram to the spool dir if it is ours: True when stored."""
        try:
            name = spoolfile.write(self.spool, data)
        except OSError as exc:
            debug_line(self.debug, self.who, "not spooled, dropped:", self.spool, exc)
            return False
        debug_line(self.debug, self.who, "spooled", name)
        return True
