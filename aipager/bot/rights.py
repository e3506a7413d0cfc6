"""What a role needs to use a handler: the ``rights`` flags, in one table.

A handler declares the right as an aiogram flag (``flags=need(MANAGE)``);
``access.Access.rights`` reads it before the handler runs and refuses a sender whose role
lacks it.  A button does what a command does, so it needs what that command needs:
``COMMANDS`` names the right of each command whose action a button repeats, and the
command's handler and its buttons' handlers both take it from there (``flags=like("model")``),
so the two cannot drift apart (the /model picker once switched models for a ``user`` whose
/model was refused).

Every tap handler declares its flag, ``OPEN`` included, which says the handler itself
checks what depends on the session or the chat; a tap handler that declares none is held
to ``MANAGE`` (``UNDECLARED``): a forgotten flag fails closed.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Mapping

#: the rights (``clients.people.refusal``'s words)
PROMPT, APPROVE, MANAGE = "prompt", "approve", "manage"
#: any member may use it; the handler checks the rest (⏹ Stop: the task's author or an
#: admin; a language: the tapper's own; an unknown button: it says it expired)
OPEN = ""
#: what a tap handler without a ``rights`` flag is held to (the strictest right)
UNDECLARED = MANAGE

#: each command whose action a button repeats → the right it needs
COMMANDS: Mapping[str, str] = MappingProxyType({
    "new": MANAGE,
    "resume": MANAGE,
    "kill": MANAGE,
    "model": MANAGE,
    "compact": PROMPT,
    # what a session changed: whoever may prompt it may ask Claude the same (the service
    # shows only the files their own task could read)
    "diff": PROMPT,
    # ``/<session>`` makes a session current or sends it text: /status's buttons and the
    # picker of a message with no session do the same
    "session": PROMPT,
    # the task's author or an admin: the handlers check, knowing the session
    "stop": OPEN,
})


def need(right: str) -> dict[str, str]:
    """The flags of a handler whose role needs ``right`` (a fresh dict each time: aiogram's
    filters add their own flags to the one a handler is registered with)."""
    return {"rights": right}


def like(command: str) -> dict[str, str]:
    """The flags of ``command``'s handler, and of the buttons that do what it does."""
    return need(COMMANDS[command])


__all__ = ["APPROVE", "COMMANDS", "MANAGE", "OPEN", "PROMPT", "UNDECLARED", "like", "need"]
