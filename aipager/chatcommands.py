"""The chat's command names, in one list: the menu, the routers and the names no session
may take (``dtach.create`` refuses them for a new session, whoever starts it).

Standard library only: the session layer and the CLI read it without the chat.
"""

from __future__ import annotations

#: the commands the menu shows (session shortcuts come first, added per live session)
COMMANDS: tuple[tuple[str, str], ...] = (
    ("status", "Every session and what it waits for"),
    ("new", "Start a session: /new NAME [first message]"),
    ("stop", "Interrupt the running task: /stop [name]"),
    ("resume", "Resume an ended session"),
    ("kill", "End a session: /kill NAME"),
    ("compact", "Compact the conversation: /compact [name]"),
    ("model", "Switch model: /model NAME"),
    ("settings", "Reply style, diff previews, card detail"),
    ("help", "Where messages go, and the commands"),
)
#: the team's commands (routers/team.py), not in the menu
TEAM_COMMANDS = ("whoami", "members", "role", "invite", "join")
#: names a session may not take: every command a router answers (a session named ``join``
#: could be made but never addressed), plus Telegram's ``/start`` and words kept for later.
#: ``tests/bot/test_commands.py`` checks that every registered command is here.
RESERVED = (frozenset(name for name, _ in COMMANDS) | frozenset(TEAM_COMMANDS)
            | {"start", "clearqueue", "now", "app"})


__all__ = ["COMMANDS", "RESERVED", "TEAM_COMMANDS"]
