"""Real screens of Claude Code 2.1.328 (``tests/fixtures/screens/*.json``, recorded from the
real binary by ``tests/e2e/test_screen_dialogs.py``), and a fake terminal that shows them.

``at_trust_dialog(sessions, name)`` makes a ``fakes.sessionio.FakeSessions`` session show the
folder trust dialog as it opens ("❯ No, exit"), move its selection with the arrows as the
real one does, and start (the input line) on Enter with "Yes" selected — or end on Enter
with "No" selected, as Claude Code exits.
"""

from __future__ import annotations

import json
import os
from typing import Any

FOLDER = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "screens")
UP, DOWN, ENTER = b"\x1b[A", b"\x1b[B", b"\r"


def rows(name: str) -> list[str]:
    """The rows of the recorded screen ``name`` (``trust``, ``permission_bash``, ``idle``…)."""
    with open(os.path.join(FOLDER, f"{name}.json"), encoding="utf-8") as fh:
        return json.load(fh)["lines"]


def at_trust_dialog(sessions: Any, name: str) -> None:
    """``sessions`` (a FakeSessions) shows ``name`` at its trust dialog, answering keys as
    the real TUI does; ``sessions.ended`` collects a session ended by "No, exit"."""
    sessions.screens[name] = rows("trust")
    sessions.ended = getattr(sessions, "ended", [])
    earlier = sessions.on_key

    def on_key(session: str, key: bytes) -> list[str] | None:
        if session != name:
            return earlier(session, key) if earlier else None
        now = sessions.screens.get(session)
        on_yes = now == rows("trust_yes_selected")
        if key == DOWN:
            return rows("trust_yes_selected")
        if key == UP:
            return rows("trust")
        if key == ENTER and now in (rows("trust"), rows("trust_yes_selected")):
            if on_yes:
                return rows("idle")
            sessions.ended.append(session)
            sessions.live.discard(session)
            return []
        return None

    sessions.on_key = on_key
