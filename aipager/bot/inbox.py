"""The update journal: each Telegram update is kept on disk before Telegram hears it arrived.

``getUpdates`` with an offset confirms every update below it, and the poller asks again as
soon as it has passed a batch on (handlers run as tasks), so an update is confirmed before
its handler has typed anything: a process killed in between would lose the message.  So each
batch is appended here (one ``write``, no fsync: it must survive the process, not the
machine) before the poller asks again, and the next start handles first, in order, the
updates kept here that were not handled.

Records, one JSON line each::

    {"u": <the update as Telegram sent it>}    received
    {"done": <update_id>}                      handled

An update is handled once its handler ran, whatever the outcome.  That is kept twice:
``ChatState.handled`` (the id up to which every update is handled, saved with the chat state
about once a second) and a ``done`` line (written at once).  After each save the journal keeps
only the updates past the saved id (``trim``).  Never acted on again: an update at or below
``ChatState.handled``, one with a ``done`` line, one Telegram delivers again (a kill between
receiving and confirming) after this journal has it: its ids only grow.

Acting twice: a message's handler writes its ``done`` line once its text is pasted, right
before the Enter (``acting``, called by ``DtachIO`` through ``Actions.type_message``; a held
one right after the daemon saved it held), not after. The typing mark (``DtachIO``) is on disk
from before the paste until the Enter is written, so a hard kill at any point leaves one of: no
mark and no ``done`` line (the next start types it); the mark and no ``done`` line (the paste,
if any, had no Enter: the next start clears the input box and types it, without telling anyone
it was cut off, ``ChatBot.types_again``); the mark and the line (killed between the two writes
before the Enter: cleared, and said on the message that it was cut off); the line and no mark
(typed once). Two windows of two adjacent system calls remain: between the ``done`` line and
the Enter (the message is said to be cut off, correctly), and between the Enter and the mark's
removal (typed once, and yet said to be cut off). A held one killed between its save and its
line is held again in its own place. What else remains: a command or tap killed mid-handler,
before its ``done`` line, is handled again at the next start (a /status answered twice, a Stop
pressed twice); an album is handled part by part as its files are saved, so a kill in the 1.5 s
it waits for more parts loses its prompt (the files stay).

A line that is not a record (a torn last write, a stray edit) ends the reading: what came
before it is used, the file is kept aside as ``<name>.damaged-<UTC stamp>`` and the log says
so.  A journal that cannot be written is logged once and the bot goes on without it (as before
it existed); past ``MAX_BYTES`` (only when saving the chat state keeps failing) nothing more is
appended.
"""

from __future__ import annotations

import contextvars
import logging
import os
import stat
from collections import OrderedDict
from typing import Any, Callable

import orjson

from aipager.proto import fsio
from aipager.proto.fsnames import keep_aside, write_private

log = logging.getLogger("aipager.bot")

#: bytes the journal may reach between two trims (only when saving keeps failing)
MAX_BYTES = 8 * 1024 * 1024

#: in a handler's task: what marks its update handled (``acting``)
_ACTING: contextvars.ContextVar[Callable[[], None] | None] = contextvars.ContextVar(
    "aipager_update_acting", default=None)


def handling(mark: Callable[[], None]) -> None:
    """In the task that runs one update's handler: ``mark`` makes it handled (``acting``).

    Each task runs in its own copy of the context, so this stays with that update (and the
    tasks it starts, an album's wait).
    """
    _ACTING.set(mark)


def acting() -> None:
    """The current update is about to act (type or hold a prompt): from here on it counts as
    handled, durably, so a kill and a replay never act on it twice.  No-op outside a handler."""
    mark = _ACTING.get()
    if mark is not None:
        mark()


def _update_id(item: Any) -> int | None:
    uid = item.get("update_id") if isinstance(item, dict) else None
    return uid if isinstance(uid, int) and not isinstance(uid, bool) else None


