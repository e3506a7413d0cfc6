"""Session I/O: which dtach sessions exist, and typing into them.

A thin asyncio layer over ``aipager.dtach`` (same argv builders and typing
rhythm as the CLI).  ``SessionIO`` is the seam the daemon types and reads
screens through (``calls.PortCalls``, ``app.Daemon``); tests pass a fake.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import glob
import logging
import os
import signal
import time
from typing import Any, Awaitable, Callable, Mapping, Protocol, Sequence

from aipager import dtach
from aipager.agents import Agent
from aipager.proto import paths
from aipager.port.model import PromptNote, Session, State
from aipager.daemon.screenwatch import ScreenWatch
from aipager.daemon.registry import Registry
from aipager.proto.errors import SessionError, SessionNotFound, UnsafePath
from aipager.proto import fsio

log = logging.getLogger("aipager.daemon")


#: keys the chat presses (Claude Code's TUI reads them as a terminal would send them)
ESCAPE = b"\x1b"
ENTER = b"\r"
UP = b"\x1b[A"
DOWN = b"\x1b[B"
#: pause after each pressed key: the TUI redraws between keys
KEY_GAP = 0.15
#: seconds between the two reads of who is connected to a session (``DtachIO.attached``)
PROBE_GAP = 0.1
#: how long a new screen watcher waits for the session to draw itself whole
FIRST_DRAW = 2.0
#: a step the screen needs not show (an empty box emptied) still gets this pause
KEY_FLOOR = 0.02
#: how long the screen must stay still after a paste shows before its Enter
SETTLE = 0.08
#: how long typing waits for the input line to show a step (then it goes on as the screen
#: allows: a busy terminal draws late, and the old measured pauses were under a second)
ECHO_WAIT = 3.0

#: after a write: seconds to pause, or a wait that returns whether to go on
Pause = float | Callable[[], Awaitable[bool]]


class SessionIO(Protocol):
    def discover(self) -> dict[str, str]:
        """Live sessions: ``claude-NAME`` → dtach socket path (blocking; run in a thread)."""

    async def type_prompt(self, session: str, text: str, *, note: PromptNote,
                          submitting: Callable[[], None] | None = None) -> None:
        """Empty the input box, paste an encoded chat message (``policy.chatprompt.encode``,
        the note's ``text``) and press Enter, after writing its permission note; a crash
        meanwhile is cleared at the next start.
        ``submitting`` is called right before the Enter: what a restart must not type again
        is marked there (``bot.inbox``)."""

    async def type_text(self, session: str, text: str) -> None:
        """Type ``text`` as keys and press Enter: aipager's own commands (``/compact``)
        and the owner's raw keystrokes, never a member's message."""

    async def press(self, session: str, keys: Sequence[bytes]) -> None:
        """Press raw keys (Escape, arrows, Enter), one write each with a short pause."""

    async def recover_typing(self) -> list[dict[str, Any]]:
        """Sessions a crash left a half-pasted chat message in: each input box is
        cleared and the message's note deleted.  Returns the marks (``session``,
        ``chat_id``, ``msg_id``)."""

    def attached(self, live: Mapping[str, str]) -> dict[str, bool]:
        """Whether a terminal is attached to each live session (``discover``'s map):
        somebody at the computer (blocking; run in a thread)."""

    async def screen(self, session: str) -> list[str] | None:
        """The session's screen as it is now, one string a row (``screenwatch``); None
        when it cannot be read (no such session, nothing drawn yet)."""

    async def screen_changed(self, session: str, timeout: float) -> bool:
        """Wait until the session's screen changes (or ``timeout``); whether it did."""


class DtachIO:
    """The real ``SessionIO``: dtach sockets in the session folder, ``dtach -p`` to type.

    Args:
        env: decides the session folder and the dtach binary.
    """

    def __init__(self, env: Mapping[str, str]) -> None:
        self._env = env
        self._locks: dict[str, asyncio.Lock] = {}
        self._refused: set[str] = set()
        #: our own ``dtach -p`` clients now connected, per socket: the kernel lists them
        #: like an attached terminal, and a chat message's answer counted as typed at the
        #: computer (silent) when discovery ran while the message was being typed
        self._pushing: collections.Counter[str] = collections.Counter()
        #: each session's screen, read by a watcher attached once and kept (``screen``)
        self._screens: dict[str, ScreenWatch] = {}

    def discover(self) -> dict[str, str]:
        found = dtach.list_sessions(self._env)
        for info in found:
            # another user's socket at a session's name: said once, never used
            if info.problem and info.socket not in self._refused:
                self._refused.add(info.socket)
                log.error("session socket refused: %s", info.problem)
        return {info.session: info.socket for info in found if info.live}

    def attached(self, live: Mapping[str, str]) -> dict[str, bool]:
        """Clients on each socket, minus our own pushes (counted before and after: one that
        starts or ends meanwhile is still left out), in two reads ``PROBE_GAP`` apart: the
        liveness probes (``dtach.is_live``, discovery's own among them) connect for a moment,
        and dtach closes its end of one a little later (while it writes a long paste into a busy
        terminal, a while).  Where the kernel's socket diagnostics can be read, a connection
        whose other end has closed is not counted at all (``dtach.connected_clients``): one
        read, and neither a probe nor a finished push is mistaken for a person."""
        before = dict(self._pushing)
        counts = dtach.connected_clients(live.values())
        if counts is None:
            first = dtach.attached_clients(live.values())
            time.sleep(PROBE_GAP)
            second = dtach.attached_clients(live.values())
            counts = {sock: min(first.get(sock, 0), second.get(sock, 0)) for sock in first}
        attached = {}
        watching = {w.socket_path for w in list(self._screens.values()) if not w.closed}
        for name, sock in live.items():
            own = max(before.get(sock, 0), self._pushing[sock]) + (sock in watching)
            attached[name] = counts.get(sock, 0) - own > 0
        return attached

    async def _watch(self, session: str) -> ScreenWatch | None:
        found = self._screens.get(session)
        if found is not None and not found.closed:
            return found
        info = await asyncio.to_thread(self._live_info, session)
        if info is None:
            return None
        watch = ScreenWatch(info.socket)
        # known before it connects: ``attached`` must never count it as a person
        self._screens[session] = watch
        try:
            await watch.start()
        except OSError as exc:
            log.warning("cannot read the screen of %s: %s", session, exc)
            self._screens.pop(session, None)
            return None
        # the whole first drawing: the watcher asked for it as it attached
        deadline = asyncio.get_running_loop().time() + FIRST_DRAW
        while watch.version == 0 and asyncio.get_running_loop().time() < deadline:
            await watch.changed(0.1)
        await watch.changed(0.15)  # and what follows it at once
        return watch

    def _live_info(self, session: str) -> dtach.SessionInfo | None:
        info = next((i for i in dtach.list_sessions(self._env) if i.session == session), None)
        return info if info is not None and info.live and not info.problem else None

    async def screen(self, session: str) -> list[str] | None:
        watch = await self._watch(session)
        return watch.rows() if watch is not None and watch.version else None

    async def screen_changed(self, session: str, timeout: float) -> bool:
        watch = await self._watch(session)
        if watch is None:
            await asyncio.sleep(timeout)
            return False
        return await watch.changed(timeout)

    async def close_screens(self) -> None:
        """Detach every screen watcher (the daemon stops)."""
        for watch in list(self._screens.values()):
            await watch.close()
        self._screens.clear()

    async def type_prompt(self, session: str, text: str, *, note: PromptNote,
                          submitting: Callable[[], None] | None = None) -> None:
        """Paste into ``session`` (one writer per session at a time).

        Raises:
            SessionNotFound: no live dtach socket for the session.
            SessionError: dtach failed or hung.
            UnsafePath: the session's socket is another user's (never typed into).
            ValueError: ``text`` was not cleaned (``dtach.paste_writes``).
        """
        from aipager.policy import chatprompt

        # The last guard for every client: only an encoding reaches Claude Code's input
        # line (``Daemon.type_prompt`` makes it), never raw text its grammar could read.
        if not chatprompt.is_encoded(text) or note.text != text:
            msg = "only an encoded chat message is typed as a prompt (policy.chatprompt)"
            raise ValueError(msg)
        # The box is made empty first: a leftover (a person's draft, text Claude Code
        # declined) would otherwise be glued onto this message and submitted with it.
        # Each step waits for the terminal to show it took the last one (the box emptied,
        # the paste echoed), not for a clock; a screen that cannot be read falls back to
        # the measured pauses.
        (paste, gap), (enter, _) = dtach.paste_writes(text)
        before = await self._typed(session)
        empty: list[str | None] = [before]  # what the box shows once emptied

        def emptied_now(typed: str) -> bool:
            empty[0] = typed
            return typed == ""

        # an empty box is left as it is drawn: nothing to wait for; a box showing anything
        # else (a draft; a placeholder the screen cannot tell from one) gets a short while
        emptied = self._echo(session, emptied_now, KEY_GAP, already=before == "",
                             most=2 * KEY_GAP)
        # the paste echoed: the box shows something else than it did emptied
        echoed = self._echo(session, lambda typed: typed not in ("", empty[0]), gap,
                            dialog_aborts=True, settle=True)
        writes: list[tuple[bytes, Pause]] = [(dtach.CLEAR_INPUT, emptied), (paste, echoed),
                                              (enter, 0.0)]
        await self._push(session, writes, note=note, submitting=submitting)

    async def _typed(self, session: str) -> str | None:
        """What the input line shows now; None when the screen shows no input line."""
        from aipager.daemon import screen

        rows = await self.screen(session)
        seen = screen.read(rows) if rows else None
        return seen.typed if isinstance(seen, screen.Prompt) else None

    def _echo(self, session: str, shown: Callable[[str], bool], fallback: float, *,
              already: bool = False, dialog_aborts: bool = False,
              most: float = 0.0, settle: bool = False) -> Pause:
        """A pause that lasts until the input line shows what ``shown`` wants (at most
        ``most``, else ``ECHO_WAIT``), or ``fallback`` seconds when the screen cannot be
        read.  With
        ``dialog_aborts``, a dialog drawn meanwhile stops the typing (False): the next key
        would answer it."""
        from aipager.daemon import screen

        async def wait() -> bool:
            if already:
                await asyncio.sleep(KEY_FLOOR)  # the keys before read apart from the next
                return True
            watch = await self._watch(session)
            if watch is None or screen.read(watch.rows()) is None:
                # no input line to watch (a program that is not Claude Code's TUI, a screen
                # not drawn yet): the measured pause
                await asyncio.sleep(fallback)
                return True
            loop = asyncio.get_running_loop()
            deadline = loop.time() + (most or ECHO_WAIT)
            while True:
                seen = screen.read(watch.rows())
                if isinstance(seen, screen.Prompt) and shown(seen.typed):
                    if not settle:
                        return True
                    # a paste reaches the terminal in dtach's 8-byte packets and may be
                    # drawn while it still streams in: its Enter waits until the screen
                    # has been still for a moment (an Enter inside a paste splits it)
                    if not await watch.changed(min(SETTLE, max(0.0, deadline - loop.time()))):
                        return True
                    continue
                if dialog_aborts and isinstance(seen, screen.Dialog):
                    return False
                left = deadline - loop.time()
                if left <= 0 or watch.closed:
                    return seen is None or isinstance(seen, screen.Prompt)
                await watch.changed(min(left, 0.25))
        return wait

    async def type_text(self, session: str, text: str) -> None:
        """Type into ``session`` as keys (raises as ``type_prompt``)."""
        await self._push(session, dtach.typing_writes(text))

    async def recover_typing(self) -> list[dict[str, Any]]:
        found = []
        live = await asyncio.to_thread(self.discover)
        for session in sorted(live):
            mark_path = paths.typing_mark(self._env, session)
            mark = fsio.read_json_own(mark_path)
            if mark is None:
                continue
            # The paste may be in the input box, without its Enter: Ctrl-U empties
            # the box (a pasted block included) and leaves a running task alone.
            try:
                await self._push(session, [(dtach.CLEAR_INPUT, KEY_GAP)])
            except (SessionError, UnsafePath) as exc:
                log.warning("could not clear the input box of %s: %s", session, exc)
            note = mark.get("note") if isinstance(mark, dict) else None
            if isinstance(note, str) and os.path.dirname(note) == paths.notes_dir(self._env, session):
                fsio.unlink_quiet(note)  # its message was never submitted: nobody's rights
            fsio.unlink_quiet(mark_path)
            found.append({"session": session, **(mark if isinstance(mark, dict) else {})})
        # marks of sessions that are gone: their input boxes went with them
        for path in glob.glob(paths.typing_mark(self._env, "*")):
            session = os.path.basename(path)[len("claude-typing-"):-len(".json")]
            if session not in live:
                fsio.unlink_quiet(path)
        return found

    async def press(self, session: str, keys: Sequence[bytes]) -> None:
        """Press ``keys`` in order (each its own write, ``KEY_GAP`` apart).

        Raises:
            SessionNotFound, SessionError: as ``type_text``.
        """
        await self._push(session, [(key, KEY_GAP) for key in keys])

    async def _push(self, session: str, writes: Sequence[tuple[bytes, Pause]], *,
                    note: PromptNote | None = None,
                    submitting: Callable[[], None] | None = None) -> None:
        """Write ``writes`` into ``session``.  With a ``note``, a paste: the typing mark is
        on disk from before the first write until the last (the Enter) is written, and
        ``submitting`` runs between the paste and the Enter.  So a kill leaves, at each point:
        before the mark, nothing typed; with the mark and nothing marked by ``submitting``,
        at most a paste without its Enter (the next start clears it, and the caller types
        the message again); with both, a paste whose Enter may be in (cleared, and said on
        the message); after the mark is gone, a message typed once."""
        lock = self._locks.setdefault(session, asyncio.Lock())
        async with lock:
            info = next((i for i in dtach.list_sessions(self._env) if i.session == session), None)
            if info is not None and info.problem:
                raise UnsafePath(info.problem)
            if info is None or not info.live:
                msg = f"session {session} is not running"
                raise SessionNotFound(msg)
            mark = ""
            if note is not None:
                # The note must exist before Claude can take the message (the hook
                # reads it); the mark says a paste is under way until its Enter is in.
                mark = self._write_note(session, note)
                self._crash_point("marked")
            self._pushing[info.socket] += 1
            try:
                await self._write(session, info.socket, writes, mark, submitting)
            finally:
                self._pushing[info.socket] -= 1
                if self._pushing[info.socket] <= 0:
                    del self._pushing[info.socket]

    async def _write(self, session: str, socket: str, writes: Sequence[tuple[bytes, Pause]],
                     mark: str, submitting: Callable[[], None] | None) -> None:
        """``_push``'s ``dtach -p`` run: ``writes`` in, the mark removed with the Enter."""
        argv = dtach.push_argv(dtach.dtach_binary(self._env), socket)
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE)
        assert proc.stdin is not None
        written = 0
        try:
            for data, pause in writes:
                if submitting is not None and written == len(writes) - 1:
                    self._crash_point("pasted")
                    try:
                        submitting()
                    except Exception:  # noqa: BLE001 - a client's bug must not strand the paste
                        log.exception("marking a chat message as submitted failed")
                    self._crash_point("submitting")
                # One write per chunk: dtach -p forwards each read as one packet.
                proc.stdin.write(data)
                await proc.stdin.drain()
                written += 1
                if mark and written == len(writes):
                    # Submitted: from here a restart must not clear it nor say it was
                    # cut off (waiting for dtach to exit first would widen that window).
                    fsio.unlink_quiet(mark)
                    mark = ""
                    self._crash_point("entered")
                if callable(pause):
                    if not await pause():
                        raise _DialogUp(session)
                elif pause:
                    await asyncio.sleep(pause)
            proc.stdin.close()
            _, err = await asyncio.wait_for(proc.communicate(), dtach.PUSH_TIMEOUT)
        except _DialogUp as exc:
            proc.kill()
            await proc.wait()
            if mark:  # never submitted; no key to clear the box goes into the dialog
                doc = fsio.read_json_own(mark)
                if isinstance(doc, dict) and isinstance(doc.get("note"), str):
                    fsio.unlink_quiet(doc["note"])
            raise SessionError(str(exc)) from exc
        except (OSError, asyncio.TimeoutError) as exc:
            proc.kill()
            await proc.wait()
            if mark and written < len(writes):
                # never submitted: its note must not outlive it (nobody's rights)
                await self._abandon(socket, mark)
            msg = f"typing into session {session} failed: {exc}"
            raise SessionError(msg) from exc
        finally:
            if mark:
                fsio.unlink_quiet(mark)
        if proc.returncode != 0:
            detail = err.decode(errors="replace").strip() if err else proc.returncode
            msg = f"typing into session {session} failed: {detail}"
            raise SessionError(msg)

    def _crash_point(self, name: str) -> None:
        """Tests only: a hard kill right here (``AIPAGER_TEST_CRASH_AT=typing.<name>``)."""
        if self._env.get("AIPAGER_TEST_CRASH_AT") == f"typing.{name}":
            os.kill(os.getpid(), signal.SIGKILL)

    async def _abandon(self, socket_path: str, mark: str) -> None:
        """A paste that never got its Enter: clear the input box (best effort) and
        delete the message's note."""
        doc = fsio.read_json_own(mark)
        if isinstance(doc, dict) and isinstance(doc.get("note"), str):
            fsio.unlink_quiet(doc["note"])
        argv = dtach.push_argv(dtach.dtach_binary(self._env), socket_path)
        with contextlib.suppress(OSError, asyncio.TimeoutError):
            proc = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.DEVNULL)
            await asyncio.wait_for(proc.communicate(dtach.CLEAR_INPUT), dtach.PUSH_TIMEOUT)

    def _write_note(self, session: str, note: PromptNote) -> str:
        """Write the message's note and the typing mark naming it; returns the mark."""
        # Imported here: the policy package is only needed once the chat types messages.
        from aipager.policy import notes

        path = notes.write_note(self._env, session, **note.args())
        mark = paths.typing_mark(self._env, session)
        fsio.write_json_atomic(mark, {"note": path, "chat_id": note.chat_id,
                                       "msg_id": note.msg_id})
        return mark


