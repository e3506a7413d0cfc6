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

from aipager.port.commands import (AssignRole, Command, CompactSession, InviteAs, KillSession,
                                   ResumeSession, SendPrompt, ShowChanges, StartSession, StopTask,
                                   SwitchModel)
from aipager.port.rights import Right

#: the rights (``clients.people.refusal``'s words)
PROMPT, APPROVE, MANAGE = "prompt", "approve", "manage"
#: any member may use it; the handler checks the rest (⏹ Stop: the task's author or an
#: admin; a language: the tapper's own; an unknown button: it says it expired)
OPEN = ""
#: what a tap handler without a ``rights`` flag is held to (the strictest right)
UNDECLARED = MANAGE

#: each chat command whose action a button repeats → the use case it asks the service for
USE_CASES: Mapping[str, type[Command]] = MappingProxyType({
    "new": StartSession,
    "resume": ResumeSession,
    "kill": KillSession,
    "model": SwitchModel,
    "compact": CompactSession,
    # what a session changed: whoever may prompt it may ask Claude the same (the service
    # shows only the files their own task could read)
    "diff": ShowChanges,
    # ``/<session>`` makes a session current or sends it text: /status's buttons and the
    # picker of a message with no session do the same
    "session": SendPrompt,
    "stop": StopTask,
    # the team: handing out roles and inviting (the service decides who may give which)
    "role": AssignRole,
    "invite": InviteAs,
})


def _flag(right: Right) -> str:
    # stopping is the task's author's or an admin's: the service checks, knowing the task
    return OPEN if right == "stop" else right


#: each command whose action a button repeats → the right it needs: the right its use
#: case's record names (``port.commands``), so the chat and the service cannot differ
COMMANDS: Mapping[str, str] = MappingProxyType({
    name: _flag(case.right) for name, case in USE_CASES.items()})


def need(right: str) -> dict[str, str]:
    """The flags of a handler whose role needs ``right`` (a fresh dict each time: aiogram's
    filters add their own flags to the one a handler is registered with)."""
    return {"rights": right}


def like(command: str) -> dict[str, str]:
    """The flags of ``command``'s handler, and of the buttons that do what it does."""
    return need(COMMANDS[command])


__all__ = ["APPROVE", "COMMANDS", "USE_CASES", "MANAGE", "OPEN", "PROMPT", "UNDECLARED", "like", "need"]
