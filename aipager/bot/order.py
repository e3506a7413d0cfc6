"""The chat's order: a chat's messages are handled one after another (``ChatBot._handle``
holds a lock per chat), and a handler that will take long can step aside.

A voice note takes seconds to minutes to transcribe; holding the chat's lock meanwhile kept
every later message of that chat waiting, unseen.  ``step_aside`` lets the next updates go
while the handler goes on: its own update still counts as handled only when it ends (the
update journal, ``inbox``), so a daemon killed meanwhile handles it again at the next start.
"""

from __future__ import annotations

import contextvars
from typing import Callable

#: in a handler's task: what lets the chat's next update go (``step_aside``)
_RELEASE: contextvars.ContextVar[Callable[[], None] | None] = contextvars.ContextVar(
    "aipager_chat_order_release", default=None)


def holding(release: Callable[[], None]) -> None:
    """In the task that handles one of a chat's updates in order: ``release`` lets the next
    one go (idempotent: the task calls it again when it ends)."""
    _RELEASE.set(release)


def step_aside() -> None:
    """The current handler lets its chat's next updates be handled while it goes on.  No-op
    outside an ordered handler."""
    release = _RELEASE.get()
    if release is not None:
        release()


__all__ = ["holding", "step_aside"]
