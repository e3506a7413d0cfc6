"""The event journal: what the daemon accepted since its last saved state.

The state file is written at most once a second, so a daemon killed hard
(``kill -9``, the OOM killer, a power cut of the process) would lose what it
handled since: in the worst case a whole new session.  The journal closes that
gap.  Every datagram is appended here *before* it is handled (one ``write`` per
batch, no fsync: it must survive the process, not the machine), each frame
numbered::

    seq (8 bytes, little-endian) | length (4 bytes, little-endian) | the datagram

A saved state records the number of the last datagram it includes
(``daemon.journal_seq``); once it is written the journal is emptied.  At start
the daemon feeds again every frame numbered past the saved one, in order,
before the spool (what the hooks wrote while it was down).  A torn last frame
(killed mid-write) is ignored; a journal from a different state (numbers not
past it) replays nothing twice.

Writing never blocks event handling: a journal that cannot be written is
logged once and the daemon goes on without it (as before the journal existed).
Past ``SAVE_AT`` bytes (a flood) the daemon saves at once instead of at the
next second; the size is capped (``MAX_BYTES``: saves that keep failing would
otherwise let it grow without end) and past the cap it is logged once and not
appended to.
"""

from __future__ import annotations

import logging
import os
from typing import Iterable

from aipager.proto import fsio

log = logging.getLogger("aipager.daemon")

#: past this many bytes the daemon saves its state at once (``due``), which empties it:
#: a flood is journaled in full without the journal growing with it
SAVE_AT = 16 * 1024 * 1024
#: bytes the journal may reach between two saves (only when saving keeps failing)
MAX_BYTES = 64 * 1024 * 1024
_HEAD = 12


def frames(seq: int, batch: Iterable[bytes]) -> tuple[bytes, int]:
    """The journal bytes of ``batch`` numbered from ``seq + 1``, and the last number."""
    out = bytearray()
    for data in batch:
        seq += 1
        out += seq.to_bytes(8, "little")
        out += len(data).to_bytes(4, "little")
        out += data
    return bytes(out), seq


def parse(blob: bytes, after: int) -> tuple[list[tuple[int, bytes]], int]:
    """The ``(number, datagram)`` frames numbered past ``after`` (in order) and the
    highest number seen.

    Stops at a torn or impossible frame: everything before it is kept.
    """
    out: list[tuple[int, bytes]] = []
    top = after
    pos, end = 0, len(blob)
    while pos + _HEAD <= end:
        seq = int.from_bytes(blob[pos:pos + 8], "little")
        size = int.from_bytes(blob[pos + 8:pos + _HEAD], "little")
        if pos + _HEAD + size > end:
            break  # torn: the process died in this write
        if seq > top:
            out.append((seq, blob[pos + _HEAD:pos + _HEAD + size]))
            top = seq
        pos += _HEAD + size
    return out, top


def read(path: str, after: int) -> tuple[list[tuple[int, bytes]], int]:
    """``parse`` of the journal at ``path`` (nothing when it is missing or unreadable)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        if not isinstance(exc, FileNotFoundError):
            log.error("cannot read the event journal %s: %s", path, exc.strerror)
        return [], after
    try:
        st = os.fstat(fd)
        if st.st_uid != os.getuid():
            log.error("event journal %s is not ours; not replayed", path)
            return [], after
        with os.fdopen(fd, "rb", closefd=False) as fh:
            blob = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        log.error("cannot read the event journal %s: %s", path, exc.strerror)
        return [], after
    finally:
        os.close(fd)
    return parse(blob, after)


class Journal:
    """The daemon's open journal file.

    Args:
        path: the journal (``paths.journal_file``), created 0600.
        seq: the number of the last datagram already accepted (restored at start).
    """

    def __init__(self, path: str, seq: int = 0) -> None:
        self.path = path
        #: the number of the last datagram appended
        self.seq = seq
        self._fd: int | None = None
        self._size = 0
        #: the last failure logged (None: writing works)
        self._problem: str | None = None

    def _open(self) -> int | None:
        if self._fd is None:
            try:
                self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND
                                   | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
                self._size = os.fstat(self._fd).st_size
            except OSError as exc:
                self._fail(f"cannot open the event journal {self.path}: {exc.strerror}")
        return self._fd

    def _fail(self, problem: str) -> None:
        if problem != self._problem:
            log.error("%s; events since the last save would be lost on a crash", problem)
            self._problem = problem

    def append(self, batch: list[bytes]) -> int:
        """Number ``batch`` and write it (one system call); never raises.

        Returns:
            The number given to its first datagram (the next ones follow on).
        """
        first = self.seq + 1
        data, self.seq = frames(self.seq, batch)
        fd = self._open()
        if fd is None:
            return first
        if self._size + len(data) > MAX_BYTES:
            self._fail(f"the event journal {self.path} reached its cap of {MAX_BYTES:,} bytes "
                       "(saving the state fails or falls behind)")
            return first
        problem = fsio.append_whole(fd, data, self._size)
        if problem:
            self._fail(f"the event journal {self.path} {problem}")
            return first
        self._size += len(data)
        return first

    @property
    def due(self) -> bool:
        """Big enough that the state should be saved now (and the journal emptied)."""
        return self._size >= SAVE_AT

    def saved(self) -> None:
        """The state now holds everything appended: empty the journal."""
        if self._fd is None or self._size == 0:
            return
        try:
            os.ftruncate(self._fd, 0)
        except OSError as exc:
            self._fail(f"cannot empty the event journal {self.path}: {exc.strerror}")
            return
        self._size = 0
        if self._problem is not None:
            log.info("the event journal is written again")
            self._problem = None

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
