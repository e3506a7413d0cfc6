"""Who acts through a client, and what they may do to a session.

The chat and the web page resolve a person to a ``Sender`` (``members.Members``; the
port's ``Person``).  What they may do is decided by the service
(``port.rights.check``); ``refusal`` words the same check for what a surface shows
before anyone asks (a button's note, a view's "refused" line).
"""

from __future__ import annotations

from typing import Callable

from aipager.clients.words import reason
from aipager.port.model import Session
from aipager.port.model import task_authors
from aipager.texts.render import author_label
from aipager.port.results import Declined
from aipager.port.rights import Right, check
from aipager.port.who import Person
from aipager.locales import N_


#: who sent an update, as the access middleware resolved them (one record for every surface)
Sender = Person


def refusal(sender: Sender, what: Right, sess: Session | None = None,
            tr: Callable[[str], str] = N_) -> str | None:
    """Why ``sender`` may not do ``what`` (``port.rights.check``), in words, or None;
    ``tr``: the caller's translator (the chat's ``i18n._``; English without one).  For
    what a surface shows before anyone asks (a button greyed out, a refused note)."""
    why = check(sender, what, task_authors(sess) if sess is not None else None)
    return None if why is None else reason(Declined(why), tr)


__all__ = ["Sender", "author_label", "refusal", "task_authors"]
