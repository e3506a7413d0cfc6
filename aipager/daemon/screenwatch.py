"""A session's real screen, kept current: the daemon attached to its dtach socket as one
more (silent) terminal, its output run through a terminal emulator (pyte).

dtach sends every attached client what the program draws; it has no screen of its own to
hand a newcomer.  So a watcher, when it attaches, makes Claude Code draw itself whole: a
session nobody ever attached to has no size yet, and gets one (``DEFAULT_SIZE``); one that
has a size (someone's terminal) is resized by one column and back, which Claude Code
answers with a full redraw.  A size that came back before the program looked draws nothing
(measured on 2.1.328: it reads the size when it gets to the signal), so the size goes back
only once the program has drawn for the narrower one (its redraw begins by erasing the
screen, ``ESC [2J``), not after a pause: on a loaded machine a pause was too short and the
watcher was left with a screen never drawn whole.  From then on the watcher follows every
byte, and follows the pty's size, which a person's attach changes (read from the session's
own pty: ``pty_size``).

The watcher never types: it speaks dtach's attach protocol (a ``MSG_ATTACH`` packet, then
window-size packets only) and reads.  ``DtachIO.attached`` leaves it out of the count of
people at the computer.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import struct
import termios
from typing import Callable

from aipager import dtach

log = logging.getLogger("aipager.daemon")

#: rows, columns given to a session that has no size yet (never attached to)
DEFAULT_SIZE = (50, 160)
#: dtach's packet: type, length, 8 bytes (a ``struct winsize`` or pushed bytes)
_MSG_ATTACH, _MSG_WINCH = 1, 3
#: a full redraw begins by erasing the whole screen
_ERASE = b"\x1b[2J"
#: how long the narrower size waits for the program's redraw (one that never redraws on a
#: resize gets its size back then)
REDRAW_MOST = 3.0


def _packet(kind: int, rows: int = 0, cols: int = 0) -> bytes:
    return struct.pack("BB", kind, 0) + struct.pack("HHHH", rows, cols, 0, 0)


def session_tty(socket_path: str) -> str | None:
    """The terminal the program behind a dtach socket runs on (``/dev/pts/N``: its
    master's child's standard input, Linux /proc), or None."""
    for pid in dtach.session_pids(socket_path):
        try:
            tty = os.readlink(f"/proc/{pid}/fd/0")
        except OSError:
            continue
        if tty.startswith("/dev/pts/"):
            return tty
    return None


def tty_size(tty: str) -> tuple[int, int] | None:
    """A terminal's (rows, columns); (0, 0) when nobody gave it a size; None when it
    cannot be read (one ioctl: cheap enough to ask before every redraw)."""
    try:
        fd = os.open(tty, os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        raw = fcntl.ioctl(fd, termios.TIOCGWINSZ, b"\0" * 8)
    except OSError:
        return None
    finally:
        os.close(fd)
    rows, cols = struct.unpack("HHHH", raw)[:2]
    return rows, cols


class ScreenWatch:
    """One session's screen.

    Args:
        socket_path: the session's dtach socket.
        tty_of: finds the session's terminal (``session_tty``; tests give their own).
        size_of: reads a terminal's (rows, columns) (``tty_size``).
        redraw_most: how long a resize waits for the program's redraw (``REDRAW_MOST``).
    """

    def __init__(self, socket_path: str,
                 tty_of: Callable[[str], str | None] = session_tty,
                 size_of: Callable[[str], tuple[int, int] | None] = tty_size,
                 redraw_most: float = REDRAW_MOST) -> None:
        import pyte  # ~9 MB: loaded when a first screen is read, not when the daemon starts

        self.socket_path = socket_path
        self._tty_of = tty_of
        self._size_of = size_of
        self._redraw_most = redraw_most
        self._tty: str | None = None
        rows, cols = DEFAULT_SIZE
        self._screen = pyte.Screen(cols, rows)
        self._stream = pyte.ByteStream(self._screen)
        self._writer: asyncio.StreamWriter | None = None
        self._task: asyncio.Task[None] | None = None
        self._changed = asyncio.Event()
        #: bumped for every chunk drawn
        self.version = 0
        #: full redraws seen (``_ERASE``), and the end of the last chunk, where one may begin
        self._erased = 0
        self._tail = b""
        self.closed = False

    @property
    def connected(self) -> bool:
        return self._writer is not None and not self.closed

    def rows(self) -> list[str]:
        """The screen as it is now, one string a row."""
        return list(self._screen.display)

    async def start(self) -> None:
        """Attach, and make the program draw itself whole.

        Raises:
            OSError: the socket does not answer.
        """
        reader, writer = await asyncio.open_unix_connection(self.socket_path)
        self._writer = writer
        writer.write(_packet(_MSG_ATTACH))
        self._tty = await asyncio.to_thread(self._tty_of, self.socket_path)
        size = self._size_of(self._tty) if self._tty else None
        self._task = asyncio.create_task(self._pump(reader))
        if not size or not all(size):
            rows, cols = DEFAULT_SIZE
            self._screen.resize(rows, cols)
            writer.write(_packet(_MSG_WINCH, rows, cols))
        else:
            rows, cols = size
            self._screen.resize(rows, cols)
            erased = self._erased
            writer.write(_packet(_MSG_WINCH, rows, max(1, cols - 1)))
            await writer.drain()
            await self._redrawn_since(erased, self._redraw_most)
            writer.write(_packet(_MSG_WINCH, rows, cols))
        await writer.drain()

    async def _redrawn_since(self, erased: int, most: float) -> bool:
        """Wait until the program has begun a full redraw after ``erased`` were seen (at
        most ``most`` seconds); whether it did."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + most
        while self._erased == erased and not self.closed:
            left = deadline - loop.time()
            if left <= 0:
                return False
            await self.changed(min(left, 0.1))  # (a chunk may land between check and wait)
        return self._erased != erased

    async def _pump(self, reader: asyncio.StreamReader) -> None:
        try:
            while True:
                data = await reader.read(1 << 16)
                if not data:
                    break
                self.version += 1
                if _ERASE in self._tail + data:
                    self._erased += 1
                self._tail = data[-(len(_ERASE) - 1):]
                # a person's attach resizes the pty, and the redraw that follows is only
                # read right at the new size (an open and an ioctl: microseconds)
                self._follow_size()
                self._stream.feed(data)
                self._changed.set()
        except (OSError, asyncio.IncompleteReadError) as exc:
            log.debug("screen of %s: %s", self.socket_path, exc)
        finally:
            self.closed = True
            self._changed.set()

    def _follow_size(self) -> None:
        size = self._size_of(self._tty) if self._tty else None
        if size and all(size) and size != (self._screen.lines, self._screen.columns):
            self._screen.resize(*size)

    async def changed(self, timeout: float) -> bool:
        """Wait until something more is drawn (or ``timeout``); whether it was."""
        self._changed.clear()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._changed.wait(), timeout)
            return True
        return False

    async def close(self) -> None:
        self.closed = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(OSError, ConnectionError):
                await self._writer.wait_closed()


__all__ = ["DEFAULT_SIZE", "REDRAW_MOST", "ScreenWatch", "session_tty", "tty_size"]
