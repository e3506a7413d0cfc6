"""A fake terminal at the daemon's ``SessionIO`` seam (``aipager.daemon.terminal``)."""

from __future__ import annotations

import asyncio
from typing import Any

from aipager.proto.errors import SessionNotFound


#: Claude Code 2.1.328 idle (tests/fixtures/screens/idle.json, abridged): its input line
IDLE = [" ▐▛███▛█   Claude Code v2.1.328", "", "─" * 80, "❯ ", "─" * 80,
        "  ⏸ manual mode on · ? for shortcuts"]


class FakeSessions:
    """``SessionIO`` for dtach sessions that exist only here: records typing and keys."""

    def __init__(self) -> None:
        self.live: set[str] = set()
        self.typed: list[tuple[str, str, dict | None]] = []
        self.keys: list[tuple[str, list[bytes]]] = []
        #: the encodings as typed (``policy.chatprompt``), in order
        self.pasted: list[tuple[str, str]] = []
        #: what ``recover_typing`` reports once: messages a crash cut off mid-paste
        self.cut: list[dict[str, Any]] = []
        #: each session's screen rows (``screen``); none: nothing readable
        self.screens: dict[str, list[str]] = {}
        #: ``(session, key) -> rows``: what a pressed key draws next (a dialog's answer)
        self.on_key: Any = None

    def discover(self) -> dict[str, str]:
        return {name: f"/nonexistent/{name}.sock" for name in self.live}

    def attached(self, live: Any) -> dict[str, bool]:
        return dict.fromkeys(live, False)  # nobody at these computers

    async def type_prompt(self, session: str, text: str, *, note: Any,
                          submitting: Any = None) -> None:
        from aipager.policy import chatprompt

        if not chatprompt.is_encoded(text) or note.text != text:
            msg = "not an encoded message"  # as DtachIO refuses it
            raise ValueError(msg)
        if session in self.live and submitting is not None:
            submitting()
        await self.type_text(session, text)
        # what the person wrote (the encoding's body): what the tests compare; the whole
        # encoding as typed is kept in ``pasted``
        self.typed[-1] = (session, chatprompt.words(text), note.args())
        self.pasted.append((session, text))

    async def type_text(self, session: str, text: str) -> None:
        if session not in self.live:
            msg = f"session {session} is not running"
            raise SessionNotFound(msg)
        self.typed.append((session, text, None))

    async def recover_typing(self) -> list[dict[str, Any]]:
        cut, self.cut = self.cut, []
        return cut

    async def press(self, session: str, keys: Any) -> None:
        if session not in self.live:
            msg = f"session {session} is not running"
            raise SessionNotFound(msg)
        self.keys.append((session, list(keys)))
        if self.on_key is not None:
            for key in keys:
                rows = self.on_key(session, key)
                if rows is not None:
                    self.screens[session] = rows

    async def screen(self, session: str) -> list[str] | None:
        if session in self.screens:
            return self.screens[session]
        # a running Claude Code, as the real one draws itself idle: its input line
        return IDLE if session in self.live else None

    async def screen_changed(self, session: str, timeout: float) -> bool:
        await asyncio.sleep(min(timeout, 0.01))  # a test changes ``screens`` meanwhile
        return False
