"""How much people outside the team can make the bot do.

A non-member can only send ``/join CODE`` or be told "you are not a member";
both are answers in the team's chat, and a group gets 20 posts a minute.  So:

- each sender has ``TRIES`` wrong codes per ``WINDOW``; after that they are
  locked out for the rest of it: no answer, and not even a right code is taken
  (brute force would otherwise go on unseen; the code stays for its invitee);
- each chat answers strangers at most ``CHAT_REPLIES`` times per ``WINDOW``,
  whoever they are (many accounts share one budget);
- what is silenced is counted, and the count audited at the 1st, 10th, 100th…
  silenced attempt of a window: a flood cannot fill the disk.

Windows are fixed (they start at the first event) and kept in memory only: a
restart forgets them, which gives a stranger a few more tries, no more.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

#: seconds a budget lasts
WINDOW = 600.0
#: wrong invitation codes per sender per window
TRIES = 3
#: answers to strangers per chat per window
CHAT_REPLIES = 5
#: windows remembered before expired ones are swept
SWEEP_AT = 1000


@dataclass
class _Window:
    start: float
    count: int = 0


class Strangers:
    """The budgets above; ``clock`` is monotonic seconds (tests may pass their own)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._windows: dict[tuple[str, int, int], _Window] = {}

    def _window(self, kind: str, chat_id: int, user_id: int = 0) -> _Window:
        now = self.clock()
        key = (kind, chat_id, user_id)
        win = self._windows.get(key)
        if win is None or now - win.start >= WINDOW:
            if len(self._windows) >= SWEEP_AT:
                self._windows = {k: w for k, w in self._windows.items()
                                 if now - w.start < WINDOW}
            win = self._windows[key] = _Window(now)
        return win

    def locked(self, chat_id: int, user_id: int) -> bool:
        """Whether ``user_id`` used up their wrong codes in ``chat_id``."""
        win = self._windows.get(("tries", chat_id, user_id))
        return (win is not None and win.count >= TRIES
                and self.clock() - win.start < WINDOW)

    def failed(self, chat_id: int, user_id: int) -> int:
        """Count one wrong code; returns how many are left (0: locked out from now)."""
        win = self._window("tries", chat_id, user_id)
        win.count += 1
        return max(0, TRIES - win.count)

    def may_reply(self, chat_id: int) -> bool:
        """Take one answer from the chat's budget for strangers; False: stay silent."""
        win = self._window("replies", chat_id)
        if win.count >= CHAT_REPLIES:
            return False
        win.count += 1
        return True

    def silenced(self, chat_id: int) -> int | None:
        """Count one silenced attempt in ``chat_id``; returns the count when it is worth
        an audit record (1, 10, 100…), else None."""
        win = self._window("silenced", chat_id)
        win.count += 1
        n = win.count
        while n % 10 == 0:
            n //= 10
        return win.count if n == 1 else None
