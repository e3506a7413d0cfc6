"""Who asks: one record for the chat, the page, voice and a hub's hosts alike."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Who:
    """Who acted, as verdict lines and the audit log name them."""

    #: e.g. ``@alice``
    label: str
    user_id: int | None = None
    role: str = ""


@dataclass(frozen=True)
class Person:
    """A person as their surface resolved them (``clients.members``): who they are and
    what their role lets them do.  ``rights.check`` reads it; nothing else decides."""

    user_id: int | None
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
    #: their message never waits for another person's task to end (the owner's: every
    #: task is theirs to steer)
    never_held: bool = False

    @property
    def tag(self) -> str:
        """``@username`` when they have one (the label may be a first name or a config
        label such as "Owner"), else ``@label``."""
        if self.username:
            return f"@{self.username}"
        return f"@{self.label}" if self.label and not self.label.startswith("@") else self.label

    @property
    def who(self) -> Who:
        """As verdict lines name them: by ``tag``."""
        return Who(self.tag, self.user_id, self.role)

    @property
    def audited(self) -> Who:
        """As audit records name them: label, id, role."""
        return Who(self.label, self.user_id, self.role)

    def rights(self) -> list[str]:
        words = [w for w, ok in (("prompt", self.may_prompt), ("approve", self.may_approve),
                                 ("manage", self.may_manage)) if ok]
        return words or ["read"]


#: who a released message names when a surface asks for its release: nobody, since the
#: daemon kept its author with it (``SendPrompt.queued``); the floor's role
NOBODY = Person(None, "", "user")

__all__ = ["NOBODY", "Person", "Who"]
