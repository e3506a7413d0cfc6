"""Who acts through a client, and what they may do to a session.

The chat and the web page resolve a person to a ``Sender`` (``members.Members``)
and ask ``refusal`` before every action, so a tap, a message and a click obey
the same rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from aipager.daemon.model import Session
from aipager.daemon.port import Who
from aipager.locales import N_


@dataclass(frozen=True)
class Sender:
    """Who sent an update, as the access middleware resolved them."""

    user_id: int
    label: str
    role: str
    may_prompt: bool = True
    may_approve: bool = True
    may_manage: bool = True
    #: the role passes no safety check (the owner): its @-mentions are not checked
    exempt: bool = False
    #: the owner's opt-in (config ``owner_raw_keys``): their text is typed as keys
    raw_keys: bool = False
    #: their Telegram @username ("" when they have none)
    username: str = ""
    #: the owner's policy file cannot be used, so this member has no rights for now
    #: (``members.with_rights``): a refusal says so rather than blame their role
    policy_unusable: bool = False

    @property
    def tag(self) -> str:
        """``@username`` when they have one (the label may be a first name or a config
        label such as "Owner"), else ``@label``."""
        if self.username:
            return f"@{self.username}"
        return f"@{self.label}" if self.label and not self.label.startswith("@") else self.label

    @property
    def who(self) -> Who:
        """As the port names them: by ``tag`` (a verdict line, a deny's message)."""
        return Who(self.tag, self.user_id, self.role)

    def rights(self) -> list[str]:
        words = [w for w, ok in (("prompt", self.may_prompt), ("approve", self.may_approve),
                                 ("manage", self.may_manage)) if ok]
        return words or ["read"]


def task_authors(sess: Session) -> set[Any]:
    """Telegram ids of who asked for the session's running task (empty: the terminal)."""
    task = sess.task
    if task is None or task.ended_at is not None:
        return set()
    return {a.get("user_id") for a in task.authors if a.get("user_id") is not None}


def author_label(sess: Session) -> str:
    task = sess.task
    if task is None or not task.authors:
        return N_("the terminal")
    first = task.authors[0]
    return str(first.get("label") or first.get("user_id") or N_("someone"))


def refusal(sender: Sender, what: str, sess: Session | None = None,
            tr: Callable[[str], str] = N_) -> str | None:
    """Why ``sender`` may not do ``what`` (prompt | approve | stop | manage), or None;
    ``tr``: the caller's translator (the chat's ``i18n._``; English without one).

    Approving and stopping another person's task takes an admin (``may_manage``):
    a member's tap never reaches past the task they started themselves.
    """
    if sender.policy_unusable:
        return tr(N_("aipager's safety policy cannot be read right now, so members may do "
                     "nothing here until the owner fixes it."))
    if what == "prompt" and not sender.may_prompt:
        return tr(N_("Your role may not send messages to Claude here."))
    if what == "manage" and not sender.may_manage:
        return tr(N_("Only an admin may do that here."))
    if what == "approve" and not sender.may_approve:
        return tr(N_("Your role may not answer Claude's requests."))
    if what in ("approve", "stop") and not sender.may_manage and sess is not None:
        if sender.user_id not in task_authors(sess):
            return tr(N_("Only the task's author or an admin may do that.") if what == "stop"
                      else N_("Only the task's author or an admin may answer this."))
    return None


__all__ = ["Sender", "author_label", "refusal", "task_authors"]
