"""What a command came to: frozen records a surface dispatches with ``match``.

``Outcome`` is what answering a request or a question came to (the daemon's port
returns it too); the rest belong to the other use cases.  ``Declined`` carries a
``rights.Reason``: nothing was done, and each surface words why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from aipager.port.rights import Reason

# -- answering a request or a question --------------------------------------------------


@dataclass(frozen=True)
class ByHook:
    """The hook that waited took the decision: Claude Code goes on without its dialog."""

    #: what a scoped answer handed Claude Code to remember (one of its own suggestions: a
    #: rule, a folder or a mode, with where it is kept); empty for the others
    scope: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ByKeys:
    """No hook waited any more: the daemon answered the terminal dialog with keys."""


@dataclass(frozen=True)
class Already:
    """Somebody answered it first: nothing was done."""


@dataclass(frozen=True)
class Gone:
    """No such open request (answered in the terminal, the task is over): nothing was done."""


@dataclass(frozen=True)
class InTerminal:
    """Only the terminal can answer it safely now (a plan dialog whose hook is gone: its
    keys differ with and without a plan file)."""


@dataclass(frozen=True)
class KeysFailed:
    """No hook waited and the keys could not be pressed (the session is not running)."""

    reason: str


@dataclass(frozen=True)
class Refused:
    """Nothing was done, for ``reason`` (an edited call the policy denies, or one no hook
    waits to take any more)."""

    reason: str


Outcome = ByHook | ByKeys | Already | Gone | InTerminal | KeysFailed | Refused

# -- the other use cases ------------------------------------------------------------------


@dataclass(frozen=True)
class Declined:
    """Nothing was done, for ``reason``; ``subject`` is what the reason names (a session's
    label, a folder, a name)."""

    reason: Reason
    subject: str = ""


@dataclass(frozen=True)
class OfSession:
    """A result about one session (named as the asker's port names it)."""

    session: str


@dataclass(frozen=True)
class Typed(OfSession):
    """The message was pasted into the session (its 👍 follows when Claude takes it)."""


@dataclass(frozen=True)
class Held(OfSession):
    """The message waits in the daemon until ``until`` is over: another person's
    ``task`` (``author`` asked for it), an open ``dialog``, or a ``start`` whose screen
    shows no input line yet (nothing is typed into a screen not read)."""

    until: Literal["task", "dialog", "start"]
    author: str = ""


@dataclass(frozen=True)
class Failed:
    """It was tried and did not work (``error`` says why: the session ended, the keys
    could not be pressed, the folder is gone)."""

    error: str
    session: str = ""
    #: what did not work
    doing: Literal["deliver", "start", "stop", "end", "answer", "diff", "compact", "model",
                   "resume", "role", "join"] = "deliver"
    #: ``error`` is a session error's own words; ``not_running``: the session was gone;
    #: ``other``: an unexpected error (worded as such)
    cause: Literal["session", "not_running", "other"] = "session"


@dataclass(frozen=True)
class Started:
    name: str
    folder: str


@dataclass(frozen=True)
class Stopping(OfSession):
    """⏹ was pressed (``pressed``), or a stop of the last seconds already was."""

    pressed: bool


@dataclass(frozen=True)
class Ended(OfSession):
    """The session was ended (``ended``), or was not running."""

    ended: bool


@dataclass(frozen=True)
class Trusted(OfSession):
    """The folder trust dialog was answered (``TrustFolder``) for ``folder``."""

    folder: str


@dataclass(frozen=True)
class Diff:
    """A work tree's changes as the asker may see them (what the session's own machine
    read of its folder: ``ShowChanges`` answers with them as ``Changes``)."""

    #: the unified diff ("" when nothing changed that they may see)
    diff: str = ""
    #: the changed files they may see, relative to the repository's top
    files: tuple[str, ...] = ()
    #: changed files left out because their task could not read them
    hidden: int = 0
    #: the diff was longer than ``DIFF_CAP`` and was cut
    cut: bool = False
    #: the folder is in a git repository
    repo: bool = True


@dataclass(frozen=True)
class Changes:
    """What the session changed in its folder's git work tree, as the asker may see it
    (``/diff``): files their task could not read are counted in ``hidden``, never shown."""

    session: str
    diff: str
    files: tuple[str, ...] = ()
    hidden: int = 0
    #: the diff was too long and was cut
    cut: bool = False
    #: the folder is in a git repository (else there is nothing to compare)
    repo: bool = True


@dataclass(frozen=True)
class Compacting(OfSession):
    """``/compact`` was typed: Claude Code compacts the conversation (a notice follows)."""


@dataclass(frozen=True)
class Switching(OfSession):
    """The session switches to ``model`` (its status line shows it once done)."""

    model: str


@dataclass(frozen=True)
class Resumed(OfSession):
    """The ended session runs again with its conversation, in ``folder``."""

    folder: str


@dataclass(frozen=True)
class RoleGiven:
    """Member ``user_id`` is now ``role`` (``"none"``: no member), labelled ``label``;
    ``looked``: what the name they have looked like, so it was not taken ("" when it was)."""

    user_id: int
    label: str
    role: str
    looked: str = ""


@dataclass(frozen=True)
class Invitation:
    """One person may join as ``role`` with ``code`` until ``expires`` (epoch seconds)."""

    role: str
    code: str
    expires: float


@dataclass(frozen=True)
class Joined:
    """Member ``user_id`` joined as ``role``, labelled ``label``; ``looked``: what the name
    they wanted would have passed for (empty: their own name was kept); ``invited_by``: the
    Telegram id of who made the invitation."""

    user_id: int
    label: str
    role: str
    looked: str = ""
    invited_by: int = 0


@dataclass(frozen=True)
class FilesKept:
    """The files sent for a prompt, kept: their ``paths`` on this machine, in order."""

    paths: tuple[str, ...]


@dataclass(frozen=True)
class FileNotKept:
    """File ``name`` could not be kept, for ``reason``; ``kept``: those before it, which
    were."""

    name: str
    reason: str
    kept: tuple[str, ...] = ()


@dataclass(frozen=True)
class AuditRecords:
    """The audit log's last records, newest first (each a JSON object as it was written)."""

    records: tuple[dict[str, Any], ...] = ()


Result = (Outcome | Declined | Typed | Held | Failed | Started | Stopping | Ended | Trusted
          | Changes | Compacting | Switching | Resumed | RoleGiven | Invitation | Joined
          | FilesKept | FileNotKept | AuditRecords)

__all__ = ["Already", "AuditRecords", "ByHook", "ByKeys", "Changes", "Compacting", "Declined", "Diff",
           "Ended", "Failed", "FileNotKept", "FilesKept", "Gone", "Held", "InTerminal", "Invitation",
           "Joined", "KeysFailed", "OfSession", "Outcome", "Refused", "Result", "Resumed", "RoleGiven",
           "Started", "Stopping", "Switching", "Trusted", "Typed"]
