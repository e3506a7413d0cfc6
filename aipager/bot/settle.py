"""A value published once it has settled: the chat's command menu.

The menu lists the live sessions, in four languages, one ``setMyCommands`` each.  Set on
every change, a hundred sessions starting over four minutes made 184 calls.  ``Settle``
holds a changed value back until it has stayed the same for ``quiet`` seconds, and a
value that keeps changing is still published every ``longest`` seconds, so a steady
trickle of new sessions shows in the menu without a call per session.

Pure: the caller gives the time (``now``); nothing here sleeps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass
class Settle(Generic[T]):
    """``offer(value, now)`` gives the value to publish now, or None.

    Args:
        published: what is shown already (nothing is published while it is offered).
        quiet: seconds a changed value must stay unchanged.
        longest: seconds a change may wait at most, however often it changes.
    """

    published: T
    quiet: float = 10.0
    longest: float = 60.0
    _seen: T | None = field(default=None, init=False)
    #: when the value last changed, and when it first differed from ``published``
    _changed_at: float = field(default=0.0, init=False)
    _pending_since: float | None = field(default=None, init=False)

    def offer(self, value: T, now: float) -> T | None:
        if value == self.published:
            self._pending_since = None  # changed back: nothing owed
            self._seen = value
            return None
        if self._pending_since is None:
            self._pending_since = self._changed_at = now
        elif value != self._seen:
            self._changed_at = now
        self._seen = value
        if now - self._changed_at >= self.quiet or now - self._pending_since >= self.longest:
            self.published, self._pending_since = value, None
            return value
        return None