def message_of(raw: Any) -> tuple[int, int] | None:
    """The (chat id, message id) of an update that is a message; else None."""
    msg = raw.get("message") if isinstance(raw, dict) else None
    if not isinstance(msg, dict) or not isinstance(msg.get("chat"), dict):
        return None
    chat = msg["chat"]
    chat_id, msg_id = chat.get("id"), msg.get("message_id")
    if isinstance(chat_id, int) and isinstance(msg_id, int):
        return chat_id, msg_id
    return None


def parse(blob: bytes) -> tuple[list[dict[str, Any]], set[int], str | None]:
    """The updates, the ``done`` ids and, when a line is not a record, what is wrong
    (reading stopped there)."""
    updates: list[dict[str, Any]] = []
    done: set[int] = set()
    lines = blob.split(b"\n")
    torn = lines.pop()  # what follows the last newline: nothing, unless a write was cut off
    problem = _records(lines, updates, done)
    if problem is None and torn:
        problem = "its last line is cut off"
    return updates, done, problem


def _records(lines: list[bytes], updates: list[dict[str, Any]], done: set[int]) -> str | None:
    for number, line in enumerate(lines, 1):
        try:
            doc = orjson.loads(line)
        except orjson.JSONDecodeError:
            return f"line {number} is not JSON"
        if isinstance(doc, dict) and _update_id(doc.get("u")) is not None:
            updates.append(doc["u"])
        elif isinstance(doc, dict) and _update_id({"update_id": doc.get("done")}) is not None:
            done.add(doc["done"])
        else:
            return f"line {number} is not an update record"
    return None


