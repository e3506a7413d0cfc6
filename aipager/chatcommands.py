"""The chat's command names, in one list: the menu, the routers and the names no session
may take (``dtach.create`` refuses them for a new session, whoever starts it).

Standard library only: the session layer and the CLI read it without the chat.
"""

from __future__ import annotations

from aipager.locales import N_  # the descriptions are translated where the menu is set


#: the commands the menu shows (session shortcuts come first, added per live session)
COMMANDS: tuple[tuple[str, str], ...] = (
    ("status", N_("Every session and what it waits for")),
    ("new", N_("Start a session: /new NAME [first message]")),
    ("stop", N_("Interrupt the running task: /stop [name]")),
    ("resume", N_("Resume an ended session")),
    ("kill", N_("End a session: /kill NAME")),
    ("compact", N_("Compact the conversation: /compact [name]")),
    ("diff", N_("What a session changed in its folder: /diff [name]")),
    ("model", N_("Switch model: /model NAME")),
    ("settings", N_("Reply style, diff previews, card detail, language")),
    ("help", N_("Where messages go, and the commands")),
)
#: the team's commands (routers/team.py), not in the menu
TEAM_COMMANDS = ("whoami", "members", "role", "invite", "join")
#: names a session may not take: every command a router answers (a session named ``join``
#: could be made but never addressed), plus Telegram's ``/start`` and words kept for later.
#: ``tests/bot/test_commands.py`` checks that every registered command is here.
RESERVED = (frozenset(name for name, _ in COMMANDS) | frozenset(TEAM_COMMANDS)
            | {"start", "clearqueue", "now", "app"})


__all__ = ["COMMANDS", "RESERVED", "TEAM_COMMANDS"]
