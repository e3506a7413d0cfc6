"""The one door a client holds: ask a use case, read the sessions.

``main`` composes the service (``aipager.daemon.service.Service``) over the daemon, or
over a hub's view of its hosts, and hands it to the chat, the page and a host's link as
a ``Port``.  A client never builds a service of its own and never imports the daemon
(an import contract says so): every decision goes through ``ask``, and what a client
shows it reads from the view below.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Protocol, Sequence

from aipager.port.backend import HostView, SessionsView
from aipager.port.model import Session
from aipager.port.commands import Command
from aipager.port.results import Result
from aipager.port.who import Person
from aipager.port.who import Who


class Port(Protocol):
    """Everything a client may ask or read."""

    async def ask(self, command: Command) -> Result:
        """Do what ``command`` asks, if its person may (``port.rights.check``, once)."""
        ...

    @property
    def sessions(self) -> SessionsView:
        """The sessions, read only."""
        ...

    def find(self, name: str) -> Session | None:
        """A session by internal name (``claude-jim``) or label (``jim``)."""
        ...

    def at_trust_dialog(self, sess: Session) -> bool:
        """Whether ``sess`` stops at its folder trust dialog (its screen showed it, or, for
        Claude Code, a folder it does not trust yet)."""
        ...

    def trusted(self) -> list[str]:
        """The folders Claude Code trusts."""
        ...

    def default_folder(self) -> str:
        """Where a session starts when no folder is named."""
        ...

    def person(self, user_id: int | None, label: str, role: str, *,
               raw_keys: bool = False) -> Person:
        """A person with what their ``role`` lets them do (the owner's policy; none when
        it cannot be used); ``raw_keys`` counts only for the owner."""
        ...

    def policy_problem(self) -> str:
        """Why the owner's policy file cannot be used ("" when it can)."""
        ...

    def hosts(self) -> Sequence[HostView]:
        """The machines whose sessions ``sessions`` holds; none for a single machine."""
        ...

    @property
    def env(self) -> Mapping[str, str]:
        """Where everything lives (``aipager.proto.paths``) and the knobs."""
        ...

    @property
    def started_at(self) -> float:
        """When the daemon started (a client skips outputs older than its own start)."""
        ...

    @property
    def stopping(self) -> bool:
        """The daemon shuts down, so its clients stop."""
        ...

    def audit_action(self, action: str, who: Who, **fields: Any) -> None:
        """Record what a person did that is not a use case of its own (a page upload)."""
        ...

    def set_previews(self, on: bool) -> None:
        """Whether the daemon makes diff previews for the client to show."""
        ...

    def add_facts(self, facts: Callable[[], dict[str, Any]]) -> None:
        """A client's own health, for ``aipager status``."""
        ...


__all__ = ["Port"]