class Inbox:
    """The chat's open update journal (``paths.updates_journal_file``).

    Args:
        path: the journal file, 0600.
        handled: the saved ``ChatState.handled``.
        on_change: called when an update became handled (the chat state should be saved).
    """

    def __init__(self, path: str, handled: int = 0, *,
                 on_change: Callable[[], None] = lambda: None) -> None:
        self.path = path
        #: every update up to this id is handled and saved as such
        self.saved = handled
        #: the highest update id kept (or handled): Telegram's ids only grow, so one at or
        #: below it was seen before
        self.top = handled
        self._on_change = on_change
        #: updates past ``saved``, by id, in the order received
        self._kept: OrderedDict[int, dict[str, Any]] = OrderedDict()
        self._done: set[int] = set()
        self._fd: int | None = None
        self._size = 0
        #: the last failure logged (None: writing works)
        self._problem: str | None = None

    # -- start -----------------------------------------------------------------

    def load(self) -> list[dict[str, Any]]:
        """Read the journal left by the last run; the updates kept and not handled, in order.

        A damaged journal is kept aside (logged) after what came before the damage is taken.
        """
        blob, problem = self._read()
        updates, done, bad = parse(blob) if blob else ([], set(), None)
        problem = problem or bad
        for raw in updates:
            uid = _update_id(raw)
            if uid is not None and uid > self.saved and uid not in self._kept:
                self._kept[uid] = raw
                self.top = max(self.top, uid)
        self._done = {uid for uid in done if uid in self._kept}
        if problem is not None:
            self._keep_aside(problem, len(self._kept))
        self._rewrite()
        return [raw for uid, raw in self._kept.items() if uid not in self._done]

    def _read(self) -> tuple[bytes, str | None]:
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except FileNotFoundError:
            return b"", None
        except OSError as exc:  # a symlink (ELOOP) among them: never followed
            return b"", f"cannot be read ({exc.strerror})"
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
                return b"", "it is not a file of ours"
            with os.fdopen(fd, "rb", closefd=False) as fh:
                blob = fh.read(MAX_BYTES + 1)
        except OSError as exc:
            return b"", f"cannot be read ({exc.strerror})"
        finally:
            os.close(fd)
        if len(blob) > MAX_BYTES:
            return blob[:blob.rfind(b"\n", 0, MAX_BYTES) + 1], f"it is over {MAX_BYTES:,} bytes"
        return blob, None

    def _keep_aside(self, problem: str, usable: int) -> None:
        try:
            kept = keep_aside(self.path)
        except OSError as exc:
            kept = f"(not kept: cannot rename it: {exc.strerror})"
        log.error("the update journal %s was damaged (%s); kept as %s; %d update(s) read "
                  "before the damage are handled", self.path, problem, kept, usable)

    # -- while polling -----------------------------------------------------------

    def keep(self, batch: list[Any]) -> list[Any]:
        """Journal the updates of ``batch`` not seen before (one write); returns them, and
        items without an id (not journaled: the poller skips them as malformed)."""
        fresh, lines = [], bytearray()
        for item in batch:
            uid = _update_id(item)
            if uid is None:
                fresh.append(item)
                continue
            if uid <= self.top:
                log.info("Telegram delivered update %d again; it was handled or is kept", uid)
                continue
            self.top = uid
            self._kept[uid] = item
            fresh.append(item)
            lines += orjson.dumps({"u": item}) + b"\n"
        if lines:
            self._append(bytes(lines))
        return fresh

    def done(self, update_id: int | None) -> None:
        """``update_id`` is handled (again: a no-op)."""
        if update_id is None or update_id not in self._kept or update_id in self._done:
            return
        self._done.add(update_id)
        self._append(orjson.dumps({"done": update_id}) + b"\n")
        self._on_change()

    def handled(self) -> int:
        """The id up to which every update is handled (what ``ChatState.handled`` saves)."""
        upto = self.saved
        for uid in self._kept:
            if uid not in self._done:
                break
            upto = uid
        return upto

    def trim(self, saved: int) -> None:
        """The chat state now says every update up to ``saved`` is handled: drop those."""
        if saved <= self.saved:
            return
        self.saved = saved
        for uid in [uid for uid in self._kept if uid <= saved]:
            del self._kept[uid]
            self._done.discard(uid)
        self._rewrite()

    # -- the file ----------------------------------------------------------------

    def _rewrite(self) -> None:
        """The file holds exactly what is kept: emptied (the usual case) or written anew."""
        if not self._kept and self._fd is not None and self._problem is None:
            if self._size:
                try:
                    os.ftruncate(self._fd, 0)
                    self._size = 0
                except OSError as exc:
                    self._fail(f"cannot empty the update journal {self.path}: {exc.strerror}")
            return
        data = b"".join(orjson.dumps({"u": raw}) + b"\n" for raw in self._kept.values())
        data += b"".join(orjson.dumps({"done": uid}) + b"\n" for uid in sorted(self._done))
        self.close()
        try:
            write_private(self.path, data, sync=False)
        except OSError as exc:
            self._fail(f"cannot write the update journal {self.path}: {exc.strerror}")
            return
        self._open()

    def _open(self) -> int | None:
        if self._fd is None:
            try:
                os.makedirs(os.path.dirname(self.path), mode=0o700, exist_ok=True)
                self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND
                                   | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
                self._size = os.fstat(self._fd).st_size
            except OSError as exc:
                self._fail(f"cannot open the update journal {self.path}: {exc.strerror}")
                return None
            if self._problem is not None:
                log.info("the update journal is written again")
                self._problem = None
        return self._fd

    def _append(self, data: bytes) -> None:
        fd = self._open()
        if fd is None:
            return
        if self._size + len(data) > MAX_BYTES:
            self._fail(f"the update journal {self.path} reached its cap of {MAX_BYTES:,} bytes "
                       "(saving the chat state fails or falls behind)")
            return
        problem = fsio.append_whole(fd, data, self._size)
        if problem:
            self._fail(f"the update journal {self.path} {problem}")
            return
        self._size += len(data)

    def _fail(self, problem: str) -> None:
        if problem != self._problem:
            log.error("%s; a message received since the last save would be lost on a crash",
                      problem)
            self._problem = problem

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


__all__ = ["Inbox", "acting", "handling", "message_of", "parse"]