class _DialogUp(Exception):
    """A dialog came up while a message was typed: the Enter would have answered it."""

    def __init__(self, session: str) -> None:
        super().__init__(f"a dialog came up in {session} while the message was typed: "
                         "it was not submitted")


def mark_discovered(registry: Registry, live: Mapping[str, str],
                    end_session: Callable[[Session, str], None],
                    agents_found: Mapping[str, Agent | None] | None = None) -> list[str]:
    """Apply one discovery pass to the registry.

    New sockets register their session, with the agent its process runs
    (``agents_found``: socket → ``dtach.agent_of``, read off the loop for the sessions
    not yet seen: one started by hand is known by what runs in it); a session whose
    socket was seen before and is gone now ends as GONE ("vanished").  Sessions never
    seen with a socket are left alone (events alone do not prove a socket should exist).

    Returns:
        Names of sessions that vanished.
    """
    for name in live:
        sess = registry.ensure(name)
        if not sess.socket_seen:
            sess.socket_seen = True
            found = (agents_found or {}).get(live[name])
            if not sess.coding_agent and found is not None:
                sess.coding_agent = found.name
            registry.touch(sess)
        if sess.state == State.GONE and sess.end_reason == "vanished":
            # The socket is back (a resumed session): known again, no event yet.
            registry.revive(sess)
    gone = []
    for sess in list(registry):
        if sess.socket_seen and sess.name not in live and sess.state != State.GONE:
            end_session(sess, "vanished")
            gone.append(sess.name)
    return gone


__all__ = ["DtachIO", "SessionIO", "mark_discovered"]
