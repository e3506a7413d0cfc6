"""What a session's terminal shows, as records: a dialog and its choices, or the input line.

The daemon reads them off the screen (``aipager.daemon.screen``); a client (the hub's
view of a host) passes them on.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Kind(StrEnum):
    """Which dialog a screen shows (what the daemon may answer on it)."""

    #: "Accessing workspace: … Yes, I trust this folder"
    TRUST = "trust"
    #: a tool's permission dialog ("Do you want to proceed?")
    PERMISSION = "permission"
    #: any other dialog: shown to people, never answered by the daemon
    OTHER = "other"


@dataclass(frozen=True)
class Dialog:
    """A dialog on screen."""

    kind: Kind
    #: the first row under the dialog's rule ("Accessing workspace:", "Bash command")
    title: str
    #: the choices' labels, top to bottom, without their numbers
    options: tuple[str, ...]
    #: the choice Enter would take now
    selected: int
    #: every row of the dialog, from its rule to its footer, as drawn
    text: str


@dataclass(frozen=True)
class Prompt:
    """No dialog: the input line, and what is typed in it."""

    typed: str


Seen = Dialog | Prompt | None


__all__ = ["Dialog", "Kind", "Prompt", "Seen"]
