"""Session I/O: which dtach sessions exist, and typing into them.

A thin asyncio layer over ``aipager.dtach`` (same argv builders and typing
rhythm as the CLI).  ``SessionIO`` is the seam: the daemon and, next round,
the chat use it; tests pass a fake.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable, Mapping, Protocol, Sequence

from aipager import dtach
from aipager.daemon.model import Session, State
from aipager.daemon.registry import Registry
from aipager.errors import SessionError, SessionNotFound, UnsafePath

log = logging.getLogger("aipager.daemon")


#: keys the chat presses (Claude Code's TUI reads them as a terminal would send them)
ESCAPE = b"\x1b"
ENTER = b"\r"
UP = b"\x1b[A"
DOWN = b"\x1b[B"
#: pause after each pressed key: the TUI redraws between keys
KEY_GAP = 0.15


class SessionIO(Protocol):
    def discover(self) -> dict[str, str]:
        """Live sessions: ``claude-NAME`` → dtach socket path (blocking; run in a thread)."""

    async def type_text(self, session: str, text: str, *, note: Mapping[str, Any] | None = None) -> None:
        """Type ``text`` and press Enter, after writing the message's permission note."""

    async def press(self, session: str, keys: Sequence[bytes]) -> None:
        """Press raw keys (Escape, arrows, Enter), one write each with a short pause."""


class DtachIO:
    """The real ``SessionIO``: dtach sockets in the session folder, ``dtach -p`` to type.

    Args:
        env: decides the session folder and the dtach binary.
    """

    def __init__(self, env: Mapping[str, str]) -> None:
        self._env = env
        self._locks: dict[str, asyncio.Lock] = {}
        self._refused: set[str] = set()

    def discover(self) -> dict[str, str]:
        found = dtach.list_sessions(self._env)
        for info in found:
            # another user's socket at a session's name: said once, never used
            if info.problem and info.socket not in self._refused:
                self._refused.add(info.socket)
                log.error("session socket refused: %s", info.problem)
        return {info.session: info.socket for info in found if info.live}

    def _write_note(self, session: str, note: Mapping[str, Any]) -> None:
        # Imported here: the policy package is only needed once the chat types messages.
        from aipager.policy import notes

        notes.write_note(self._env, session, **note)

    async def type_text(self, session: str, text: str, *, note: Mapping[str, Any] | None = None) -> None:
        """Type into ``session`` (one writer per session at a time).

        Raises:
            SessionNotFound: no live dtach socket for the session.
            SessionError: dtach failed or hung.
            UnsafePath: the session's socket is another user's (never typed into).
        """
        await self._push(session, dtach.typing_writes(text), note=note)

    async def press(self, session: str, keys: Sequence[bytes]) -> None:
        """Press ``keys`` in order (each its own write, ``KEY_GAP`` apart).

        Raises:
            SessionNotFound, SessionError: as ``type_text``.
        """
        await self._push(session, [(key, KEY_GAP) for key in keys])

    async def _push(self, session: str, writes: Sequence[tuple[bytes, float]], *,
                    note: Mapping[str, Any] | None = None) -> None:
        lock = self._locks.setdefault(session, asyncio.Lock())
        async with lock:
            info = next((i for i in dtach.list_sessions(self._env) if i.session == session), None)
            if info is not None and info.problem:
                raise UnsafePath(info.problem)
            if info is None or not info.live:
                msg = f"session {session} is not running"
                raise SessionNotFound(msg)
            if note is not None:
                # The note must exist before Claude can take the message (the hook reads it).
                self._write_note(session, note)
            argv = dtach.push_argv(dtach.dtach_binary(self._env), info.socket)
            proc = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE)
            assert proc.stdin is not None
            try:
                for data, pause in writes:
                    # One write per chunk: dtach -p forwards each read as one packet.
                    proc.stdin.write(data)
                    await proc.stdin.drain()
                    if pause:
                        await asyncio.sleep(pause)
                proc.stdin.close()
                _, err = await asyncio.wait_for(proc.communicate(), dtach.PUSH_TIMEOUT)
            except (OSError, asyncio.TimeoutError) as exc:
                proc.kill()
                await proc.wait()
                msg = f"typing into session {session} failed: {exc}"
                raise SessionError(msg) from exc
            if proc.returncode != 0:
                detail = err.decode(errors="replace").strip() if err else proc.returncode
                msg = f"typing into session {session} failed: {detail}"
                raise SessionError(msg)


def mark_discovered(registry: Registry, live: Mapping[str, str],
                    end_session: Callable[[Session, str], None]) -> list[str]:
    """Apply one discovery pass to the registry.

    New sockets register their session; a session whose socket was seen before
    and is gone now ends as GONE ("vanished").  Sessions never seen with a
    socket are left alone (events alone do not prove a socket should exist).

    Returns:
        Names of sessions that vanished.
    """
    for name in live:
        sess = registry.ensure(name)
        if not sess.socket_seen:
            sess.socket_seen = True
            registry.touch(sess)
        if sess.state == State.GONE and sess.end_reason == "vanished":
            # The socket is back (a resumed session): known again, no event yet.
            sess.gone_at, sess.end_reason = None, ""
            registry.set_state(sess, State.UNKNOWN)
    gone = []
    for sess in list(registry):
        if sess.socket_seen and sess.name not in live and sess.state != State.GONE:
            end_session(sess, "vanished")
            gone.append(sess.name)
    return gone


__all__ = ["DtachIO", "SessionIO", "mark_discovered"]
