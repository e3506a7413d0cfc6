"""The one rights check: what a person's role lets them do to a session.

Every command passes here inside the service (``daemon.service``) before anything
is done; a surface only renders the ``Reason`` it gets back.  Approving and stopping
another person's task takes an admin (``may_manage``): a member's tap never reaches
past the task they started themselves.
"""

from __future__ import annotations

from enum import StrEnum
from typing import AbstractSet, Literal

from aipager.port.who import Person

#: what a command needs (``join``: nothing of a role; the invitation's code is the right)
Right = Literal["prompt", "approve", "stop", "manage", "join"]


class Reason(StrEnum):
    """Why nothing was done (each surface words it in the person's language)."""

    POLICY_UNUSABLE = "policy_unusable"
    MAY_NOT_PROMPT = "may_not_prompt"
    ADMIN_ONLY = "admin_only"
    MAY_NOT_ANSWER = "may_not_answer"
    AUTHOR_STOPS = "author_stops"
    AUTHOR_ANSWERS = "author_answers"
    EMPTY = "empty"
    NOT_RUNNING = "not_running"
    NOT_WORKING = "not_working"
    TRUST_FIRST = "trust_first"
    NO_TRUST_DIALOG = "no_trust_dialog"
    NO_FOLDER = "no_folder"
    RESERVED_NAME = "reserved_name"
    ALREADY_RUNNING = "already_running"
    NOT_OPEN = "not_open"
    NO_MODE = "no_mode"
    NO_AGENT = "no_agent"
    FOLDER_UNKNOWN = "folder_unknown"
    NO_MODEL = "no_model"
    NOT_ENDED = "not_ended"
    OWNER_ASSIGNS = "owner_assigns"
    #: an invitation code that is none (``subject``: ``no code``, ``unknown code``, ``expired``)
    NOT_INVITED = "not_invited"
    MEMBER_ALREADY = "member_already"
    NO_FILE = "no_file"


#: the reasons that are about the person's rights (a surface may mark them 🔒)
RIGHTS = frozenset({Reason.POLICY_UNUSABLE, Reason.MAY_NOT_PROMPT, Reason.ADMIN_ONLY,
                    Reason.MAY_NOT_ANSWER, Reason.AUTHOR_STOPS, Reason.AUTHOR_ANSWERS,
                    Reason.OWNER_ASSIGNS})

#: the roles only the owner hands out, changes or takes away
STRONG_ROLES = frozenset({"owner", "admin"})


def check(person: Person, right: Right, authors: AbstractSet[object] | None = None) -> Reason | None:
    """Why ``person`` may not do what needs ``right``, or None.

    Args:
        authors: the Telegram ids of who asked for the session's running task (None: the
            command concerns no task; empty: the task was typed at the computer).
    """
    if right == "join":
        return None  # the service checks the code; a stranger has no role to read
    if person.policy_unusable:
        return Reason.POLICY_UNUSABLE
    if right == "prompt" and not person.may_prompt:
        return Reason.MAY_NOT_PROMPT
    if right == "manage" and not person.may_manage:
        return Reason.ADMIN_ONLY
    if right == "approve" and not person.may_approve:
        return Reason.MAY_NOT_ANSWER
    if right in ("approve", "stop") and not person.may_manage and authors is not None:
        if person.user_id not in authors:
            return Reason.AUTHOR_STOPS if right == "stop" else Reason.AUTHOR_ANSWERS
    return None


def check_assign(person: Person, role: str, current: str | None) -> Reason | None:
    """Why ``person`` may not make someone ``role`` (whose role is ``current``, None: not a
    member yet), or None: an admin hands out the other roles, the owner also these."""
    why = check(person, "manage")
    if why is not None:
        return why
    if person.role != "owner" and (role in STRONG_ROLES or current in STRONG_ROLES):
        return Reason.OWNER_ASSIGNS
    return None


__all__ = ["RIGHTS", "Reason", "Right", "STRONG_ROLES", "check", "check_assign"]
